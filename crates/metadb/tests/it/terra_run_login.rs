//! terra-run's own login (issue 27): the migrator sets it from its secret once,
//! terra-run then connects as that login (a member of `live_ci_terra_run`, so
//! a vote is refused), and terra-run's start refuses a schema behind its own.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;

use live_ci_metadb::{
    LoginCredentials, LoginSecret, MetadbError, TERRA_RUN_ROLE, check_schema,
    provision_terra_run_login, terra_run_login,
};
use live_ci_testkit::pg as support;
use support::TestDb;

/// Secrets Manager's behaviour that matters here: no value until the first
/// put, then the value put.
#[derive(Default)]
struct Secret {
    value: Mutex<Option<LoginCredentials>>,
    puts: Mutex<u32>,
}

impl LoginSecret for Secret {
    async fn read(&self) -> live_ci_metadb::Result<Option<LoginCredentials>> {
        Ok(self.value.lock().unwrap().clone())
    }

    async fn write(&self, credentials: &LoginCredentials) -> live_ci_metadb::Result<()> {
        *self.value.lock().unwrap() = Some(credentials.clone());
        *self.puts.lock().unwrap() += 1;
        Ok(())
    }
}

fn url_as(t: &TestDb, c: &LoginCredentials) -> String {
    let url = t.url.replacen(
        "://postgres@",
        &format!("://{}:{}@", c.username, c.password),
        1,
    );
    assert_ne!(url, t.url, "the test server's URL names user postgres");
    url
}

async fn drop_login(t: TestDb, login: &str) {
    t.drop_db().await;
    let admin = live_ci_metadb::connect(&support::server_url())
        .await
        .unwrap();
    admin
        .batch_execute(&format!("DROP ROLE IF EXISTS {login}"))
        .await
        .unwrap();
}

