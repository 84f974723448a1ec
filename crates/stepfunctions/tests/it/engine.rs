//! The Step Functions adapter of the workflow-engine port against LocalStack:
//! start, describe, and the idempotent repeat a retried trigger_sf relies on.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use aws_sdk_sfn::config::http::HttpResponse;
use aws_sdk_sfn::error::SdkError;
use aws_sdk_sfn::operation::describe_execution::DescribeExecutionError;
use live_ci_core::port::{Classify, ErrorKind, WorkflowEngine};
use live_ci_stepfunctions::{SfnEngine, WorkflowError};
use live_ci_testkit::aws::{sfn_client, state_machine};
use live_ci_testkit::unique;

#[tokio::test]
async fn starts_describes_and_repeats_idempotently() {
    let sfn = sfn_client();
    // A one-state machine: the adapter is under test, not the deployment flow.
    let definition = r#"{"StartAt":"Done","States":{"Done":{"Type":"Pass","End":true}}}"#;
    let machine = state_machine(&sfn, "live-ci-terragrunt", definition).await;
    let engine = SfnEngine::new(sfn, machine);
    let name = unique("run-1-abc-dev-app");
    let input = r#"{"execution_id":"run-1","pr_id":7}"#;

    let arn = engine.start_execution(&name, input).await.unwrap();
    assert_eq!(arn, engine.execution_arn(&name).unwrap());
    let deadline = Instant::now() + Duration::from_secs(30);
    let described = loop {
        let d = engine.describe_execution(&arn).await.unwrap();
        if d.has_ended() || Instant::now() > deadline {
            break d;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(described.status, "SUCCEEDED", "{described:?}");
    assert_eq!(described.name, name);
    assert_eq!(described.error, None);

    // The same name and input again (key order aside): the earlier execution.
    let again = engine
        .start_execution(&name, r#"{"pr_id":7,"execution_id":"run-1"}"#)
        .await
        .unwrap();
    assert_eq!(again, arn);
    // The same name with another input is a real conflict.
    let err = engine
        .start_execution(&name, r#"{"execution_id":"run-2"}"#)
        .await
        .unwrap_err();
    assert!(matches!(err, WorkflowError::Sfn { .. }), "{err:?}");
    assert!(err.to_string().contains(&format!("{name:?}")), "{err}");

    let missing = engine
        .describe_execution(&engine.execution_arn("no-such-execution").unwrap())
        .await
        .unwrap_err();
    assert!(
        missing.to_string().contains("DescribeExecution"),
        "{missing}"
    );
    // The SDK's own error is the source: its service error is still typed.
    let sdk = std::error::Error::source(&missing)
        .and_then(|s| s.downcast_ref::<SdkError<DescribeExecutionError, HttpResponse>>())
        .unwrap_or_else(|| panic!("no SdkError source: {missing:?}"));
    assert!(
        sdk.as_service_error()
            .is_some_and(|e| e.is_execution_does_not_exist()),
        "{sdk:?}"
    );
    assert_eq!(missing.kind(), ErrorKind::Permanent);
}
