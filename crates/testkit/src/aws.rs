//! AWS SDK clients of the project's LocalStack (fake keys, its region) and the
//! throwaway Step Functions state machines the tests run there.

use aws_config::SdkConfig;
use aws_sdk_sfn::config::{BehaviorVersion, Credentials, Region, SharedCredentialsProvider};

use crate::{localstack_endpoint, unique};

/// The region every test client and resource uses.
pub const REGION: &str = "us-east-1";

/// The execution role of test state machines (LocalStack checks only its form).
pub const SFN_ROLE: &str = "arn:aws:iam::000000000000:role/live-ci-sfn";

/// The SDK configuration of the project's LocalStack, for any service's
/// `Client::new`: STS there assumes any role, as a target account's trust
/// policy would let the task role do. Panics naming the reason when LocalStack
/// cannot be started.
pub fn sdk_config() -> SdkConfig {
    let endpoint =
        localstack_endpoint().unwrap_or_else(|e| panic!("localstack is needed here: {e}"));
    sdk_config_for(&endpoint)
}

/// [`sdk_config`] for a LocalStack at `endpoint`.
pub fn sdk_config_for(endpoint: &str) -> SdkConfig {
    SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(REGION))
        .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
            "test", "test", None, None, "static",
        )))
        .endpoint_url(endpoint)
        .build()
}

/// A Step Functions client of LocalStack.
pub fn sfn_client() -> aws_sdk_sfn::Client {
    aws_sdk_sfn::Client::new(&sdk_config())
}

/// Creates a state machine named `prefix`-unique with `definition` (ASL JSON)
/// and returns its ARN.
pub async fn state_machine(sfn: &aws_sdk_sfn::Client, prefix: &str, definition: &str) -> String {
    sfn.create_state_machine()
        .name(unique(prefix))
        .definition(definition)
        .role_arn(SFN_ROLE)
        .send()
        .await
        .unwrap_or_else(|e| panic!("create state machine {prefix}: {e:?}"))
        .state_machine_arn
}
