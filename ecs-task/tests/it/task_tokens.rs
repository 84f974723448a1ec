//! terra-run answering a real Step Functions task token in LocalStack: a state
//! machine waits on `sqs:sendMessage.waitForTaskToken` (the token arrives in a
//! queue, as the ECS container override carries it in AWS), terra-run plans with
//! real terraform and the `SfnTaskTokens` adapter, and the execution ends with
//! the `PlanResult` as its output, or FAILED with the task's error.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::{Duration, Instant};

use aws_sdk_sfn::types::ExecutionStatus;
use live_ci_core::port::RunStore;
use live_ci_core::status::{NoGitHost, Statuses};
use live_ci_stepfunctions::SfnTaskTokens;
use live_ci_task::checkout::Repo;
use live_ci_task::terra_run::{TerraRunPorts, terra_run};
use live_ci_testkit::aws::{sdk_config, state_machine};
use live_ci_testkit::unique;
use serde_json::{Value, json};
use support::fakes::MemArtifacts;
use support::pg::{TestDb, exec, run};
use support::repo::{GitRepo, TfTemplates};

struct Cloud {
    sfn: aws_sdk_sfn::Client,
    sqs: aws_sdk_sqs::Client,
}

fn cloud() -> Cloud {
    let config = sdk_config();
    Cloud {
        sfn: aws_sdk_sfn::Client::new(&config),
        sqs: aws_sdk_sqs::Client::new(&config),
    }
}

/// Starts an execution that waits for a task token and returns (execution
/// arn, token).
async fn waiting_execution(c: &Cloud) -> (String, String) {
    let queue = c
        .sqs
        .create_queue()
        .queue_name(unique("tokens"))
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let definition = json!({
        "StartAt": "Plan",
        "States": {"Plan": {
            "Type": "Task",
            "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
            "Parameters": {"QueueUrl": queue, "MessageBody": {"token.$": "$$.Task.Token"}},
            "HeartbeatSeconds": 60,
            "TimeoutSeconds": 120,
            "End": true
        }}
    });
    let machine = state_machine(&c.sfn, "terra-run", &definition.to_string()).await;
    let arn = c
        .sfn
        .start_execution()
        .state_machine_arn(machine)
        .input("{}")
        .send()
        .await
        .unwrap()
        .execution_arn;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = c
            .sqs
            .receive_message()
            .queue_url(&queue)
            .wait_time_seconds(2)
            .send()
            .await
            .unwrap();
        if let Some(m) = got.messages().first() {
            let body: Value = serde_json::from_str(m.body().unwrap()).unwrap();
            return (arn, body["token"].as_str().unwrap().to_string());
        }
        assert!(Instant::now() < deadline, "no task token arrived");
    }
}

