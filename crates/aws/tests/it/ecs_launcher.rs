//! The ECS launcher's exact RunTask requests on the wire (awsJson 1.1: the
//! `x-amz-target` and the whole body), against a wiremock server (ECS does not
//! run here; the local cloud's agent is a later piece).
#![allow(clippy::unwrap_used)] // test set-up panics by design

use std::collections::BTreeMap;

use live_ci_aws::{EcsConfig, EcsTaskLauncher, TaskDefinitionRef};
use live_ci_core::port::TaskLauncher;
use live_ci_core::task::{TaskKind, TaskSpec};
use live_ci_testkit::aws_wire::{Call, Wire};
use live_ci_testkit::wire_client;
use serde_json::json;

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

/// The RunTask request for the pr-plan task of [`spec`], exact on the wire.
fn run_task() -> Call {
    Call::aws_json(
        "AmazonEC2ContainerServiceV20141113.RunTask",
        json!({
            "cluster": "arn:aws:ecs:eu-west-1:123456789012:cluster/live-ci",
            "taskDefinition": "live-ci-pr-plan:3",
            "launchType": "FARGATE",
            "clientToken": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
            "startedBy": "live-ci",
            "count": 1,
            "networkConfiguration": {"awsvpcConfiguration": {
                "subnets": ["subnet-a", "subnet-b"],
                "securityGroups": ["sg-1"],
                "assignPublicIp": "DISABLED",
            }},
            "overrides": {"containerOverrides": [{
                "name": "live-ci-task",
                "command": ["pr-plan"],
                "environment": [
                    {"name": "LIVE_CI_HEAD_SHA", "value": "9c2f41e"},
                    {"name": "LIVE_CI_PR_NUMBER", "value": "42"},
                ],
            }]},
        }),
    )
}

#[tokio::test]
async fn run_task_request_is_exact_and_logs_link_to_the_stream() {
    let wire = Wire::start(vec![run_task().answer_json(json!({
        "tasks": [{"taskArn": "arn:aws:ecs:eu-west-1:123456789012:task/live-ci/0a1b2c3d4e"}],
        "failures": [],
    }))])
    .await;
    let started = EcsTaskLauncher::new(wire_client!(aws_sdk_ecs, wire), config())
        .start(&spec(TaskKind::PrPlan))
        .await
        .unwrap();
    wire.verify().await;
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
    let wire = Wire::start(vec![run_task().answer_json(json!({
        "tasks": [],
        "failures": [{
            "reason": "RESOURCE:MEMORY",
            "arn": "arn:aws:ecs:eu-west-1:123456789012:container-instance/x",
        }],
    }))])
    .await;
    let launcher = EcsTaskLauncher::new(wire_client!(aws_sdk_ecs, wire), config());
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
    ); // The unconfigured kind made no call.
    wire.verify().await;
}
