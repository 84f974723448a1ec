//! The one error type of the GitHub adapter.

use live_ci_core::port::{Classify, ErrorKind};

/// What can go wrong calling GitHub. Messages name the request and the status.
#[derive(Debug, thiserror::Error)]
pub enum GitHubError {
    #[error("invalid github api base url {url:?}: {reason}")]
    BaseUrl { url: String, reason: String },
    #[error("invalid repository {0:?}: expected \"owner/name\"")]
    Repository(String),
    #[error("invalid github login {0:?}")]
    Login(String),
    #[error("invalid branch name {0:?}")]
    Branch(String),
    #[error("invalid commit {0:?}: expected 40 hex digits")]
    Commit(String),
    #[error("{method} {path}: {source}")]
    Transport {
        method: String,
        path: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{method} {path}: github answered {status}: {message}")]
    Status {
        method: String,
        path: String,
        status: u16,
        message: String,
    },
    #[error("{method} {path}: cannot decode github's answer: {message}")]
    Decode {
        method: String,
        path: String,
        message: String,
    },
}

impl Classify for GitHubError {
    /// Retryable: GitHub unreachable or slow, a 5xx, a rate limit (429, or a
    /// 403 whose message says so) that outlasted the client's own retries.
    fn kind(&self) -> ErrorKind {
        let retryable = match self {
            GitHubError::Transport { source, .. } => {
                source.is_connect() || source.is_timeout() || source.is_body()
            }
            GitHubError::Status {
                status, message, ..
            } => {
                *status >= 500
                    || *status == 429
                    || (*status == 403 && message.to_lowercase().contains("rate limit"))
            }
            _ => false,
        };
        if retryable {
            ErrorKind::Retryable
        } else {
            ErrorKind::Permanent
        }
    }
}
