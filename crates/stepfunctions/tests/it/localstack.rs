//! The rendered deployment definition run for real in LocalStack Step Functions:
//! the ECS steps mocked by SFN_MOCK_CONFIG test cases
//! (`statemachine/testdata/sfn-mock-config.json`, one state machine name per
//! test), the approval request captured through SNS → SQS, and the decision
//! sent back with SendTaskSuccess / SendTaskFailure.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use aws_sdk_sfn::types::{ExecutionStatus as SfnStatus, HistoryEvent, HistoryEventType};
use aws_sdk_sqs::types::QueueAttributeName;
use live_ci_core::port::{TaskTokens, TokenDelivery};
use live_ci_stepfunctions::outcome::{FailedStep, state};
use live_ci_stepfunctions::{
    ApplyResult, ApprovalDecision, ApprovalRequest, Decision, DeploymentVars, Outcome, PlanResult,
    SfnInput, SfnTaskTokens,
};
use live_ci_testkit::unique;
use serde_json::{Value, json};

const ROLE: &str = "arn:aws:iam::000000000000:role/live-ci-sfn";

struct Cloud {
    sfn: aws_sdk_sfn::Client,
    sns: aws_sdk_sns::Client,
    sqs: aws_sdk_sqs::Client,
}

fn cloud() -> Cloud {
    let config = live_ci_testkit::aws::sdk_config();
    Cloud {
        sfn: aws_sdk_sfn::Client::new(&config),
        sns: aws_sdk_sns::Client::new(&config),
        sqs: aws_sdk_sqs::Client::new(&config),
    }
}

/// One test's state machine, approval topic and the queue subscribed to it.
struct Deployment {
    cloud: Cloud,
    state_machine_arn: String,
    queue_url: String,
    topic_arn: String,
}

/// Creates (or updates, when a previous run left it) the state machine named
/// `machine` in the mock config, with its own topic and queue.
async fn deployment(machine: &str, approval_timeout_seconds: u32) -> Deployment {
    deployment_as(machine, approval_timeout_seconds, ROLE).await
}

