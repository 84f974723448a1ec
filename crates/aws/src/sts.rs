//! STS as the core's [`RoleAssumer`]: the task assumes the unit's account role
//! itself, so the child process gets that role's temporary credentials and
//! never the task role's.

use aws_sdk_sts::Client;
use live_ci_core::port::{RoleAssumer, TemporaryCredentials};

use crate::error::{AwsError, Failure};

/// Assumes roles with STS.
#[derive(Debug, Clone)]
pub struct StsRoleAssumer {
    client: Client,
}

impl StsRoleAssumer {
    /// An assumer using `client`.
    pub fn new(client: Client) -> Self {
        StsRoleAssumer { client }
    }
}

impl RoleAssumer for StsRoleAssumer {
    type Error = AwsError;

    async fn assume_role(
        &self,
        role_arn: &str,
        session_name: &str,
    ) -> Result<TemporaryCredentials, AwsError> {
        let err = |message: Failure| AwsError::Sts {
            role_arn: role_arn.to_string(),
            message,
        };
        let out = self
            .client
            .assume_role()
            .role_arn(role_arn)
            .role_session_name(session_name)
            .send()
            .await
            .map_err(|e| err(Failure::sdk(e)))?;
        let c = out
            .credentials
            .ok_or_else(|| err("the answer carries no credentials".into()))?;
        Ok(TemporaryCredentials {
            role_arn: role_arn.to_string(),
            access_key_id: c.access_key_id,
            secret_access_key: c.secret_access_key,
            session_token: c.session_token,
            expiration: c.expiration.to_millis().ok(),
        })
    }
}
