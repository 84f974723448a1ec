//! AWS adapters of the core's ports: SSM Parameter Store ([`SsmParamStore`]),
//! ECS Fargate tasks ([`EcsTaskLauncher`]), S3 saved plans ([`S3ArtifactStore`])
//! Lambda invokes ([`LambdaInvoker`]), SES v2 mail ([`SesMailer`]), STS
//! role assumption ([`StsRoleAssumer`]), SNS notifications
//! ([`SnsNotifications`]) and KMS task-token encryption
//! ([`KmsTokenCipher`]). Endpoints come from the SDK's usual
//! configuration (`AWS_ENDPOINT_URL` points them at LocalStack locally).

mod ecs;
mod error;
mod kms;
mod lambda;
pub mod runtime;
mod s3;
mod ses;
mod sns;
mod ssm;
mod sts;

pub use ecs::{EcsConfig, EcsTaskLauncher, TaskDefinitionRef};
pub use error::{AwsError, Failure};
pub use kms::KmsTokenCipher;
pub use lambda::LambdaInvoker;
pub use s3::S3ArtifactStore;
pub use ses::SesMailer;
pub use sns::{NOTIFICATION_TOPIC_ENV, SnsNotifications};
pub use ssm::SsmParamStore;
pub use sts::StsRoleAssumer;

/// The SDK crates the adapters are built on, so binaries construct clients
/// without depending on each service crate themselves.
pub mod sdk {
    pub use aws_sdk_ecs as ecs;
    pub use aws_sdk_kms as kms;
    pub use aws_sdk_lambda as lambda;
    pub use aws_sdk_s3 as s3;
    pub use aws_sdk_sesv2 as sesv2;
    pub use aws_sdk_sns as sns;
    pub use aws_sdk_ssm as ssm;
    pub use aws_sdk_sts as sts;
}