/// [`deployment`] with the state machine running as `role`.
async fn deployment_as(machine: &str, approval_timeout_seconds: u32, role: &str) -> Deployment {
    let cloud = cloud();
    let topic_arn = cloud
        .sns
        .create_topic()
        .name(unique(machine))
        .send()
        .await
        .unwrap()
        .topic_arn
        .unwrap();
    let queue_url = cloud
        .sqs
        .create_queue()
        .queue_name(unique(machine))
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let queue_arn = cloud
        .sqs
        .get_queue_attributes()
        .queue_url(&queue_url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap()
        .remove(&QueueAttributeName::QueueArn)
        .unwrap();
    cloud
        .sns
        .subscribe()
        .topic_arn(&topic_arn)
        .protocol("sqs")
        .endpoint(queue_arn)
        .attributes("RawMessageDelivery", "true")
        .send()
        .await
        .unwrap();
    let definition = DeploymentVars {
        ecs_cluster_arn: "arn:aws:ecs:us-east-1:000000000000:cluster/live-ci".into(),
        terra_run_task_definition_arn:
            "arn:aws:ecs:us-east-1:000000000000:task-definition/live-ci-terra-run:1".into(),
        terra_run_container_name: "terra-run".into(),
        terra_run_role_arn_prefix: "arn:aws:iam::000000000000:role/live-ci-".into(),
        subnet_ids: vec!["subnet-0a".into()],
        security_group_ids: vec!["sg-01".into()],
        assign_public_ip: false,
        approval_topic_arn: topic_arn.clone(),
        approval_timeout_seconds,
        plan_heartbeat_seconds: 60,
        plan_timeout_seconds: 600,
        apply_heartbeat_seconds: 60,
        apply_timeout_seconds: 600,
        retry_interval_seconds: 1,
        retry_max_attempts: 3,
    }
    .render_deployment()
    .unwrap();
    let created = cloud
        .sfn
        .create_state_machine()
        .name(machine)
        .definition(&definition)
        .role_arn(role)
        .send()
        .await;
    let state_machine_arn = match created {
        Ok(out) => out.state_machine_arn,
        Err(err) => {
            let err = err.into_service_error();
            assert!(err.is_state_machine_already_exists(), "{err:?}");
            let arn = cloud
                .sfn
                .list_state_machines()
                .send()
                .await
                .unwrap()
                .state_machines
                .into_iter()
                .find(|m| m.name == machine)
                .unwrap()
                .state_machine_arn;
            cloud
                .sfn
                .update_state_machine()
                .state_machine_arn(&arn)
                .definition(&definition)
                .role_arn(role)
                .send()
                .await
                .unwrap();
            arn
        }
    };
    Deployment {
        cloud,
        state_machine_arn,
        queue_url,
        topic_arn,
    }
}

fn input() -> SfnInput {
    serde_json::from_value(json!({
        "execution_id": "run-1-c8c5-dev-baz-729",
        "is_rollback": false,
        "pr_id": 1,
        "commit_id": "c8c5f6afc7345bd21cd79acaf740dc18b60755e3",
        "base_ref": "refs/heads/main",
        "head_ref": "refs/heads/feature-1",
        "cfg_path": "dev-account/us-west-2/env-one/baz",
        "cfg_deps": ["dev-account/global"],
        "status": "running",
        "plan_command": "terragrunt plan --terragrunt-working-dir dev-account/us-west-2/env-one/baz",
        "apply_command": "terragrunt apply --terragrunt-working-dir dev-account/us-west-2/env-one/baz -auto-approve",
        "new_providers": [],
        "new_resources": [],
        "account_name": "dev",
        "account_path": "dev-account",
        "account_deps": [],
        "voters": ["alice@example.com", "bob@example.com"],
        "approval_voters": [],
        "min_approval_count": 1,
        "rejection_voters": [],
        "min_rejection_count": 1,
        "plan_role_arn": "arn:aws:iam::111111111111:role/plan",
        "apply_role_arn": "arn:aws:iam::111111111111:role/apply"
    }))
    .unwrap()
}

impl Deployment {
    /// Starts an execution of the mock config's `test_case`.
    async fn start(&self, test_case: &str) -> String {
        self.cloud
            .sfn
            .start_execution()
            .state_machine_arn(format!("{}#{test_case}", self.state_machine_arn))
            .name(unique(test_case))
            .input(serde_json::to_string(&input()).unwrap())
            .send()
            .await
            .unwrap()
            .execution_arn
    }

    /// The approval request the state machine published, read from the queue.
    async fn approval_request(&self) -> ApprovalRequest {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let out = self
                .cloud
                .sqs
                .receive_message()
                .queue_url(&self.queue_url)
                .wait_time_seconds(2)
                .max_number_of_messages(1)
                .send()
                .await
                .unwrap();
            if let Some(message) = out.messages.unwrap_or_default().into_iter().next() {
                self.cloud
                    .sqs
                    .delete_message()
                    .queue_url(&self.queue_url)
                    .receipt_handle(message.receipt_handle.unwrap())
                    .send()
                    .await
                    .unwrap();
                return live_ci_stepfunctions::payload::decode(
                    "approval request",
                    &message.body.unwrap(),
                )
                .unwrap();
            }
        }
        panic!("no approval request within 30 s");
    }

    fn tokens(&self) -> SfnTaskTokens {
        SfnTaskTokens::new(self.cloud.sfn.clone())
    }

    async fn approve_with(&self, token: &str, output: Value) {
        let sent = self
            .tokens()
            .send_success(token, &output.to_string())
            .await
            .unwrap();
        assert_eq!(sent, TokenDelivery::Delivered);
    }

    /// Waits for the execution to end; returns its outcome and its output.
    async fn finished(&self, execution_arn: &str) -> (Outcome, Option<Value>) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let out = self
                .cloud
                .sfn
                .describe_execution()
                .execution_arn(execution_arn)
                .send()
                .await
                .unwrap();
            if out.status != SfnStatus::Running {
                let outcome =
                    Outcome::classify(out.status.as_str(), out.error(), out.cause()).unwrap();
                let output = out.output.map(|o| serde_json::from_str(&o).unwrap());
                return (outcome, output);
            }
            assert!(Instant::now() < deadline, "{execution_arn} still running");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn history(&self, execution_arn: &str) -> Vec<HistoryEvent> {
        self.cloud
            .sfn
            .get_execution_history()
            .execution_arn(execution_arn)
            .max_results(1000)
            .send()
            .await
            .unwrap()
            .events
    }

    /// The states the execution entered, in order.
    async fn path(&self, execution_arn: &str) -> Vec<String> {
        self.history(execution_arn)
            .await
            .iter()
            .filter_map(|e| e.state_entered_event_details())
            .map(|d| d.name.clone())
            .collect()
    }
}

