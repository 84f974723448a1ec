//! Versioned migrations, embedded in the binary and applied in one transaction
//! under an advisory lock: concurrent migrators queue, and a repeat applies
//! nothing. After them, in the same transaction, the SQL functions' current
//! definitions ([`crate::functions`]) when the database's recorded set is
//! older than the binary's. Every task migrates at start, so a current schema
//! is answered by one read outside any transaction: tasks starting together
//! do not queue on the lock.

use crate::error::{MetadbError, Result};
use crate::functions::{AppliedFunctions, FunctionSet, Verdict};
use crate::sql::statements::{
    APPLIED_FUNCTIONS, APPLIED_MIGRATIONS, CREATE_SCHEMA_MIGRATIONS, MIGRATION_LOCK,
    RECORD_FUNCTIONS, RECORD_MIGRATION, SCHEMA_STATE,
};
use crate::sql::text::split_statements;
use crate::sql::{Param, Sql, SqlTx};

/// One migration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migration {
    /// Its number, recorded in `schema_migrations` once applied.
    pub version: u32,
    /// Its file name without `.sql` (`0001_metadb`).
    pub name: &'static str,
    /// The file's SQL, compiled in.
    pub sql: &'static str,
}

/// Every migration, in version order.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "0001_metadb",
        sql: include_str!("../migrations/0001_metadb.sql"),
    },
    Migration {
        version: 2,
        name: "0002_approvals",
        sql: include_str!("../migrations/0002_approvals.sql"),
    },
    Migration {
        version: 3,
        name: "0003_trust",
        sql: include_str!("../migrations/0003_trust.sql"),
    },
    Migration {
        version: 4,
        name: "0004_trunk_order",
        sql: include_str!("../migrations/0004_trunk_order.sql"),
    },
    Migration {
        version: 5,
        name: "0005_operator",
        sql: include_str!("../migrations/0005_operator.sql"),
    },
    Migration {
        version: 6,
        name: "0006_token_cipher",
        sql: include_str!("../migrations/0006_token_cipher.sql"),
    },
    Migration {
        version: 7,
        name: "0007_plan_summary",
        sql: include_str!("../migrations/0007_plan_summary.sql"),
    },
    Migration {
        version: 8,
        name: "0008_trunk_sweep",
        sql: include_str!("../migrations/0008_trunk_sweep.sql"),
    },
    Migration {
        version: 9,
        name: "0009_delivery_outcome",
        sql: include_str!("../migrations/0009_delivery_outcome.sql"),
    },
    Migration {
        version: 10,
        name: "0010_settle",
        sql: include_str!("../migrations/0010_settle.sql"),
    },
    Migration {
        version: 11,
        name: "0011_checkout_cache",
        sql: include_str!("../migrations/0011_checkout_cache.sql"),
    },
    Migration {
        version: 12,
        name: "0012_vote",
        sql: include_str!("../migrations/0012_vote.sql"),
    },
    Migration {
        version: 13,
        name: "0013_deliveries",
        sql: include_str!("../migrations/0013_deliveries.sql"),
    },
    Migration {
        version: 14,
        name: "0014_plan_json",
        sql: include_str!("../migrations/0014_plan_json.sql"),
    },
    Migration {
        version: 15,
        name: "0015_job_roles",
        sql: include_str!("../migrations/0015_job_roles.sql"),
    },
    Migration {
        version: 16,
        name: "0016_deploy_comment",
        sql: include_str!("../migrations/0016_deploy_comment.sql"),
    },
    Migration {
        version: 17,
        name: "0017_account_pacing",
        sql: include_str!("../migrations/0017_account_pacing.sql"),
    },
    Migration {
        version: 18,
        name: "0018_vote_channel",
        sql: include_str!("../migrations/0018_vote_channel.sql"),
    },
    Migration {
        version: 19,
        name: "0019_policy_override",
        sql: include_str!("../migrations/0019_policy_override.sql"),
    },
    Migration {
        version: 20,
        name: "0020_drift",
        sql: include_str!("../migrations/0020_drift.sql"),
    },
    Migration {
        version: 21,
        name: "0021_vote_identity",
        sql: include_str!("../migrations/0021_vote_identity.sql"),
    },
    Migration {
        version: 22,
        name: "0022_schema_functions",
        sql: include_str!("../migrations/0022_schema_functions.sql"),
    },
];

/// What one [`migrate_with`] applied.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Migrated {
    /// The versions of the migrations applied, in order.
    pub versions: Vec<u32>,
    /// The function revision applied, if the database's was older.
    pub functions: Option<u32>,
}

/// Applies the migrations the database lacks, then this binary's functions
/// when the database's are older; returns the migrations' versions.
pub async fn migrate<S: Sql>(sql: &S) -> Result<Vec<u32>> {
    Ok(migrate_with(sql, &FunctionSet::current()).await?.versions)
}