async fn ended(
    c: &Cloud,
    arn: &str,
) -> aws_sdk_sfn::operation::describe_execution::DescribeExecutionOutput {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let out = c
            .sfn
            .describe_execution()
            .execution_arn(arn)
            .send()
            .await
            .unwrap();
        if out.status != ExecutionStatus::Running {
            return out;
        }
        assert!(Instant::now() < deadline, "execution still running");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_result_completes_a_waiting_state_and_a_failure_fails_it() {
    let c = cloud();
    let repo = GitRepo::new();
    repo.unit("dev/app", "1", &[]);
    let commit = repo.commit("app");
    let tf = TfTemplates::new("");
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let mut e = exec("run-7-abcd-dev-app-001", "dev", &[]);
    e.cfg_path = live_ci_core::RepoPath::new("dev/app").unwrap();
    e.plan_command = tf.plan.clone();
    metadb.create_run(&run(&commit, 1, vec![e])).await.unwrap();
    let artifacts = MemArtifacts::default();
    let tokens = SfnTaskTokens::new(c.sfn.clone());
    let sts = support::sts();
    let ports = TerraRunPorts {
        metadb: &metadb,
        artifacts: &artifacts,
        tokens: &tokens,
        roles: &sts,
        statuses: Statuses::new(&NoGitHost, Default::default()),
    };
    let clone = Repo {
        clone_url: repo.url(),
        token: None,
    };

    let (arn, token) = waiting_execution(&c).await;
    let config = support::config(&[
        ("LIVE_CI_PHASE", "plan"),
        ("LIVE_CI_TASK_TOKEN", &token),
        ("LIVE_CI_EXECUTION_ID", "run-7-abcd-dev-app-001"),
        ("REPO_CLONE_URL", &repo.url()),
    ]);
    terra_run(&config, &clone, Some("https://logs/p"), &ports)
        .await
        .unwrap();
    let out = ended(&c, &arn).await;
    assert_eq!(out.status, ExecutionStatus::Succeeded);
    let output: Value = serde_json::from_str(out.output().unwrap()).unwrap();
    assert_eq!(output["execution_id"], "run-7-abcd-dev-app-001");
    assert_eq!(output["to_add"], 1);
    assert_eq!(output["logs_url"], "https://logs/p");
    assert_eq!(
        output["plan_artifact"],
        format!("mem://plans/plans/run-7-abcd-dev-app-001/{commit}.tfplan")
    );

    let (arn, token) = waiting_execution(&c).await;
    let mut config = config.clone();
    config.task_token = token;
    support::record_command(
        &db.url,
        "run-7-abcd-dev-app-001",
        "plan",
        "echo 'Error: no credentials'; exit 1",
    )
    .await;
    terra_run(&config, &clone, None, &ports).await.unwrap_err();
    let out = ended(&c, &arn).await;
    assert_eq!(out.status, ExecutionStatus::Failed);
    assert_eq!(out.error(), Some("CommandFailed"));
    assert!(
        out.cause().unwrap().contains("no credentials"),
        "{:?}",
        out.cause()
    );
    db.drop_db().await;
}

/// The task binary as a terra-run of `token` in the local cloud, with an
/// environment of nothing but the AWS basics, the clone URL and the token.
fn task_binary(token: &str) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_live-ci-task"));
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("AWS_REGION", live_ci_testkit::aws::REGION)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env(
            "AWS_ENDPOINT_URL",
            live_ci_testkit::localstack_endpoint().unwrap(),
        )
        .env("REPO_CLONE_URL", "/nonexistent/repo")
        .env("LIVE_CI_TASK_TOKEN", token);
    command
}

/// A terra-run started without what it needs answers its token at once with
/// the `Config` error naming every missing variable (the state machine does
/// not wait out the heartbeat), and exits failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terra_run_missing_variables_fails_its_token_naming_them() {
    let c = cloud();
    let (arn, token) = waiting_execution(&c).await;
    let out = task_binary(&token)
        .env("LIVE_CI_PHASE", "apply")
        .arg("terra-run")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let done = ended(&c, &arn).await;
    assert_eq!(done.status, ExecutionStatus::Failed);
    assert_eq!(done.error(), Some("Config"));
    let cause = done.cause().unwrap_or_default();
    for name in [
        "LIVE_CI_PLAN_ARTIFACT",
        "LIVE_CI_EXECUTION_ID",
        "METADB_URL",
        "PLAN_BUCKET",
    ] {
        assert!(
            cause.contains(&format!("environment variable {name} is not set")),
            "{name}: {cause}"
        );
    }
}

/// A terra-run that cannot open the metadb answers its token at once with the
/// error's kind, `LiveCi.Retryable` for a refused connection (the state
/// machine retries the Plan on that name), instead of leaving the execution to
/// its heartbeat timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terra_run_that_cannot_reach_the_metadb_fails_its_token_as_retryable() {
    let c = cloud();
    let (arn, token) = waiting_execution(&c).await;
    // Port 1 on loopback: nothing listens, the connection is refused.
    let out = task_binary(&token)
        .env("LIVE_CI_PHASE", "plan")
        .env("LIVE_CI_EXECUTION_ID", "pr1-unreachable")
        .env("METADB_URL", "postgres://live_ci@127.0.0.1:1/live_ci")
        .env("PLAN_BUCKET", "plans")
        .arg("terra-run")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let done = ended(&c, &arn).await;
    assert_eq!(done.status, ExecutionStatus::Failed);
    assert_eq!(done.error(), Some("LiveCi.Retryable"));
    let cause = done.cause().unwrap_or_default();
    assert!(cause.contains("metadb"), "{cause}");
}
