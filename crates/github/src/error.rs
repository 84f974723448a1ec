//! The one error type of the GitHub adapter.

use live_ci_core::port::{Classify, ErrorKind};

use crate::permissions::{Grant, Job};

/// What can go wrong calling GitHub. Messages name the request and the status.
#[derive(Debug, thiserror::Error)]
pub enum GitHubError {
    /// The API base URL does not parse, or is not http(s).
    #[error("invalid github api base url {url:?}: {reason}")]
    BaseUrl {
        /// The base URL as configured.
        url: String,
        /// The parser's complaint, or `not http(s)`.
        reason: String,
    },
    /// A repository name that is not `owner/name` (as given).
    #[error("invalid repository {0:?}: expected \"owner/name\"")]
    Repository(String),
    /// A login, organization or team slug that could change the request
    /// path it goes into (as given); nothing was sent.
    #[error("invalid github login {0:?}")]
    Login(String),
    /// A branch name that cannot be put in a request path (as given).
    #[error("invalid branch name {0:?}")]
    Branch(String),
    /// A commit that is not a full object id (as given).
    #[error("invalid commit {0:?}: expected 40 hex digits")]
    Commit(String),
    /// The request got no answer (connection, TLS, timeout), or the HTTP
    /// client could not be built (method `BUILD`).
    #[error("{method} {path}: {source}")]
    Transport {
        /// The HTTP method.
        method: String,
        /// The path under the API base.
        path: String,
        /// reqwest's error.
        #[source]
        source: reqwest::Error,
    },
    /// GitHub answered with a non-success status (after the retries).
    #[error("{method} {path}: github answered {status}: {message}")]
    Status {
        /// The HTTP method.
        method: String,
        /// The path under the API base.
        path: String,
        /// The HTTP status code.
        status: u16,
        /// GitHub's `message`, or the body's first 200 characters.
        message: String,
    },
    /// GitHub's answer is not the JSON expected.
    #[error("{method} {path}: cannot decode github's answer: {message}")]
    Decode {
        /// The HTTP method.
        method: String,
        /// The path under the API base.
        path: String,
        /// What did not decode.
        message: String,
    },
    /// A request outside the job's permissions (`crate::permissions`), refused
    /// before it is sent.
    #[error("{job} may not {method} {path}: {}", needs_text(.needs, *.job))]
    NotPermitted {
        /// The job the client was built for.
        job: Job,
        /// The HTTP method.
        method: String,
        /// The path under the API base.
        path: String,
        /// The permission the request needs; `None` when the table knows no rule for it.
        needs: Option<Grant>,
    },
    /// The GitHub App could not authenticate: its key, the token exchange, or
    /// GitHub refusing a fresh installation token.
    #[error("github app {app_id}, installation {installation_id}: {message}")]
    App {
        /// The App's id.
        app_id: u64,
        /// The installation whose token was wanted.
        installation_id: u64,
        /// What failed, with the cause.
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
        /// The parameter's name.
        name: String,
        /// Parameter Store's error.
        message: String,
        /// Whether Parameter Store's error was retryable.
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
