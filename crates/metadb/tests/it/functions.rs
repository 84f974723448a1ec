//! The SQL functions' files (issue 33 item 6) against a real PostgreSQL
//! (scripts/pg.sh): every `live_ci_*` function in a migrated database is one
//! file's, a database migrated before the files gets their bodies, a repeat
//! costs one read, a changed set is applied once and never downgraded, and
//! terra-run's schema check names a stale set.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use live_ci_metadb::sql::Params;
use live_ci_metadb::sql::statements::SCHEMA_STATE;
use live_ci_metadb::sql::text::split_statements;
use live_ci_metadb::{
    FUNCTIONS, Function, FunctionSet, MIGRATIONS, Migrated, PgSql, Result, Sql, SqlTx,
    check_schema, check_schema_with, migrate_with,
};
use live_ci_testkit::pg::TestDb;

/// Every statement sent through it, and whether a transaction was begun:
/// the Sql port as the migrator sees it.
#[derive(Clone)]
struct Recording<S> {
    inner: S,
    sent: Arc<Mutex<Vec<String>>>,
}

struct RecordingTx<T> {
    inner: T,
    sent: Arc<Mutex<Vec<String>>>,
}

impl<S: Sql> Recording<S> {
    fn new(inner: S) -> Self {
        Recording {
            inner,
            sent: Arc::default(),
        }
    }

    fn sent(&self) -> Vec<String> {
        self.sent.lock().unwrap().clone()
    }
}

impl<S: Sql> Sql for Recording<S> {
    type Tx = RecordingTx<S::Tx>;

    async fn query(&self, sql: &str, params: Params<'_>) -> Result<Vec<String>> {
        self.sent.lock().unwrap().push(sql.to_string());
        self.inner.query(sql, params).await
    }

    async fn execute(&self, sql: &str, params: Params<'_>) -> Result<u64> {
        self.sent.lock().unwrap().push(sql.to_string());
        self.inner.execute(sql, params).await
    }

    async fn begin(&self) -> Result<Self::Tx> {
        self.sent.lock().unwrap().push("BEGIN".into());
        Ok(RecordingTx {
            inner: self.inner.begin().await?,
            sent: self.sent.clone(),
        })
    }
}

impl<T: SqlTx> SqlTx for RecordingTx<T> {
    async fn query(&mut self, sql: &str, params: Params<'_>) -> Result<Vec<String>> {
        self.sent.lock().unwrap().push(sql.to_string());
        self.inner.query(sql, params).await
    }

    async fn execute(&mut self, sql: &str, params: Params<'_>) -> Result<u64> {
        self.sent.lock().unwrap().push(sql.to_string());
        self.inner.execute(sql, params).await
    }

    async fn commit(self) -> Result<()> {
        self.sent.lock().unwrap().push("COMMIT".into());
        self.inner.commit().await
    }

    async fn rollback(self) -> Result<()> {
        self.sent.lock().unwrap().push("ROLLBACK".into());
        self.inner.rollback().await
    }
}

async fn rows(sql: &PgSql, statement: &str) -> Vec<String> {
    sql.query(statement, &[]).await.unwrap()
}

/// Every `live_ci_*` function of the public schema, once per signature.
async fn functions_in(sql: &PgSql) -> Vec<String> {
    rows(
        sql,
        "SELECT p.proname::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
         WHERE n.nspname = 'public' AND p.proname LIKE 'live\\_ci\\_%' ORDER BY 1",
    )
    .await
}

/// The body PostgreSQL holds for `name` (its only signature).
async fn body_in(sql: &PgSql, name: &str) -> String {
    let found = sql
        .query(
            "SELECT p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
             WHERE n.nspname = 'public' AND p.proname = :name",
            &[("name", live_ci_metadb::Param::text(name))],
        )
        .await
        .unwrap();
    assert_eq!(found.len(), 1, "{name}: {found:?}");
    found[0].clone()
}

/// The dollar-quoted body of a function file (what `prosrc` holds).
fn body_of(file: &str) -> String {
    let start = file.find("$$").unwrap() + 2;
    let end = file.rfind("$$").unwrap();
    file[start..end].to_string()
}