fn decision(decision: Decision) -> Value {
    serde_json::to_value(ApprovalDecision {
        decision,
        approval_voters: vec!["alice@example.com".into()],
        rejection_voters: vec![],
    })
    .unwrap()
}

#[tokio::test]
async fn approved_deployments_apply_and_succeed() {
    let d = deployment("live-ci-test-approve", 60).await;
    let execution = d.start("Approve").await;
    let request = d.approval_request().await;
    assert_eq!(request.execution, input());
    assert_eq!(request.sfn_execution_arn, execution);
    assert_eq!((request.plan.to_add, request.plan.to_change), (2, 1));
    assert!(!request.task_token.is_empty());
    d.approve_with(&request.task_token, decision(Decision::Approve))
        .await;

    let (outcome, output) = d.finished(&execution).await;
    assert_eq!(outcome, Outcome::Succeeded);
    let output = output.unwrap();
    let plan: PlanResult = serde_json::from_value(output["plan"].clone()).unwrap();
    assert_eq!(plan, request.plan);
    let approval: ApprovalDecision = serde_json::from_value(output["approval"].clone()).unwrap();
    assert_eq!(approval.decision, Decision::Approve);
    let apply: ApplyResult = serde_json::from_value(output["apply"].clone()).unwrap();
    assert_eq!(apply.new_resources, ["null_resource.this"]);
    assert_eq!(output["execution_id"], "run-1-c8c5-dev-baz-729");
    assert_eq!(
        d.path(&execution).await,
        [
            state::PLAN,
            state::PLAN_CHANGES,
            state::REQUEST_APPROVAL,
            state::APPROVAL_RESULTS,
            state::APPLY,
            state::SUCCESS
        ]
    );
}

/// terra-run's `skip_apply` (a plan that changes nothing): the execution
/// succeeds at No Changes without publishing an approval request or applying,
/// and its output reads as "no changes" to trigger_sf.
#[tokio::test]
async fn a_plan_without_changes_succeeds_without_approval_or_apply() {
    let d = deployment("live-ci-test-no-changes", 60).await;
    let execution = d.start("NoChanges").await;
    let (outcome, output) = d.finished(&execution).await;
    assert_eq!(outcome, Outcome::Succeeded);
    assert_eq!(
        d.path(&execution).await,
        [state::PLAN, state::PLAN_CHANGES, state::NO_CHANGES]
    );
    let output = output.unwrap();
    assert!(output.get("approval").is_none() && output.get("apply").is_none());
    assert!(live_ci_stepfunctions::outcome::ended_without_changes(
        &output.to_string()
    ));
    let nothing = d
        .cloud
        .sqs
        .receive_message()
        .queue_url(&d.queue_url)
        .wait_time_seconds(2)
        .send()
        .await
        .unwrap();
    assert!(
        nothing.messages.unwrap_or_default().is_empty(),
        "no approval request is published"
    );
}

#[tokio::test]
async fn rejected_deployments_end_rejected_without_applying() {
    let d = deployment("live-ci-test-reject", 60).await;
    let execution = d.start("Reject").await;
    let request = d.approval_request().await;
    d.approve_with(&request.task_token, decision(Decision::Reject))
        .await;
    let (outcome, _) = d.finished(&execution).await;
    assert_eq!(outcome, Outcome::Rejected);
    assert_eq!(
        d.path(&execution).await,
        [
            state::PLAN,
            state::PLAN_CHANGES,
            state::REQUEST_APPROVAL,
            state::APPROVAL_RESULTS,
            state::REJECT
        ]
    );
}

#[tokio::test]
async fn a_rejection_sent_as_task_failure_is_a_rejection() {
    let d = deployment("live-ci-test-reject-by-failure", 60).await;
    let execution = d.start("Reject").await;
    let request = d.approval_request().await;
    let sent = d
        .tokens()
        .send_failure(
            &request.task_token,
            live_ci_stepfunctions::outcome::REJECTED,
            "2 of 2 voters rejected",
        )
        .await
        .unwrap();
    assert_eq!(sent, TokenDelivery::Delivered);
    let (outcome, _) = d.finished(&execution).await;
    assert_eq!(outcome, Outcome::Rejected);
    assert!(!d.path(&execution).await.contains(&state::APPLY.to_owned()));
}

