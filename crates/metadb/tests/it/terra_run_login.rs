//! terra-run's own login (issue 27): the migrator sets it from its secret once,
//! terra-run then connects as that login (a member of `live_ci_terra_run`, so
//! a vote is refused), and terra-run's start refuses a schema behind its own.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;

use live_ci_metadb::{
    LoginCredentials, LoginSecret, MetadbError, TERRA_RUN_ROLE, check_schema, database_of_url,
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

    let login = provision_terra_run_login(master.sql(), &secret, &t.name, None)
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
    provision_terra_run_login(master.sql(), &secret, &t.name, None)
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
        url: None,
    });
    let e = provision_terra_run_login(master.sql(), &secret, &t.name, None)
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
    let login = provision_terra_run_login(master.sql(), &secret, "live_ci", None)
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

/// Direct connections (`metadb_connection = "direct"`): the migrator, on the
/// master URL, also stores the login's own URL in the secret (the `url` key
/// ECS injects into terra-run as `METADB_URL`): same server, database and
/// parameters, the login's user and password, never the master's. A secret
/// stored by the Data API mode gains the URL once, keeping its password.
#[tokio::test]
async fn through_a_direct_connection_the_secret_holds_the_logins_own_url() {
    let t = TestDb::new().await;
    let master = t.metadb(2).await;
    // The test server's URL carries its TLS parameters (sslmode, sslrootcert).
    let master_url = t.url.clone();
    let master_query = url::Url::parse(&master_url)
        .unwrap()
        .query()
        .map(str::to_string);
    assert!(
        master_query
            .as_deref()
            .is_some_and(|q| q.contains("sslmode=")),
        "{master_query:?}"
    );
    assert_eq!(database_of_url(&master_url).unwrap(), t.name);

    // First as the Data API mode leaves it: a password and no URL.
    let secret = Secret::default();
    provision_terra_run_login(master.sql(), &secret, &t.name, None)
        .await
        .unwrap();
    let before = secret.value.lock().unwrap().clone().unwrap();
    assert_eq!(before.url, None);

    let login = provision_terra_run_login(master.sql(), &secret, &t.name, Some(&master_url))
        .await
        .unwrap();
    let stored = secret.value.lock().unwrap().clone().unwrap();
    assert_eq!(stored.password, before.password, "the password is kept");
    let url = stored.url.clone().expect("the login's URL is stored");
    let parsed = url::Url::parse(&url).unwrap();
    assert_eq!(parsed.username(), login);
    assert_eq!(parsed.password(), Some(stored.password.as_str()));
    assert_eq!(parsed.path(), format!("/{}", t.name));
    assert_eq!(
        parsed.query(),
        master_query.as_deref(),
        "the same TLS parameters"
    );
    assert!(!url.contains("postgres@"), "never the master's user: {url}");
    assert!(!format!("{stored:?}").contains(&stored.password));
    assert!(!format!("{stored:?}").contains(&url));

    // terra-run, given only that URL, is its own restricted login.
    let job = live_ci_metadb::connect(&url).await.unwrap();
    let who: String = job
        .query_one("SELECT current_user::text", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(who, login);
    job.batch_execute("DELETE FROM votes")
        .await
        .expect_err("terra-run's login may not touch votes");

    // Unchanged on the next start: nothing is written.
    provision_terra_run_login(master.sql(), &secret, &t.name, Some(&master_url))
        .await
        .unwrap();
    assert_eq!(*secret.puts.lock().unwrap(), 2, "one put per change");

    // A URL without a database names no login, and the error never quotes it.
    let e = database_of_url("postgres://postgres:hunter2@db:5432").unwrap_err();
    assert!(e.to_string().contains("names no database"), "{e}");
    let e = database_of_url("not a url with hunter2").unwrap_err();
    assert!(!e.to_string().contains("hunter2"), "{e}");
    drop(job);
    drop_login(t, &login).await;
}

/// The drift job's login (issue 32 item 4) is provisioned by the same code
/// with its own role: named `<db>_drift_login`, a member of `live_ci_drift`
/// and not of `live_ci_terra_run`; connected as it, the job checks the
/// schema, records a drift check, and may not touch runs or the merge
/// lock's tables. Its URL goes into its secret for direct connections.
#[tokio::test]
async fn the_migrator_sets_the_drift_login_with_the_drift_role_only() {
    use live_ci_core::port::DriftStore;
    use live_ci_metadb::{DRIFT_ROLE, LoginRole, login_name, provision_login};
    let t = TestDb::new().await;
    let master = t.metadb(2).await;
    let secret = Secret::default();
    let login = provision_login(
        master.sql(),
        &secret,
        &t.name,
        LoginRole::Drift,
        Some(&t.url),
    )
    .await
    .unwrap();
    assert_eq!(login, format!("{}_drift_login", t.name));
    assert_eq!(login_name(&t.name, LoginRole::Drift).unwrap(), login);
    let stored = secret.value.lock().unwrap().clone().unwrap();
    assert_eq!(stored.username, login);
    assert_eq!(stored.url.as_deref(), Some(url_as(&t, &stored).as_str()));

    let admin = live_ci_metadb::connect(&t.url).await.unwrap();
    let row = admin
        .query_one(
            "SELECT pg_has_role(rolname, $2, 'member'), pg_has_role(rolname, $3, 'member') \
             FROM pg_roles WHERE rolname = $1",
            &[&login, &DRIFT_ROLE, &TERRA_RUN_ROLE],
        )
        .await
        .unwrap();
    assert_eq!(
        (row.get::<_, bool>(0), row.get::<_, bool>(1)),
        (true, false),
        "a member of live_ci_drift only"
    );

    let url = stored.url.clone().unwrap();
    check_schema(&live_ci_metadb::PgSql::connect(&url, 1).unwrap())
        .await
        .expect("the drift login reads the schema version");
    let store = live_ci_metadb::PgMetadb::connect(&url, 1).unwrap();
    let check = store.record_drift_check("abc1234", &[]).await.unwrap();
    assert!(check > 0);
    let job = live_ci_metadb::connect(&url).await.unwrap();
    for forbidden in ["DELETE FROM runs", "DELETE FROM votes"] {
        let e = job
            .batch_execute(forbidden)
            .await
            .expect_err("the drift login may not touch a deploy's tables");
        assert!(
            e.as_db_error()
                .unwrap()
                .message()
                .contains("permission denied"),
            "{forbidden}: {e}"
        );
    }
    drop(job);
    drop(store);
    drop(admin);
    drop(master);
    drop_login(t, &login).await;
}