/// The rows of `schema_functions`, `<revision> <hash> <migration>`, oldest first.
async fn recorded(sql: &PgSql) -> Vec<String> {
    rows(
        sql,
        "SELECT revision::text || ' ' || hash || ' ' || migration::text
         FROM schema_functions ORDER BY revision",
    )
    .await
}

fn leak<T>(v: Vec<T>) -> &'static [T] {
    Box::leak(v.into_boxed_slice())
}

/// This binary's files with `live_ci_ms`'s body changed (same signature and
/// result), at the next revision.
fn altered() -> FunctionSet {
    let mut functions = FUNCTIONS.to_vec();
    let ms = functions
        .iter_mut()
        .find(|f| f.name == "live_ci_ms")
        .unwrap();
    assert!(ms.sql.contains("* 1000)::bigint $$"));
    let sql = ms
        .sql
        .replace("* 1000)::bigint $$", "* 1000)::bigint /* altered */ $$");
    *ms = Function {
        name: "live_ci_ms",
        sql: Box::leak(sql.into_boxed_str()),
    };
    FunctionSet {
        revision: FunctionSet::current().revision + 1,
        functions: leak(functions),
    }
}

fn latest_migration() -> u32 {
    MIGRATIONS.last().unwrap().version
}

/// The catch for a function defined only in a migration, or a signature a
/// migration forgot to drop: every `live_ci_*` function of a migrated
/// database is exactly one file's, with that file's body, once.
#[tokio::test]
async fn a_fresh_database_has_each_function_of_its_file_once_and_no_other() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let mut files: Vec<String> = FUNCTIONS.iter().map(|f| f.name.to_string()).collect();
    files.sort();
    assert_eq!(functions_in(db.sql()).await, files);
    for f in FUNCTIONS {
        assert_eq!(
            body_in(db.sql(), f.name).await,
            body_of(f.sql),
            "{}",
            f.name
        );
    }
    let current = FunctionSet::current();
    assert_eq!(
        recorded(db.sql()).await,
        [format!(
            "{} {} {}",
            current.revision,
            current.hash(),
            latest_migration()
        )]
    );
    t.drop_db().await;
}

/// A database an older release migrated (up to 0021, no function files, an
/// older body of one function) gets 0022 and every file's body in one start.
#[tokio::test]
async fn a_database_migrated_before_the_files_gets_their_bodies() {
    let t = TestDb::new().await;
    let client = crate::approvals::migrated_up_to(&t, "0021_vote_identity").await;
    // live_ci_approval_json as migration 0007 defined it (before `delivery`).
    let old = split_statements(MIGRATIONS[6].sql)
        .into_iter()
        .find(|s| s.contains("FUNCTION live_ci_approval_json"))
        .unwrap();
    client.batch_execute(&old).await.unwrap();
    let sql = PgSql::connect(&t.url, 2).unwrap();
    let file = FUNCTIONS
        .iter()
        .find(|f| f.name == "live_ci_approval_json")
        .unwrap();
    assert_ne!(body_in(&sql, file.name).await, body_of(file.sql));

    let migrated = migrate_with(&sql, &FunctionSet::current()).await.unwrap();
    assert_eq!(
        migrated,
        Migrated {
            versions: vec![22],
            functions: Some(FunctionSet::current().revision),
        }
    );
    assert_eq!(body_in(&sql, file.name).await, body_of(file.sql));
    assert_eq!(recorded(&sql).await.len(), 1);
    check_schema(&sql).await.unwrap();
    drop(client);
    t.drop_db().await;
}

/// Tasks starting together: a current schema and function set is one read,
/// no transaction, no advisory lock.
#[tokio::test]
async fn a_repeat_is_one_read_and_applies_nothing() {
    let t = TestDb::new().await;
    t.metadb(1).await;
    let sql = Recording::new(PgSql::connect(&t.url, 1).unwrap());
    let migrated = migrate_with(&sql, &FunctionSet::current()).await.unwrap();
    assert_eq!(migrated, Migrated::default());
    assert_eq!(sql.sent(), [SCHEMA_STATE]);
    t.drop_db().await;
}

