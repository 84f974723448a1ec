//! The one error type of the git adapter.

/// What can go wrong talking to git. Messages quote the revision or path at fault.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot run git in {dir:?}: {source}")]
    Spawn {
        dir: String,
        #[source]
        source: std::io::Error,
    },
    #[error("git {args} failed in {dir:?}: {stderr}")]
    Command {
        dir: String,
        args: String,
        stderr: String,
    },
    #[error("not a checkout with a detached head: {path:?} {message}")]
    NotACheckout { path: String, message: String },
    #[error("the checkout is not commit {commit}'s tree: {paths:?} differ; nothing was run")]
    TreeMismatch { commit: String, paths: Vec<String> },
    #[error("unknown revision {0:?}")]
    UnknownRevision(String),
    #[error("git printed a path that is not valid UTF-8 in {0:?}")]
    NonUtf8(String),
    #[error("no such file {path:?} at revision {rev:?}")]
    MissingFile { rev: String, path: String },
    #[error(transparent)]
    Core(#[from] live_ci_core::CoreError),
}

impl From<GitError> for live_ci_core::CoreError {
    fn from(e: GitError) -> Self {
        match e {
            GitError::Core(c) => c,
            other => live_ci_core::CoreError::Vcs(other.to_string()),
        }
    }
}
