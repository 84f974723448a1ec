//! The one error type of the AWS adapters.

/// A failed AWS call, naming the operation and the resource.
#[derive(Debug, thiserror::Error)]
pub enum AwsError {
    #[error("ssm {operation} {name:?}: {message}")]
    Ssm {
        operation: &'static str,
        name: String,
        message: String,
    },
    #[error("ecs run-task for {kind}: {message}")]
    Ecs { kind: String, message: String },
    #[error("s3 {operation} {uri:?}: {message}")]
    S3 {
        operation: &'static str,
        uri: String,
        message: String,
    },
    #[error("lambda invoke {function:?}: {message}")]
    Lambda { function: String, message: String },
    #[error("ses send-email to {to:?}: {message}")]
    Ses { to: String, message: String },
    #[error("sts assume-role {role_arn:?}: {message}")]
    Sts { role_arn: String, message: String },
    /// Never carries the plaintext: only the key, the execution and KMS's answer.
    #[error("kms {operation} with key {key_id:?} for execution {execution_id:?}: {message}")]
    Kms {
        operation: &'static str,
        key_id: String,
        execution_id: String,
        message: String,
    },
    #[error("no task definition configured for {0:?}")]
    NoTaskDefinition(String),
}
