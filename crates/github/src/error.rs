//! The one error type of the GitHub adapter.

use live_ci_core::port::{Classify, ErrorKind};

use crate::permissions::{Grant, Job};

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
    /// A request outside the job's permissions (`crate::permissions`), refused
    /// before it is sent.
    #[error("{job} may not {method} {path}: {}", needs_text(.needs, *.job))]
    NotPermitted {
        job: Job,
        method: String,
        path: String,
        needs: Option<Grant>,
    },
    /// The GitHub App could not authenticate: its key, the token exchange, or
    /// GitHub refusing a fresh installation token.
    #[error("github app {app_id}, installation {installation_id}: {message}")]
    App {
        app_id: u64,
        installation_id: u64,
        message: String,
        /// The cause was GitHub unreachable or overloaded (worth a retry).
        retryable: bool,
    },
    /// A module-source token that may not be asked for: with a personal
    /// token (never given to repository code), from a job that runs none, or
    /// for a repository of another owner than the App's installation.
    #[error("module source token: {0}")]
    ModuleSources(String),
    /// A credential's parameter could not be read.
    #[error("reading parameter {name:?}: {message}")]
    Param {
        name: String,
        message: String,
        retryable: bool,
    },
}

fn needs_text(needs: &Option<Grant>, job: Job) -> String {
    match needs {
        Some((permission, access)) => format!(
            "it needs {permission}: {access}, which is not in {job}'s permissions (crates/github/src/permissions.rs)"
        ),
        None => "no github permission is known for this request (crates/github/src/permissions.rs)"
            .to_string(),
    }
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
            GitHubError::App { retryable, .. } | GitHubError::Param { retryable, .. } => *retryable,
            _ => false,
        };
        if retryable {
            ErrorKind::Retryable
        } else {
            ErrorKind::Permanent
        }
    }
}