#[tokio::test]
async fn the_migrator_sets_terra_runs_login_once_and_terra_run_connects_as_it() {
    let t = TestDb::new().await;
    let master = t.metadb(2).await;
    let secret = Secret::default();

    let login = provision_terra_run_login(master.sql(), &secret, &t.name)
        .await
        .unwrap();
    assert_eq!(login, format!("{}_terra_run_login", t.name));
    let stored = secret.value.lock().unwrap().clone().unwrap();
    assert_eq!(stored.username, login);
    assert!(stored.password.len() >= 32, "a generated password");

    // The server keeps a SCRAM verifier, never the password.
    let admin = live_ci_metadb::connect(&t.url).await.unwrap();
    let row = admin
        .query_one(
            "SELECT rolpassword, rolcanlogin, pg_has_role(rolname, 'live_ci_terra_run', 'member') \
             FROM pg_authid WHERE rolname = $1",
            &[&login],
        )
        .await
        .unwrap();
    let verifier: String = row.get(0);
    assert!(verifier.starts_with("SCRAM-SHA-256$"), "{verifier}");
    assert!(!verifier.contains(&stored.password));
    assert!(row.get::<_, bool>(1), "the login can log in");
    assert!(
        row.get::<_, bool>(2),
        "the login is a member of live_ci_terra_run"
    );

    // terra-run, with the secret's credentials: its own login, restricted.
    let job = live_ci_metadb::connect(&url_as(&t, &stored)).await.unwrap();
    let who: String = job
        .query_one("SELECT current_user::text", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(who, login);
    check_schema(&live_ci_metadb::PgSql::connect(&url_as(&t, &stored), 1).unwrap())
        .await
        .expect("terra-run's login reads the schema version");
    let vote = job
        .batch_execute("DELETE FROM votes")
        .await
        .expect_err("terra-run's login may not touch votes");
    assert!(
        vote.as_db_error()
            .unwrap()
            .message()
            .contains("permission denied"),
        "{vote}"
    );

    // A second migrator start never rotates it: the running login keeps working.
    provision_terra_run_login(master.sql(), &secret, &t.name)
        .await
        .unwrap();
    assert_eq!(*secret.puts.lock().unwrap(), 1, "the password is put once");
    assert_eq!(secret.value.lock().unwrap().clone().unwrap(), stored);
    let again = live_ci_metadb::connect(&url_as(&t, &stored)).await.unwrap();
    let who: String = again
        .query_one("SELECT current_user::text", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(who, login);
    drop(job);
    drop(again);
    drop(admin);
    drop_login(t, &login).await;
}

#[tokio::test]
async fn a_secret_naming_another_user_is_refused_and_nothing_is_created() {
    let t = TestDb::new().await;
    let master = t.metadb(2).await;
    let secret = Secret::default();
    *secret.value.lock().unwrap() = Some(LoginCredentials {
        username: "postgres".into(),
        password: "x".into(),
    });
    let e = provision_terra_run_login(master.sql(), &secret, &t.name)
        .await
        .unwrap_err();
    assert!(matches!(e, MetadbError::Login { .. }), "{e}");
    assert!(e.to_string().contains("\"postgres\""), "{e}");
    let admin = live_ci_metadb::connect(&t.url).await.unwrap();
    let n: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_roles WHERE rolname = $1",
            &[&format!("{}_terra_run_login", t.name)],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 0);
    drop(admin);
    t.drop_db().await;
}

/// The module's default `metadb_name` is `live_ci`: its login must not be the
/// NOLOGIN group role `live_ci_terra_run` itself (PostgreSQL refuses granting
/// a role to itself, and the group would become a login).
#[tokio::test]
async fn the_default_database_names_login_is_apart_from_the_group_role() {
    let t = TestDb::new().await;
    let master = t.metadb(2).await;
    let secret = Secret::default();
    let login = provision_terra_run_login(master.sql(), &secret, "live_ci")
        .await
        .unwrap();
    assert_ne!(login, TERRA_RUN_ROLE);
    let admin = live_ci_metadb::connect(&t.url).await.unwrap();
    let group_logs_in: bool = admin
        .query_one(
            "SELECT rolcanlogin FROM pg_roles WHERE rolname = $1",
            &[&TERRA_RUN_ROLE],
        )
        .await
        .unwrap()
        .get(0);
    assert!(!group_logs_in, "{TERRA_RUN_ROLE} stays NOLOGIN");
    drop(admin);
    drop_login(t, &login).await;
}

#[test]
fn the_login_name_is_a_checked_identifier() {
    assert_eq!(
        terra_run_login("live_ci").unwrap(),
        "live_ci_terra_run_login"
    );
    assert_eq!(terra_run_login(&"a".repeat(47)).unwrap().len(), 63);
    for bad in [
        "Live",
        "a-b",
        "a\"; DROP ROLE x; --",
        "",
        "9a",
        &"a".repeat(48),
    ] {
        let e = terra_run_login(bad).unwrap_err();
        assert!(e.to_string().contains(&format!("{bad:?}")), "{e}");
    }
}

#[tokio::test]
async fn terra_runs_schema_check_names_expected_and_found_when_behind() {
    let t = TestDb::new().await;
    let master = t.metadb(2).await;
    check_schema(master.sql()).await.unwrap();
    let latest = live_ci_metadb::MIGRATIONS.last().unwrap().version;
    // Versions increase but need not be contiguous (0018/0019 belong to
    // other branches while 0020 is merged first).
    let before = live_ci_metadb::MIGRATIONS
        .iter()
        .rev()
        .nth(1)
        .unwrap()
        .version;
    let admin = live_ci_metadb::connect(&t.url).await.unwrap();
    admin
        .execute(
            "DELETE FROM schema_migrations WHERE version = $1",
            &[&i32::try_from(latest).unwrap()],
        )
        .await
        .unwrap();
    let e = check_schema(master.sql()).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "metadb schema is at migration {before}, this binary needs {latest}: not migrated yet"
        )
    );
    drop(admin);
    t.drop_db().await;
}
