//! create-deploy-stack migrates the metadb at start and terra-run only checks the
//! schema is current (its restricted login may not migrate), through the
//! connection the module configured: the real binary against an empty database,
//! directly (scripts/pg.sh, TLS verified) and through the RDS Data API (the local
//! cloud's rds-data service on the same PostgreSQL), where create-deploy-stack
//! also sets terra-run's own login and terra-run logs in as it. Each run then
//! stops at a missing input of its own; the schema it left behind is checked.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};

use live_ci_metadb::MIGRATIONS;

fn pg_server() -> String {
    if let Ok(url) = std::env::var("LIVE_CI_PG_URL")
        && !url.is_empty()
    {
        return url;
    }
    let script = live_ci_testkit::repo_root().join("scripts/pg.sh");
    let out = Command::new("bash").arg(script).arg("up").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

async fn fresh_database(prefix: &str) -> (String, String) {
    let server = pg_server();
    let name = live_ci_testkit::unique(prefix).replace('-', "_");
    live_ci_metadb::connect(&server)
        .await
        .unwrap()
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap();
    (name.clone(), live_ci_metadb::with_database(&server, &name))
}

/// The versions recorded in `schema_migrations` (empty when it does not exist).
async fn applied(url: &str) -> Vec<i32> {
    let client = live_ci_metadb::connect(url).await.unwrap();
    let exists: bool = client
        .query_one("SELECT to_regclass('schema_migrations') IS NOT NULL", &[])
        .await
        .unwrap()
        .get(0);
    if !exists {
        return Vec::new();
    }
    client
        .query(
            "SELECT version FROM schema_migrations ORDER BY version",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

fn all_versions() -> Vec<i32> {
    MIGRATIONS.iter().map(|m| m.version as i32).collect()
}

/// Each subcommand's own inputs (checked at start, before the migration),
/// naming nothing that exists: the subcommand fails right after migrating.
fn inputs(subcommand: &str) -> &'static [(&'static str, &'static str)] {
    match subcommand {
        "create-deploy-stack" => &[
            ("LIVE_CI_COMMIT", "0000000"),
            ("TRIGGER_SF_FUNCTION_NAME", "live-ci-trigger-sf"),
            ("MERGE_LOCK_SSM_KEY", "/live-ci/merge-lock"),
            ("ACCOUNT_PARENT_CFG", "[]"),
            ("PLAN_BUCKET", "live-ci-plans"),
        ],
        "terra-run" => &[
            ("LIVE_CI_TASK_TOKEN", "token"),
            ("LIVE_CI_PHASE", "plan"),
            ("LIVE_CI_EXECUTION_ID", "no-such-execution"),
            ("PLAN_BUCKET", "live-ci-plans"),
        ],
        _ => &[
            ("LIVE_CI_PR_NUMBER", "1"),
            ("LIVE_CI_COMMIT", "0000000"),
            ("LIVE_CI_BASE_REF", "main"),
        ],
    }
}

/// The binary with its subcommand's inputs and no more: AWS calls go to
/// `endpoint` (an unreachable one when the test uses none).
fn task(subcommand: &str, endpoint: &str, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_live-ci-task"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_MAX_ATTEMPTS", "1")
        .env("REPO_CLONE_URL", "/nonexistent/repo")
        .envs(inputs(subcommand).iter().copied())
        .arg(subcommand);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// The schema check's failure for a database never migrated, as terra-run
/// reports it (there is no `schema_migrations` yet).
fn never_migrated(stderr: &str) -> bool {
    stderr.contains("metadb: checking the schema at start")
        && stderr.contains("relation \"schema_migrations\" does not exist")
}

#[tokio::test]
async fn create_deploy_stack_migrates_a_direct_metadb_and_terra_run_only_checks_it() {
    let (_, url) = fresh_database("mig_direct").await;
    let out = task("terra-run", "http://127.0.0.1:9", &[("METADB_URL", &url)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(never_migrated(&stderr), "{stderr}");
    assert!(
        applied(&url).await.is_empty(),
        "terra-run migrated: {stderr}"
    );

    let out = task(
        "create-deploy-stack",
        "http://127.0.0.1:9",
        &[("METADB_URL", &url)],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("migrating at start"), "{stderr}");
    assert_eq!(applied(&url).await, all_versions(), "{stderr}");

    let out = task("terra-run", "http://127.0.0.1:9", &[("METADB_URL", &url)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("checking the schema"), "{stderr}");
}

#[tokio::test]
async fn concurrent_migrators_migrate_once_and_none_fails_on_it() {
    let (_, url) = fresh_database("mig_race").await;
    let runs: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || {
                task(
                    "create-deploy-stack",
                    "http://127.0.0.1:9",
                    &[("METADB_URL", &url)],
                )
            })
        })
        .collect();
    for run in runs {
        let out = run.join().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("migrating at start"), "{stderr}");
    }
    // Each version once: the advisory lock queued the later tasks.
    assert_eq!(applied(&url).await, all_versions());
}

/// pr-plan runs a pull request's code and its role cannot reach the metadb
/// (in AWS the Data API would refuse it and fail every PR plan): handed a
/// metadb anyway, it leaves it untouched.
#[tokio::test]
async fn pr_plan_never_opens_the_metadb() {
    let (_, url) = fresh_database("mig_pr_plan").await;
    let out = task("pr-plan", "http://127.0.0.1:9", &[("METADB_URL", &url)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(applied(&url).await.is_empty(), "{stderr}");
    assert!(!stderr.to_lowercase().contains("metadb"), "{stderr}");
}

#[tokio::test]
async fn a_task_without_a_metadb_does_not_fail_on_it() {
    let out = task("pr-plan", "http://127.0.0.1:9", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.to_lowercase().contains("metadb"), "{stderr}");
}

#[tokio::test]
async fn a_refused_connection_stops_the_task_naming_its_step() {
    // A server whose certificate the default trust (the RDS bundle) refuses.
    let url = pg_server();
    let base = url.split_once('?').map_or(url.as_str(), |(b, _)| b);
    for (subcommand, step) in [
        ("create-deploy-stack", "metadb: migrating at start"),
        ("terra-run", "metadb: checking the schema at start"),
    ] {
        let out = task(subcommand, "http://127.0.0.1:9", &[("METADB_URL", base)]);
        assert_eq!(out.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(step) && stderr.contains("UnknownIssuer"),
            "{subcommand}: {stderr}"
        );
    }
}

/// Through the Data API: create-deploy-stack (the master secret) migrates and
/// fills terra-run's empty login secret; terra-run, given that secret only,
/// passes its schema check as that login, and it is that restricted login:
/// once `live_ci_terra_run` may no longer read `schema_migrations`, terra-run's
/// check is refused (the master would still pass).
#[tokio::test]
async fn through_the_data_api_the_migrator_sets_terra_runs_login_and_terra_run_uses_it() {
    let endpoint = live_ci_testkit::localstack_endpoint().unwrap();
    // The rds-data service runs on scripts/pg.sh's server; start it first.
    let server = pg_server();
    let id = live_ci_testkit::unique("login-data-api");
    let database = id.replace('-', "_");
    let cluster =
        live_ci_testkit::data_api::create_cluster(&endpoint, &id, &database, "liveci_master")
            .await
            .unwrap();
    let login_secret = live_ci_testkit::data_api::create_empty_secret(
        &endpoint,
        &format!("{id}/metadb/terra-run"),
    )
    .await
    .unwrap();
    let metadb = |secret: &str| {
        vec![
            ("METADB_CLUSTER_ARN", cluster.cluster_arn.clone()),
            ("METADB_SECRET_ARN", secret.to_string()),
            ("METADB_NAME", cluster.database.clone()),
        ]
    };
    let run = |subcommand: &str, env: Vec<(&'static str, String)>| {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        task(subcommand, &endpoint, &env)
    };

    // terra-run before any migration: refused, naming both versions.
    let out = run("terra-run", metadb(&cluster.secret_arn));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(never_migrated(&stderr), "{stderr}");

    let mut env = metadb(&cluster.secret_arn);
    env.push(("METADB_TERRA_RUN_SECRET_ARN", login_secret.clone()));
    let out = run("create-deploy-stack", env);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("migrating at start"), "{stderr}");
    let url = live_ci_metadb::with_database(&server, &database);
    assert_eq!(applied(&url).await, all_versions(), "{stderr}");
    let stored = live_ci_testkit::data_api::secret_string(&endpoint, &login_secret)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("create-deploy-stack left the login secret empty: {stderr}"));
    let stored: serde_json::Value = serde_json::from_str(&stored).unwrap();
    let login = format!("{database}_terra_run_login");
    assert_eq!(stored["username"], login.as_str());

    let out = run("terra-run", metadb(&login_secret));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("checking the schema"), "{stderr}");
    assert!(!stderr.contains("password authentication"), "{stderr}");

    let admin = live_ci_metadb::connect(&url).await.unwrap();
    admin
        .batch_execute("REVOKE SELECT ON schema_migrations FROM live_ci_terra_run")
        .await
        .unwrap();
    let out = run("terra-run", metadb(&login_secret));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("checking the schema at start")
            && stderr.contains("permission denied for table schema_migrations"),
        "terra-run did not run as {login}: {stderr}"
    );
    admin
        .batch_execute(&format!("DROP OWNED BY {login}; DROP ROLE {login}"))
        .await
        .unwrap();
}