#[tokio::test]
async fn a_failed_plan_fails_the_execution_with_its_cause() {
    let d = deployment("live-ci-test-plan-fails", 60).await;
    let execution = d.start("PlanFails").await;
    let (outcome, _) = d.finished(&execution).await;
    assert_eq!(
        outcome,
        Outcome::Failed {
            step: FailedStep::Plan,
            error: "PlanFailed".into(),
            cause:
                "TerraformFailed: terragrunt plan exited with status 1: Error: Unsupported argument"
                    .into(),
        }
    );
    assert_eq!(d.path(&execution).await, [state::PLAN, state::PLAN_FAILED]);
}

/// A denied call surfaces naming role, action and resource (issue 28, item 5;
/// the state machine): its role may do everything the definition calls, and an
/// explicit Deny of `sns:Publish` takes that one away. The local cloud's IAM
/// refuses the approval request's publish and the execution fails at once (not
/// retried: AuthorizationError is not in the state's Retry) with `ApprovalFailed`,
/// the cause carrying AWS's text.
///
/// Why a Deny and not just a missing Allow: this test's topic keeps SNS's default
/// access policy, whose `__default_statement_ID` (Principal `*`, `AWS:SourceOwner`
/// the account) lets the account's own principals publish, so a role without
/// `sns:Publish` is still allowed by the resource policy (the stats showed that
/// statement as the sole allower; the mocked `Plan` makes no call at all). The
/// module's approval topic replaces that policy (infra/events.tf).
#[tokio::test]
async fn a_publish_the_role_may_not_make_fails_the_execution_naming_role_action_and_resource() {
    let endpoint = live_ci_testkit::localstack_endpoint().unwrap();
    if !live_ci_testkit::aws::iam_enforced(&endpoint).await {
        eprintln!("skipping: the local cloud does not enforce IAM");
        return;
    }
    let role = unique("live-ci-sfn-no-publish");
    let role_arn = live_ci_testkit::aws::service_role(
        &role,
        "states.amazonaws.com",
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["sqs:SendMessage","ecs:RunTask","ecs:StopTask","ecs:DescribeTasks","iam:PassRole","kms:GenerateDataKey","kms:Decrypt","events:PutTargets","events:PutRule","events:DescribeRule"],"Resource":"*"},{"Effect":"Deny","Action":"sns:Publish","Resource":"*"}]}"#,
    )
    .await;
    let d = deployment_as("live-ci-test-approval-denied", 60, &role_arn).await;
    let started = Instant::now();
    let execution = d.start("ApprovalDenied").await;
    let (outcome, _) = d.finished(&execution).await;
    assert!(started.elapsed() < Duration::from_secs(30));
    let Outcome::Failed { step, error, cause } = outcome else {
        panic!("not failed: {outcome:?}");
    };
    assert_eq!(
        (step, error.as_str()),
        (FailedStep::Approval, "ApprovalFailed"),
        "{cause}"
    );
    assert!(
        cause.contains(&format!(":assumed-role/{role}/"))
            && cause.contains(&format!(
                "is not authorized to perform: sns:Publish on resource: {}",
                d.topic_arn
            )),
        "{cause}"
    );
}

#[tokio::test]
async fn unanswered_approvals_time_out_and_fail() {
    let d = deployment("live-ci-test-approval-timeout", 2).await;
    let execution = d.start("Timeout").await;
    let request = d.approval_request().await;
    let started = Instant::now();
    let (outcome, _) = d.finished(&execution).await;
    assert_eq!(outcome, Outcome::ApprovalTimedOut);
    assert!(started.elapsed() < Duration::from_secs(20));
    // The token is dead: a late vote cannot revive the execution, and the
    // adapter reports it as gone (the vote page shows it) rather than failing.
    let tokens = d.tokens();
    let approve = decision(Decision::Approve).to_string();
    match tokens
        .send_success(&request.task_token, &approve)
        .await
        .unwrap()
    {
        // AWS answers TaskTimedOut; LocalStack, InvalidToken.
        TokenDelivery::Gone { reason } => assert!(
            reason.starts_with("TaskTimedOut") || reason.starts_with("InvalidToken"),
            "{reason}"
        ),
        TokenDelivery::Delivered => panic!("a timed-out token was delivered"),
    }
    let beat = tokens.heartbeat(&request.task_token).await.unwrap();
    assert!(matches!(beat, TokenDelivery::Gone { .. }), "{beat:?}");
    assert_eq!(
        d.path(&execution).await,
        [
            state::PLAN,
            state::PLAN_CHANGES,
            state::REQUEST_APPROVAL,
            state::APPROVAL_TIMED_OUT
        ]
    );
}

