//! GitHub webhooks: signature verification, the payloads live-ci reads, and the
//! decision of what a delivery asks the pipeline to do.

mod event;
mod route;
mod signature;
mod trust;
mod vote;

pub use event::{
    CommentPayload, IssueCommentEvent, IssuePayload, PingEvent, PullRequestEvent,
    PullRequestPayload, RefPayload, RepositoryPayload, UserPayload,
};
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
    #[error("missing X-Hub-Signature-256 header")]
    MissingSignature,
    #[error("X-Hub-Signature-256 {0:?} is not \"sha256=<64 hex digits>\"")]
    MalformedSignature(String),
    #[error("signature does not match the body")]
    BadSignature,
    #[error("malformed {event:?} payload: {message}")]
    MalformedPayload { event: String, message: String },
    #[error("invalid file pattern {pattern:?}: {message}")]
    Pattern { pattern: String, message: String },
}
