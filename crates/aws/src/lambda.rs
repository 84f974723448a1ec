//! Lambda as the core's [`FunctionInvoker`]: one asynchronous `Invoke`
//! (InvocationType `Event`), so the caller does not wait for the function.

use aws_sdk_lambda::Client;
use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::InvocationType;
use live_ci_core::port::FunctionInvoker;

use crate::error::{AwsError, Failure};

/// Invokes Lambda functions asynchronously.
#[derive(Debug, Clone)]
pub struct LambdaInvoker {
    client: Client,
}

impl LambdaInvoker {
    /// An invoker using `client`.
    pub fn new(client: Client) -> Self {
        LambdaInvoker { client }
    }
}

impl FunctionInvoker for LambdaInvoker {
    type Error = AwsError;

    async fn invoke(&self, function: &str, payload_json: &str) -> Result<(), AwsError> {
        let err = |message: Failure| AwsError::Lambda {
            function: function.to_string(),
            message,
        };
        let out = self
            .client
            .invoke()
            .function_name(function)
            .invocation_type(InvocationType::Event)
            .payload(Blob::new(payload_json.as_bytes()))
            .send()
            .await
            .map_err(|e| err(Failure::sdk(e)))?;
        if let Some(error) = out.function_error {
            return Err(err(format!("function error {error:?}").into()));
        }
        Ok(())
    }
}