/// A changed function file reaches a deployed database once; the binary
/// with the older set afterwards neither re-applies its bodies nor fails,
/// and the same revision under another hash is refused, naming both.
#[tokio::test]
async fn a_changed_set_is_applied_once_and_never_downgraded() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let current = FunctionSet::current();
    let altered = altered();
    let migrated = migrate_with(db.sql(), &altered).await.unwrap();
    assert_eq!(
        migrated,
        Migrated {
            versions: vec![],
            functions: Some(altered.revision),
        }
    );
    assert!(
        body_in(db.sql(), "live_ci_ms")
            .await
            .contains("/* altered */")
    );
    assert_eq!(
        recorded(db.sql()).await,
        [
            format!(
                "{} {} {}",
                current.revision,
                current.hash(),
                latest_migration()
            ),
            format!(
                "{} {} {}",
                altered.revision,
                altered.hash(),
                latest_migration()
            ),
        ]
    );
    // Applied once: the same set again is the one read.
    let sql = Recording::new(db.sql().clone());
    assert_eq!(
        migrate_with(&sql, &altered).await.unwrap(),
        Migrated::default()
    );
    assert_eq!(sql.sent(), [SCHEMA_STATE]);

    // The older binary (a rolling deploy's last old start): nothing applied.
    let sql = Recording::new(db.sql().clone());
    assert_eq!(
        migrate_with(&sql, &current).await.unwrap(),
        Migrated::default()
    );
    assert_eq!(sql.sent(), [SCHEMA_STATE]);
    assert!(
        body_in(db.sql(), "live_ci_ms")
            .await
            .contains("/* altered */")
    );
    check_schema(db.sql()).await.unwrap();

    // Another build claiming the altered set's revision with other files.
    let impostor = FunctionSet {
        revision: altered.revision,
        functions: FUNCTIONS,
    };
    let expected = format!(
        "metadb functions are revision {r} (hash {:?}), this binary has revision {r} (hash {:?}): two builds claim one revision",
        altered.hash(),
        impostor.hash(),
        r = altered.revision
    );
    let e = migrate_with(db.sql(), &impostor).await.unwrap_err();
    assert_eq!(e.to_string(), expected);
    let e = check_schema_with(db.sql(), &impostor).await.unwrap_err();
    assert_eq!(e.to_string(), expected);
    assert!(
        body_in(db.sql(), "live_ci_ms")
            .await
            .contains("/* altered */")
    );
    t.drop_db().await;
}

/// Migrators starting together with a new set: all succeed (they queue on
/// the advisory lock), exactly one applies it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_migrators_apply_a_new_set_once() {
    let t = TestDb::new().await;
    let db = t.metadb(8).await;
    let altered = altered();
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let sql = db.sql().clone();
        tasks.push(tokio::spawn(
            async move { migrate_with(&sql, &altered).await },
        ));
    }
    let mut applied = Vec::new();
    for task in tasks {
        applied.push(task.await.unwrap().unwrap().functions);
    }
    assert_eq!(
        applied
            .iter()
            .filter(|a| **a == Some(altered.revision))
            .count(),
        1,
        "{applied:?}"
    );
    assert_eq!(
        applied.iter().filter(|a| a.is_none()).count(),
        5,
        "{applied:?}"
    );
    assert_eq!(recorded(db.sql()).await.len(), 2);
    t.drop_db().await;
}

/// terra-run and drift do not migrate: a binary whose set the database has
/// not got yet fails at start, naming both sets.
#[tokio::test]
async fn the_schema_check_refuses_functions_behind_the_binary_naming_both() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    check_schema(db.sql()).await.unwrap();
    let current = FunctionSet::current();
    let altered = altered();
    let e = check_schema_with(db.sql(), &altered).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "metadb functions are at revision {} (hash {:?}), this binary needs revision {} (hash {:?}): not migrated yet",
            current.revision,
            current.hash(),
            altered.revision,
            altered.hash()
        )
    );
    db.sql()
        .execute("DELETE FROM schema_functions", &[])
        .await
        .unwrap();
    let e = check_schema(db.sql()).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "metadb functions are at revision 0 (none recorded), this binary needs revision {} (hash {:?}): not migrated yet",
            current.revision,
            current.hash()
        )
    );
    t.drop_db().await;
}
