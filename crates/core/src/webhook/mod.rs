//! GitHub webhooks: signature verification, the payloads live-ci reads, and the
//! decision of what a delivery asks the pipeline to do.

mod event;
mod route;
mod signature;
mod trust;
mod vote;

pub use route::{FilePattern, Route, not_planned_description, route};
pub use signature::{MIN_SECRET_BYTES, is_placeholder, secret_problem, sign, verify_signature};
pub use trust::{
    DEFAULT_PLAN_ASSOCIATIONS, KNOWN_ASSOCIATIONS, PLAN_COMMAND, PlanRequest, PullRequestHead,
    RepoPermission, TrustPolicy, may_have_write_access, plan_request, untrusted_reason,
};
pub use vote::{APPROVE_COMMAND, REJECT_COMMAND, VoteChoice, VoteCommand, vote_command};

/// Why a delivery is refused. Each maps to one HTTP status in the receiver.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    /// The delivery has no signature header.
    #[error("missing X-Hub-Signature-256 header")]
    MissingSignature,
    /// The signature header's value, which is not of the expected shape.
    #[error("X-Hub-Signature-256 {0:?} is not \"sha256=<64 hex digits>\"")]
    MalformedSignature(String),
    /// The signature is not the secret's HMAC of the body.
    #[error("signature does not match the body")]
    BadSignature,
    /// A signed body that does not parse as its event's payload.
    #[error("malformed {event:?} payload: {message}")]
    MalformedPayload {
        /// The `X-GitHub-Event` name.
        event: String,
        /// The parser's message.
        message: String,
    },
    /// The configured file pattern is not a valid regex.
    #[error("invalid file pattern {pattern:?}: {message}")]
    Pattern {
        /// The pattern as configured.
        pattern: String,
        /// The regex compiler's message.
        message: String,
    },
}
