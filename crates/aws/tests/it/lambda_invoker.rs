//! The Lambda invoker's exact Invoke request (asynchronous, the payload as
//! given) on the wire, against a wiremock server: LocalStack cannot run Lambdas here.
#![allow(clippy::unwrap_used)] // test set-up panics by design

use live_ci_aws::LambdaInvoker;
use live_ci_core::port::{FunctionInvoker, run_payload};
use live_ci_testkit::aws_wire::{Call, ResponseTemplate, Wire};
use live_ci_testkit::wire_client;

const INVOKE: &str = "/2015-03-31/functions/live-ci-trigger-sf/invocations";

#[tokio::test]
async fn invoke_is_asynchronous_with_the_run_payload() {
    let wire = Wire::start(vec![
        Call::raw(INVOKE, br#"{"run_id":17}"#)
            .header("x-amz-invocation-type", "Event")
            .answer(ResponseTemplate::new(202)),
    ])
    .await;
    LambdaInvoker::new(wire_client!(aws_sdk_lambda, wire))
        .invoke("live-ci-trigger-sf", &run_payload(17))
        .await
        .unwrap();
    wire.verify().await;
}

#[tokio::test]
async fn a_function_error_is_an_error_naming_the_function() {
    let wire = Wire::start(vec![
        Call::raw(INVOKE, b"{}")
            .header("x-amz-invocation-type", "Event")
            .answer(ResponseTemplate::new(200).insert_header("x-amz-function-error", "Unhandled")),
    ])
    .await;
    let err = LambdaInvoker::new(wire_client!(aws_sdk_lambda, wire))
        .invoke("live-ci-trigger-sf", "{}")
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("lambda invoke \"live-ci-trigger-sf\": function error \"Unhandled\""),
        "{err}"
    );
    wire.verify().await;
}
