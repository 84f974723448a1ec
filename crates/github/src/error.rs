//! The one error type of the GitHub adapter.

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