#[tokio::test]
async fn throttled_ecs_calls_are_retried() {
    let d = deployment("live-ci-test-retry", 60).await;
    let execution = d.start("ThrottledThenApproved").await;
    let request = d.approval_request().await;
    assert_eq!(request.plan.to_destroy, 1);
    d.approve_with(&request.task_token, decision(Decision::Approve))
        .await;
    let (outcome, _) = d.finished(&execution).await;
    assert_eq!(outcome, Outcome::Succeeded);
    let throttled = d
        .history(&execution)
        .await
        .iter()
        .filter(|e| e.r#type == HistoryEventType::TaskFailed)
        .filter_map(|e| e.task_failed_event_details())
        .filter(|d| d.error() == Some("ECS.AmazonECSException"))
        .count();
    assert_eq!(throttled, 1);
}

#[tokio::test]
async fn a_failed_apply_fails_the_execution_with_its_cause() {
    let d = deployment("live-ci-test-apply-fails", 60).await;
    let execution = d.start("ApplyFails").await;
    let request = d.approval_request().await;
    d.approve_with(&request.task_token, decision(Decision::Approve))
        .await;
    let (outcome, _) = d.finished(&execution).await;
    let Outcome::Failed { step, error, cause } = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!((step, error.as_str()), (FailedStep::Apply, "ApplyFailed"));
    assert!(
        cause.starts_with("TerraformFailed: terragrunt apply exited"),
        "{cause}"
    );
}

#[tokio::test]
async fn an_unknown_decision_fails_rather_than_applying() {
    let d = deployment("live-ci-test-invalid-decision", 60).await;
    let execution = d.start("Invalid").await;
    let request = d.approval_request().await;
    d.approve_with(&request.task_token, json!({"decision": "maybe"}))
        .await;
    let (outcome, _) = d.finished(&execution).await;
    let Outcome::Failed { step, error, cause } = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(
        (step, error.as_str()),
        (FailedStep::Approval, "InvalidDecision")
    );
    assert!(cause.contains("maybe"), "{cause}");
}

/// The names the mock config's tasks throw, read from it: the test below is
/// only as good as its mock throwing exactly what terra-run sends.
fn mocked_error(response: &str) -> String {
    let path = live_ci_testkit::repo_root().join("statemachine/testdata/sfn-mock-config.json");
    let config: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    config["MockedResponses"][response]["0"]["Throw"]["Error"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A task failing with the retryable name (a deadlock in the metadb, a
/// throttled S3) is run again by the state machine's Retry; one failing with
/// the permanent name goes to Plan Failed at once.
#[tokio::test]
async fn the_retryable_error_name_is_retried_and_the_permanent_one_is_not() {
    use live_ci_core::port::{PERMANENT_ERROR, RETRYABLE_ERROR};
    assert_eq!(mocked_error("PlanRetryableOnce"), RETRYABLE_ERROR);
    assert_eq!(mocked_error("PlanPermanent"), PERMANENT_ERROR);
    let task_failures = |history: Vec<HistoryEvent>| {
        history
            .iter()
            .filter(|e| e.r#type == HistoryEventType::TaskFailed)
            .filter_map(|e| e.task_failed_event_details())
            .filter_map(|d| d.error().map(str::to_owned))
            .collect::<Vec<_>>()
    };

    let d = deployment("live-ci-test-retryable", 60).await;
    let execution = d.start("RetryableThenPlanned").await;
    let (outcome, _) = d.finished(&execution).await;
    assert_eq!(outcome, Outcome::Succeeded);
    assert_eq!(
        task_failures(d.history(&execution).await),
        [RETRYABLE_ERROR]
    );
    assert_eq!(
        d.path(&execution).await,
        [state::PLAN, state::PLAN_CHANGES, state::NO_CHANGES]
    );

    let d = deployment("live-ci-test-permanent", 60).await;
    let execution = d.start("Permanent").await;
    let (outcome, _) = d.finished(&execution).await;
    let Outcome::Failed { step, error, cause } = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!((step, error.as_str()), (FailedStep::Plan, "PlanFailed"));
    assert!(cause.starts_with(PERMANENT_ERROR), "{cause}");
    assert_eq!(
        task_failures(d.history(&execution).await),
        [PERMANENT_ERROR]
    );
    assert_eq!(d.path(&execution).await, [state::PLAN, state::PLAN_FAILED]);
}
