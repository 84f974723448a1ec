//! The one error type of the git adapter.

/// What can go wrong talking to git. Messages quote the revision or path at fault.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// git could not be started, or the directory a clone goes into could
    /// not be created or cleared.
    #[error("cannot run git in {dir:?}: {source}")]
    Spawn {
        /// The directory git was to run in (or to be created/removed).
        dir: String,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// git ran and exited non-zero (or printed something unparseable).
    #[error("git {args} failed in {dir:?}: {stderr}")]
    Command {
        /// The directory git ran in.
        dir: String,
        /// The subcommand and its arguments, space-separated (no token).
        args: String,
        /// git's trimmed stderr, or what was wrong with its output.
        stderr: String,
    },
    /// The directory is not a work tree whose HEAD is a detached full commit id.
    #[error("not a checkout with a detached head: {path:?} {message}")]
    NotACheckout {
        /// The path inspected (the directory, its `.git` or its `HEAD`).
        path: String,
        /// What was found there instead.
        message: String,
    },
    /// The work tree's files differ from the commit's tree.
    #[error("the checkout is not commit {commit}'s tree: {paths:?} differ; nothing was run")]
    TreeMismatch {
        /// The commit the checkout claims to be.
        commit: String,
        /// The repository-relative paths that differ.
        paths: Vec<String>,
    },
    /// The revision (as given) names no commit this clone or remote has.
    #[error("unknown revision {0:?}")]
    UnknownRevision(String),
    /// git listed a path that is not UTF-8 (shown lossily).
    #[error("git printed a path that is not valid UTF-8 in {0:?}")]
    NonUtf8(String),
    /// The file is not in the revision's tree.
    #[error("no such file {path:?} at revision {rev:?}")]
    MissingFile {
        /// The revision read.
        rev: String,
        /// The repository-relative path asked for.
        path: String,
    },
    /// A core error passed through (a path git printed that is not a valid
    /// repository path).
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
