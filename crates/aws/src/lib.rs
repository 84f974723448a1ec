//! AWS adapters of the core's ports: SSM Parameter Store ([`SsmParamStore`]),
//! ECS Fargate tasks ([`EcsTaskLauncher`]) and SES v2 mail ([`SesMailer`]). Endpoints come from the SDK's usual
//! configuration (`AWS_ENDPOINT_URL` points them at LocalStack locally).

mod ecs;
mod error;
mod ses;
mod ssm;

pub use ecs::{EcsConfig, EcsTaskLauncher, TaskDefinitionRef};
pub use error::AwsError;
pub use ses::SesMailer;
pub use ssm::SsmParamStore;

/// The SDK crates the adapters are built on, so binaries construct clients
/// without depending on each service crate themselves.
pub mod sdk {
    pub use aws_sdk_ecs as ecs;
    pub use aws_sdk_sesv2 as sesv2;
    pub use aws_sdk_ssm as ssm;
}
