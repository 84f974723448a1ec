//! The ECS launcher's exact RunTask requests, through the SDK's mock interceptor
//! (ECS does not run here; the local cloud's agent is a later piece).
#![allow(clippy::unwrap_used)] // test set-up panics by design

use std::collections::BTreeMap;

use aws_sdk_ecs::Client;
use aws_sdk_ecs::operation::run_task::{RunTaskInput, RunTaskOutput};
use aws_sdk_ecs::types::{AssignPublicIp, Failure, LaunchType, Task};
use aws_smithy_mocks::{mock, mock_client};
use live_ci_aws::{EcsConfig, EcsTaskLauncher, TaskDefinitionRef};
use live_ci_core::port::TaskLauncher;
use live_ci_core::task::{TaskKind, TaskSpec};

fn config() -> EcsConfig {
    EcsConfig {
        cluster: "arn:aws:ecs:eu-west-1:123456789012:cluster/live-ci".into(),
        region: "eu-west-1".into(),
        subnets: vec!["subnet-a".into(), "subnet-b".into()],
        security_groups: vec!["sg-1".into()],
        assign_public_ip: false,
        tasks: BTreeMap::from([(
            TaskKind::PrPlan,
            TaskDefinitionRef {
                task_definition: "live-ci-pr-plan:3".into(),
                container: "live-ci-task".into(),
                log_group: "/live-ci/tasks".into(),
                log_stream_prefix: "pr-plan".into(),
            },
        )]),
    }
}

fn spec(kind: TaskKind) -> TaskSpec {
    TaskSpec {
        kind,
        env: BTreeMap::from([
            ("LIVE_CI_HEAD_SHA".to_string(), "9c2f41e".to_string()),
            ("LIVE_CI_PR_NUMBER".to_string(), "42".to_string()),
        ]),
        client_token: "72d3162e-cc78-11e3-81ab-4c9367dc0958".into(),
    }
}

fn exact_request(req: &RunTaskInput) -> bool {
    let net = req
        .network_configuration()
        .unwrap()
        .awsvpc_configuration()
        .unwrap();
    let over = &req.overrides().unwrap().container_overrides()[0];
    let env: Vec<(&str, &str)> = over
        .environment()
        .iter()
        .map(|kv| (kv.name().unwrap(), kv.value().unwrap()))
        .collect();
    req.cluster() == Some("arn:aws:ecs:eu-west-1:123456789012:cluster/live-ci")
        && req.task_definition() == Some("live-ci-pr-plan:3")
        && req.launch_type() == Some(&LaunchType::Fargate)
        && req.client_token() == Some("72d3162e-cc78-11e3-81ab-4c9367dc0958")
        && req.started_by() == Some("live-ci")
        && net.subnets() == ["subnet-a", "subnet-b"]
        && net.security_groups() == ["sg-1"]
        && net.assign_public_ip() == Some(&AssignPublicIp::Disabled)
        && over.name() == Some("live-ci-task")
        && over.command() == ["pr-plan"]
        && env == [("LIVE_CI_HEAD_SHA", "9c2f41e"), ("LIVE_CI_PR_NUMBER", "42")]
}

#[tokio::test]
async fn run_task_request_is_exact_and_logs_link_to_the_stream() {
    let rule = mock!(Client::run_task)
        .match_requests(exact_request)
        .then_output(|| {
            RunTaskOutput::builder()
                .tasks(
                    Task::builder()
                        .task_arn("arn:aws:ecs:eu-west-1:123456789012:task/live-ci/0a1b2c3d4e")
                        .build(),
                )
                .build()
        });
    let client = mock_client!(aws_sdk_ecs, [&rule]);
    let started = EcsTaskLauncher::new(client, config())
        .start(&spec(TaskKind::PrPlan))
        .await
        .unwrap();
    assert_eq!(rule.num_calls(), 1);
    assert_eq!(
        started.task_arn,
        "arn:aws:ecs:eu-west-1:123456789012:task/live-ci/0a1b2c3d4e"
    );
    assert_eq!(
        started.logs_url.unwrap(),
        "https://eu-west-1.console.aws.amazon.com/cloudwatch/home?region=eu-west-1#logsV2:log-groups/log-group/$252Flive-ci$252Ftasks/log-events/pr-plan$252Flive-ci-task$252F0a1b2c3d4e"
    );
}

#[tokio::test]
async fn failures_and_unconfigured_kinds_are_errors() {
    let rule = mock!(Client::run_task).then_output(|| {
        RunTaskOutput::builder()
            .failures(
                Failure::builder()
                    .reason("RESOURCE:MEMORY")
                    .arn("arn:aws:ecs:eu-west-1:123456789012:container-instance/x")
                    .build(),
            )
            .build()
    });
    let client = mock_client!(aws_sdk_ecs, [&rule]);
    let launcher = EcsTaskLauncher::new(client, config());
    let err = launcher.start(&spec(TaskKind::PrPlan)).await.unwrap_err();
    assert!(
        err.to_string()
            .starts_with("ecs run-task for pr-plan: RESOURCE:MEMORY"),
        "{err}"
    );
    let err = launcher
        .start(&spec(TaskKind::CreateDeployStack))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "no task definition configured for \"create-deploy-stack\""
    );
}
