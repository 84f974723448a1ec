//! The Lambda invoker's exact Invoke request (asynchronous, the payload as
//! given), through the SDK's mock interceptor: LocalStack cannot run Lambdas here.
#![allow(clippy::unwrap_used)] // test set-up panics by design

use aws_sdk_lambda::Client;
use aws_sdk_lambda::operation::invoke::{InvokeInput, InvokeOutput};
use aws_sdk_lambda::types::InvocationType;
use aws_smithy_mocks::{mock, mock_client};
use live_ci_aws::LambdaInvoker;
use live_ci_core::port::{FunctionInvoker, run_payload};

fn exact_request(req: &InvokeInput) -> bool {
    req.function_name() == Some("live-ci-trigger-sf")
        && req.invocation_type() == Some(&InvocationType::Event)
        && req.payload().map(|p| p.as_ref()) == Some(br#"{"run_id":17}"#.as_slice())
}

#[tokio::test]
async fn invoke_is_asynchronous_with_the_run_payload() {
    let rule = mock!(Client::invoke)
        .match_requests(exact_request)
        .then_output(|| InvokeOutput::builder().status_code(202).build());
    let client = mock_client!(aws_sdk_lambda, [&rule]);
    LambdaInvoker::new(client)
        .invoke("live-ci-trigger-sf", &run_payload(17))
        .await
        .unwrap();
    assert_eq!(rule.num_calls(), 1);
}

#[tokio::test]
async fn a_function_error_is_an_error_naming_the_function() {
    let rule = mock!(Client::invoke).then_output(|| {
        InvokeOutput::builder()
            .status_code(200)
            .function_error("Unhandled")
            .build()
    });
    let client = mock_client!(aws_sdk_lambda, [&rule]);
    let err = LambdaInvoker::new(client)
        .invoke("live-ci-trigger-sf", "{}")
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("lambda invoke \"live-ci-trigger-sf\": function error \"Unhandled\""),
        "{err}"
    );
}
