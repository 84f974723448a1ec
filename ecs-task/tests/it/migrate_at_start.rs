//! Every `live-ci-task` subcommand migrates the metadb at start, through the
//! connection the module configured: the real binary against an empty database,
//! directly (scripts/pg.sh, TLS verified) and through the RDS Data API (the local
//! cloud's rds-data service on the same PostgreSQL). Each run then stops at a
//! missing input of its own; the schema it left behind is what is checked.

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

/// The subcommands that use the metadb (pr-plan never opens it).
const SUBCOMMANDS: [&str; 2] = ["create-deploy-stack", "terra-run"];

#[tokio::test]
async fn every_subcommand_migrates_a_direct_metadb_at_start() {
    for subcommand in SUBCOMMANDS {
        let (_, url) = fresh_database("mig_direct").await;
        assert!(applied(&url).await.is_empty());
        let out = task(subcommand, "http://127.0.0.1:9", &[("METADB_URL", &url)]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("migrating at start"),
            "{subcommand}: {stderr}"
        );
        assert_eq!(
            applied(&url).await,
            all_versions(),
            "{subcommand}: {stderr}"
        );
    }
}

#[tokio::test]
async fn concurrent_tasks_migrate_once_and_none_fails_on_it() {
    let (_, url) = fresh_database("mig_race").await;
    let runs: Vec<_> = (0..4)
        .map(|i| {
            let url = url.clone();
            std::thread::spawn(move || {
                task(
                    SUBCOMMANDS[i % 2],
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
async fn a_refused_migration_stops_the_task_naming_it() {
    // A server whose certificate the default trust (the RDS bundle) refuses.
    let url = pg_server();
    let base = url.split_once('?').map_or(url.as_str(), |(b, _)| b);
    let out = task("terra-run", "http://127.0.0.1:9", &[("METADB_URL", base)]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("metadb: migrating at start") && stderr.contains("UnknownIssuer"),
        "{stderr}"
    );
}

#[tokio::test]
async fn every_subcommand_migrates_through_the_data_api_at_start() {
    let endpoint = live_ci_testkit::localstack_endpoint().unwrap();
    // The rds-data service runs on scripts/pg.sh's server; start it first.
    let server = pg_server();
    for subcommand in SUBCOMMANDS {
        let id = live_ci_testkit::unique("mig-data-api");
        let database = id.replace('-', "_");
        let cluster =
            live_ci_testkit::data_api::create_cluster(&endpoint, &id, &database, "liveci_master")
                .await
                .unwrap();
        let out = task(
            subcommand,
            &endpoint,
            &[
                ("METADB_CLUSTER_ARN", &cluster.cluster_arn),
                ("METADB_SECRET_ARN", &cluster.secret_arn),
                ("METADB_NAME", &cluster.database),
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("migrating at start"),
            "{subcommand}: {stderr}"
        );
        let url = live_ci_metadb::with_database(&server, &database);
        assert_eq!(
            applied(&url).await,
            all_versions(),
            "{subcommand}: {stderr}"
        );
    }
}
