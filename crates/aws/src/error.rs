//! The one error type of the AWS adapters.

use aws_sdk_ssm::config::http::HttpResponse;
use aws_sdk_ssm::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use live_ci_core::port::{Classify, ErrorKind};

/// A failed AWS call, naming the operation and the resource.
#[derive(Debug, thiserror::Error)]
pub enum AwsError {
    /// A Parameter Store call failed.
    #[error("ssm {operation} {name:?}: {message}")]
    Ssm {
        /// The operation (`get-parameter`, `put-parameter`).
        operation: &'static str,
        /// The parameter's name.
        name: String,
        /// What AWS answered, classified.
        #[source]
        message: Failure,
    },
    /// ECS RunTask failed or started no task.
    #[error("ecs run-task for {kind}: {message}")]
    Ecs {
        /// The kind of task being started (`pr-plan`, `terra-run`...).
        kind: String,
        /// What AWS answered, classified.
        #[source]
        message: Failure,
    },
    /// An S3 object could not be written or read.
    #[error("s3 {operation} {uri:?}: {message}")]
    S3 {
        /// The operation (`put-object`, `get-object`).
        operation: &'static str,
        /// The object, `s3://bucket/key` (with its version when one was asked for).
        uri: String,
        /// What AWS answered, classified.
        #[source]
        message: Failure,
    },
    /// An asynchronous Lambda invoke failed.
    #[error("lambda invoke {function:?}: {message}")]
    Lambda {
        /// The function's name or ARN.
        function: String,
        /// What AWS answered, classified.
        #[source]
        message: Failure,
    },
    /// SES refused or failed a mail.
    #[error("ses send-email to {to:?}: {message}")]
    Ses {
        /// The recipient's address.
        to: String,
        /// What AWS answered, classified.
        #[source]
        message: Failure,
    },
    /// An SNS publish failed.
    #[error("sns publish to {topic:?}: {message}")]
    Sns {
        /// The topic's ARN.
        topic: String,
        /// What AWS answered, classified.
        #[source]
        message: Failure,
    },
    /// STS refused or failed to assume a role.
    #[error("sts assume-role {role_arn:?}: {message}")]
    Sts {
        /// The role's ARN.
        role_arn: String,
        /// What AWS answered, classified.
        #[source]
        message: Failure,
    },
    /// Never carries the plaintext: only the key, the execution and KMS's answer.
    #[error("kms {operation} with key {key_id:?} for execution {execution_id:?}: {message}")]
    Kms {
        /// The operation (`encrypt`, `decrypt`).
        operation: &'static str,
        /// The KMS key (id, ARN or alias) as configured.
        key_id: String,
        /// The execution whose task token it was (the encryption context).
        execution_id: String,
        /// What AWS answered, classified.
        #[source]
        message: Failure,
    },
    /// A task of a kind this binary was not configured to start (the kind).
    #[error("no task definition configured for {0:?}")]
    NoTaskDefinition(String),
}

impl Classify for AwsError {
    fn kind(&self) -> ErrorKind {
        match self {
            AwsError::Ssm { message, .. }
            | AwsError::Ecs { message, .. }
            | AwsError::S3 { message, .. }
            | AwsError::Lambda { message, .. }
            | AwsError::Ses { message, .. }
            | AwsError::Sns { message, .. }
            | AwsError::Sts { message, .. }
            | AwsError::Kms { message, .. } => message.kind,
            AwsError::NoTaskDefinition(_) => ErrorKind::Permanent,
        }
    }
}

/// Why an AWS call failed: the SDK's whole error chain as one line (the
/// service's code and message included), whether retrying can help, and the
/// SDK error itself as the source.
#[derive(Debug)]
pub struct Failure {
    message: String,
    kind: ErrorKind,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl Failure {
    /// An SDK call's failure, classified as the SDK's retry classifier does
    /// (throttling and transient codes, 5xx, no answer at all: retryable).
    pub fn sdk<E>(error: SdkError<E, HttpResponse>) -> Failure
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        Failure {
            message: DisplayErrorContext(&error).to_string(),
            kind: ErrorKind::of_aws_call(
                !matches!(error, SdkError::ConstructionFailure(_)),
                error.code(),
                error.raw_response().map(|r| r.status().as_u16()),
            ),
            source: Some(Box::new(error)),
        }
    }

    /// A failure found in an answer (no value, a failed task): the same call
    /// answers the same way.
    pub fn permanent(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            kind: ErrorKind::Permanent,
            source: None,
        }
    }

    /// A failure that is not the SDK's but keeps its own error as the source.
    pub fn other(
        kind: ErrorKind,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> Failure {
        Failure {
            message: error.to_string(),
            kind,
            source: Some(Box::new(error)),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::permanent(message)
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Failure {
        Failure::permanent(message)
    }
}
