//! The one error type of the workflow crate.

use live_ci_core::port::{Classify, ErrorKind};

/// Everything that can go wrong rendering or checking the state machine, or
/// decoding a payload. Messages are lowercase and quote the offending value;
/// the JSON decoder's and the SDK's own errors are kept as the source.
#[derive(Debug, thiserror::Error)]
pub enum WorkflowError {
    /// The template references variables that were not given.
    #[error("template variables not given: {}", quote_all(.0))]
    MissingVariables(Vec<String>),
    /// Variables were given that the template never references: a typo or a
    /// template that drifted from the caller.
    #[error("variables not used by the template: {}", quote_all(.0))]
    UnknownVariables(Vec<String>),
    /// Template syntax that Terraform's `templatefile` would read differently
    /// from [`crate::render`], or that is not a plain `${name}`.
    #[error("template line {line}: unsupported syntax {snippet:?}: {reason}")]
    UnsupportedSyntax {
        /// The template line, from 1.
        line: usize,
        /// The offending text, as written.
        snippet: String,
        /// What Terraform would do differently, or why it is refused.
        reason: &'static str,
    },
    /// A variable's value cannot be spliced into the template as given.
    #[error("variable {name:?}: invalid value {value:?}: {reason}")]
    InvalidValue {
        /// The variable's name.
        name: String,
        /// The value as given.
        value: String,
        /// Why it cannot be spliced in.
        reason: &'static str,
    },
    /// The rendered definition is not valid JSON.
    #[error("rendered definition is not json: {0}")]
    NotJson(#[source] serde_json::Error),
    /// The definition is JSON but not a state machine we accept.
    #[error("state machine definition: {0}")]
    Definition(String),
    /// A payload crossing a state boundary could not be decoded.
    #[error("{payload}: invalid json: {source}")]
    Payload {
        /// Which payload (the name [`crate::payload::decode`] was given).
        payload: &'static str,
        /// The JSON decoder's error.
        source: serde_json::Error,
    },
    /// A Step Functions call failed; `kind` as the SDK's retry classifier
    /// sees it (throttling, 5xx, no answer: retryable). `source` is the SDK's
    /// error (an `SdkError` of the operation), absent when the adapter itself
    /// refused (an ARN it cannot build, an existing execution's other input).
    #[error("step functions {operation}: {message}")]
    Sfn {
        /// The API operation (`start-execution`, `send-task-success`...).
        operation: &'static str,
        /// What failed, with the SDK's error context.
        message: String,
        /// Whether a retry can help.
        kind: ErrorKind,
        /// The SDK's error; `None` when the adapter refused by itself.
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

impl Classify for WorkflowError {
    fn kind(&self) -> ErrorKind {
        match self {
            WorkflowError::Sfn { kind, .. } => *kind,
            _ => ErrorKind::Permanent,
        }
    }
}

/// The result type of this crate.
pub type Result<T, E = WorkflowError> = std::result::Result<T, E>;

fn quote_all(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}
