//! The one error type of the core crate.

/// Everything that can go wrong in the domain. Messages are lowercase and quote
/// the offending value; file positions are `file:line:col`.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum CoreError {
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath { path: String, reason: String },
    #[error("cannot read {path:?}: {message}")]
    Io { path: String, message: String },
    #[error("{file}:{line}: {message}")]
    AccountConfig {
        file: String,
        line: usize,
        message: String,
    },
    #[error("{file}: account {account:?}, field {field}: {message}")]
    AccountInvalid {
        file: String,
        account: String,
        field: String,
        message: String,
    },
    /// An entry of `voter_github_logins` (the e-mail -> GitHub login map).
    #[error("{file}: voter_github_logins entry {entry:?}: {message}")]
    VoterLoginInvalid {
        file: String,
        entry: String,
        message: String,
    },
    #[error("run: {field}: {message}")]
    InvalidRun { field: String, message: String },
    #[error("execution {execution:?}: {field}: {message}")]
    InvalidExecution {
        execution: String,
        field: String,
        message: String,
    },
    #[error("git: {0}")]
    Vcs(String),
    #[error("notification format {0:?} is not slack, teams or json")]
    NotificationFormat(String),
    #[error("the policy directory {0:?} is not in the trunk (policy_dir)")]
    PolicyDirMissing(String),
}

pub type Result<T, E = CoreError> = std::result::Result<T, E>;
