//! SSM Parameter Store as the core's [`ParamStore`].

use aws_sdk_ssm::Client;
use aws_sdk_ssm::types::ParameterType;
use live_ci_core::port::ParamStore;

use crate::error::{AwsError, Failure};

/// Reads and writes SSM parameters (SecureStrings decrypted).
#[derive(Debug, Clone)]
pub struct SsmParamStore {
    client: Client,
}

impl SsmParamStore {
    /// A store using `client`.
    pub fn new(client: Client) -> Self {
        SsmParamStore { client }
    }
}

impl ParamStore for SsmParamStore {
    type Error = AwsError;

    async fn get(&self, name: &str) -> Result<String, AwsError> {
        let err = |message: Failure| AwsError::Ssm {
            operation: "get-parameter",
            name: name.to_string(),
            message,
        };
        let out = self
            .client
            .get_parameter()
            .name(name)
            .with_decryption(true)
            .send()
            .await
            .map_err(|e| err(Failure::sdk(e)))?;
        out.parameter
            .and_then(|p| p.value)
            .ok_or_else(|| err("the parameter has no value".into()))
    }

    async fn put(&self, name: &str, value: &str) -> Result<(), AwsError> {
        self.client
            .put_parameter()
            .name(name)
            .value(value)
            .r#type(ParameterType::String)
            .overwrite(true)
            .send()
            .await
            .map_err(|e| AwsError::Ssm {
                operation: "put-parameter",
                name: name.to_string(),
                message: Failure::sdk(e),
            })?;
        Ok(())
    }
}