/// [`migrate`] with `functions` as the binary's function set (tests pass
/// an altered one).
pub async fn migrate_with<S: Sql>(sql: &S, functions: &FunctionSet) -> Result<Migrated> {
    if schema_is_current(sql, functions).await {
        return Ok(Migrated::default());
    }
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut tx = sql.begin().await?;
        match apply(&mut tx, functions).await {
            Ok(applied) => match tx.commit().await {
                Ok(()) => return Ok(applied),
                Err(e) if e.is_retryable() && attempt < 3 => continue,
                Err(e) => return Err(e),
            },
            Err(e) => {
                let _ = tx.rollback().await;
                if e.is_retryable() && attempt < 3 {
                    continue;
                }
                return Err(e);
            }
        }
    }
}

/// The applied migrations' versions and the newest function set recorded,
/// from [`SCHEMA_STATE`]'s rows.
fn schema_state(rows: &[String]) -> (Vec<u32>, Option<AppliedFunctions>) {
    let mut versions = Vec::new();
    let mut functions = None;
    for row in rows {
        match row.strip_prefix("functions ") {
            Some(set) => functions = AppliedFunctions::parse(set),
            None => versions.extend(row.parse::<u32>().ok()),
        }
    }
    (versions, functions)
}

/// Whether every migration is recorded and the functions need nothing, read
/// with one statement. Versions and function sets are recorded in the
/// transaction that applies them, so a listed one is complete. Any error (a
/// fresh database has no `schema_migrations`, one before 0022 no
/// `schema_functions`) means "not known current": the locked path decides,
/// and reports real errors; so does a function set in conflict.
async fn schema_is_current<S: Sql>(sql: &S, functions: &FunctionSet) -> bool {
    match sql.query(SCHEMA_STATE, &[]).await {
        Ok(rows) => {
            let (applied, set) = schema_state(&rows);
            MIGRATIONS.iter().all(|m| applied.contains(&m.version))
                && matches!(
                    functions.against(set.as_ref()),
                    Verdict::Current | Verdict::Newer
                )
        }
        Err(_) => false,
    }
}

async fn apply<T: SqlTx>(tx: &mut T, functions: &FunctionSet) -> Result<Migrated> {
    tx.query(MIGRATION_LOCK, &[]).await?;
    tx.execute(CREATE_SCHEMA_MIGRATIONS, &[]).await?;
    let applied: Vec<u32> = tx
        .query(APPLIED_MIGRATIONS, &[])
        .await?
        .iter()
        .filter_map(|v| v.parse().ok())
        .collect();
    let mut done = Vec::new();
    for m in MIGRATIONS.iter().filter(|m| !applied.contains(&m.version)) {
        for statement in split_statements(m.sql) {
            tx.execute(&statement, &[])
                .await
                .map_err(|e| MetadbError::Migration {
                    version: m.version,
                    name: m.name.to_string(),
                    message: e.to_string(),
                })?;
        }
        tx.execute(
            RECORD_MIGRATION,
            &[
                ("version", Param::Int(i64::from(m.version))),
                ("name", Param::text(m.name)),
            ],
        )
        .await?;
        done.push(m.version);
    }
    let functions = apply_functions(tx, functions).await?;
    Ok(Migrated {
        versions: done,
        functions,
    })
}

/// The function step, under the migrations' lock and after them: applies
/// every file of `set` when the database's recorded set is older (or none),
/// and records it. A newer set is left alone; the same revision with another
/// hash is refused.
async fn apply_functions<T: SqlTx>(tx: &mut T, set: &FunctionSet) -> Result<Option<u32>> {
    let applied = applied_functions(tx.query(APPLIED_FUNCTIONS, &[]).await?);
    match set.against(applied.as_ref()) {
        Verdict::Current | Verdict::Newer => return Ok(None),
        Verdict::Conflict => return Err(conflict(set, applied.as_ref())),
        Verdict::Behind => {}
    }
    for f in set.functions {
        for statement in split_statements(f.sql) {
            tx.execute(&statement, &[])
                .await
                .map_err(|e| MetadbError::Function {
                    name: f.name.to_string(),
                    message: e.to_string(),
                })?;
        }
    }
    let migration = MIGRATIONS.last().map_or(0, |m| m.version);
    tx.execute(
        RECORD_FUNCTIONS,
        &[
            ("revision", Param::Int(i64::from(set.revision))),
            ("hash", Param::text(set.hash())),
            ("migration", Param::Int(i64::from(migration))),
        ],
    )
    .await?;
    Ok(Some(set.revision))
}

/// [`APPLIED_FUNCTIONS`]'s row, if any.
pub(crate) fn applied_functions(rows: Vec<String>) -> Option<AppliedFunctions> {
    rows.first().and_then(|row| AppliedFunctions::parse(row))
}

/// The error of a database whose function set has this binary's revision
/// under another hash.
pub(crate) fn conflict(set: &FunctionSet, applied: Option<&AppliedFunctions>) -> MetadbError {
    MetadbError::FunctionsConflict {
        expected: set.describe(),
        found: AppliedFunctions::describe(applied),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_numbered_in_order_and_split_cleanly() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(
                m.version as usize,
                i + 1,
                "{}: numbered without gaps",
                m.name
            );
            assert!(m.name.starts_with(&format!("{:04}_", m.version)));
            let statements = split_statements(m.sql);
            assert!(!statements.is_empty());
            // No statement may look like it takes a parameter.
            for s in &statements {
                assert!(crate::sql::text::parameter_names(s).is_empty(), "{s}");
            }
        }
    }
}
