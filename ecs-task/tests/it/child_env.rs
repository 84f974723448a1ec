//! The plan child gets only what terraform needs: the real `live-ci-task`
//! binary (terra-run and pr-plan) runs with the task's secrets in its own
//! environment — the GitHub token parameter, the metadb URL, the task token,
//! the accounts JSON, container credentials, its own AWS keys — and a plan
//! command that dumps its environment; none of those names or values may be
//! in the dump, and the role's temporary credentials must be. PostgreSQL, and
//! LocalStack for S3, SSM, STS and Step Functions.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use live_ci_core::port::{ExecutionStore, RunStore};
use live_ci_testkit::aws::sdk_config;
use live_ci_testkit::{localstack_endpoint, unique};
use support::pg::{TestDb, exec, run};
use support::repo::{GitRepo, TfTemplates};

const GITHUB_TOKEN: &str = "ghp_child-must-never-see-this-token";
const TASK_TOKEN: &str = "sfn-task-token-child-must-never-see";
const TASK_SECRET_KEY: &str = "task-role-secret-child-must-never-see";
const CONTAINER_URI: &str = "/v2/credentials/child-must-never-see";
const CONTAINER_AUTH: &str = "container-auth-child-must-never-see";

/// The task's environment as Fargate and the module would give it, plus `more`.
pub(crate) fn task(sub: &str, env: &[(&str, String)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_live-ci-task"));
    cmd.arg(sub).env_clear();
    // What a shell and terraform need (TF_CLI_CONFIG_FILE: the offline mirror).
    for (k, v) in std::env::vars() {
        if k == "PATH" || k == "HOME" || k.starts_with("TF_") {
            cmd.env(k, v);
        }
    }
    cmd.env("AWS_ENDPOINT_URL", localstack_endpoint().unwrap())
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", TASK_SECRET_KEY)
        .env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", CONTAINER_URI)
        .env("AWS_CONTAINER_AUTHORIZATION_TOKEN", CONTAINER_AUTH)
        .env("LIVE_CI_TASK_TOKEN", TASK_TOKEN)
        // Plans are read with terraform here (terragrunt is not installed).
        .env("SHOW_COMMAND", support::repo::SHOW_COMMAND);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

async fn github_token_param() -> String {
    let name = format!("/{}/github-token", unique("child"));
    let ssm = live_ci_aws::sdk::ssm::Client::from_conf(live_ci_aws::sdk::ssm::Config::from(
        &sdk_config(),
    ));
    ssm.put_parameter()
        .name(&name)
        .value(GITHUB_TOKEN)
        .r#type(live_ci_aws::sdk::ssm::types::ParameterType::SecureString)
        .send()
        .await
        .unwrap();
    name
}

fn dump(path: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("the plan command wrote no dump at {}: {e}", path.display()))
        .split('\0')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The dump holds none of the task's secrets (by name or by value) and the
/// role's own temporary credentials.
fn assert_only_what_terraform_needs(env: &BTreeMap<String, String>, secrets: &[&str]) {
    for name in [
        "GITHUB_TOKEN_SSM_KEY",
        "METADB_URL",
        "METADB_CLUSTER_ARN",
        "METADB_SECRET_ARN",
        "LIVE_CI_TASK_TOKEN",
        "ACCOUNT_PARENT_CFG",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN",
        "PLAN_BUCKET",
    ] {
        assert!(!env.contains_key(name), "{name} reached the child: {env:?}");
    }
    for (k, v) in env {
        for secret in secrets {
            assert!(
                !v.contains(secret),
                "{k} carries the task's secret {secret:?}"
            );
        }
    }
    assert!(env["AWS_ACCESS_KEY_ID"] != "test", "the task's own key id");
    assert!(!env["AWS_SESSION_TOKEN"].is_empty());
    assert_eq!(env["AWS_REGION"], "us-east-1");
    assert!(env.contains_key("PATH") && env.contains_key("HOME"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terra_runs_plan_child_gets_none_of_the_tasks_secrets() {
    let repo = GitRepo::new();
    repo.unit("dev/app", "1", &[]);
    let commit = repo.commit("app");
    let out = tempfile::tempdir().unwrap();
    let dump_file = out.path().join("env");
    let tf = TfTemplates::new(&format!("env -0 > {}; ", dump_file.display()));
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let id = "run-9-x-dev-app-001";
    let mut e = exec(id, "dev", &[]);
    e.cfg_path = live_ci_core::RepoPath::new("dev/app").unwrap();
    e.plan_command = tf.plan.clone();
    e.apply_command = tf.apply.clone();
    let run_id = metadb
        .create_run(&run(&commit, 1, vec![e]))
        .await
        .unwrap()
        .run_id;
    assert_eq!(metadb.claim_ready(run_id, 10).await.unwrap().len(), 1);
    let bucket = unique("childenv").to_lowercase();
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&sdk_config())
            .force_path_style(true)
            .build(),
    );
    s3.create_bucket().bucket(&bucket).send().await.unwrap();
    let param = github_token_param().await;
    let accounts = r#"[{"name": "dev", "path": "dev", "voters": ["dev@example.com"],
      "min_approval_count": 1, "min_rejection_count": 1,
      "plan_role_arn": "arn:aws:iam::111111111111:role/plan",
      "apply_role_arn": "arn:aws:iam::111111111111:role/apply"}]"#;
    let output = task(
        "terra-run",
        &[
            ("METADB_URL", db.url.clone()),
            ("PLAN_BUCKET", bucket.clone()),
            ("GITHUB_TOKEN_SSM_KEY", param.clone()),
            ("REPO_CLONE_URL", repo.url()),
            ("ACCOUNT_PARENT_CFG", accounts.to_string()),
            ("LIVE_CI_PHASE", "plan".into()),
            ("LIVE_CI_EXECUTION_ID", id.into()),
            (
                "LIVE_CI_ROLE_ARN",
                "arn:aws:iam::111111111111:role/plan".into(),
            ),
        ],
    )
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stdout.contains("live-ci: plan saved to"),
        "the plan ran: {stdout}\n{stderr}"
    );
    let env = dump(&dump_file);
    assert_only_what_terraform_needs(
        &env,
        &[
            GITHUB_TOKEN,
            TASK_TOKEN,
            TASK_SECRET_KEY,
            CONTAINER_URI,
            CONTAINER_AUTH,
            &db.url,
            &param,
            &bucket,
            "role/apply",
        ],
    );
    assert_eq!(env["LIVE_CI_EXECUTION_ID"], id);
    assert_eq!(env["LIVE_CI_CFG_PATH"], "dev/app");
    // The plan task (not the child) recorded what it uploaded.
    assert!(metadb.saved_plan(id).await.unwrap().is_some());
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pr_plans_child_gets_none_of_the_tasks_secrets() {
    let repo = GitRepo::new();
    repo.unit("dev/app", "1", &[]);
    repo.commit("base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.unit("dev/app", "2", &[]);
    let head = repo.commit("change");
    let out = tempfile::tempdir().unwrap();
    let dump_file = out.path().join("env");
    let tf = TfTemplates::new(&format!("env -0 > {}; ", dump_file.display()));
    let param = github_token_param().await;
    let accounts = r#"[{"name": "dev", "path": "dev", "voters": ["dev@example.com"],
      "min_approval_count": 1, "min_rejection_count": 1,
      "plan_role_arn": "arn:aws:iam::111111111111:role/plan",
      "apply_role_arn": "arn:aws:iam::111111111111:role/apply"}]"#;
    // pr-plan migrates whatever metadb it is given at start, so this one is
    // real; the child must see neither its name nor its URL.
    let db = TestDb::new().await;
    let metadb_url = db.url.clone();
    let output = task(
        "pr-plan",
        &[
            ("METADB_URL", metadb_url.clone()),
            ("GITHUB_TOKEN_SSM_KEY", param.clone()),
            ("REPO_CLONE_URL", repo.url()),
            ("ACCOUNT_PARENT_CFG", accounts.to_string()),
            ("PLAN_COMMAND", tf.plan.clone()),
            ("LIVE_CI_PR_NUMBER", "5".into()),
            ("LIVE_CI_COMMIT", head.clone()),
            ("LIVE_CI_BASE_REF", "main".into()),
        ],
    )
    .output()
    .unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let env = dump(&dump_file);
    assert_only_what_terraform_needs(
        &env,
        &[
            GITHUB_TOKEN,
            TASK_TOKEN,
            TASK_SECRET_KEY,
            CONTAINER_URI,
            CONTAINER_AUTH,
            &metadb_url,
            &param,
            "role/apply",
            "dev@example.com",
        ],
    );
    db.drop_db().await;
}
