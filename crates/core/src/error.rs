//! The one error type of the core crate.

/// Everything that can go wrong in the domain. Messages are lowercase and quote
/// the offending value; file positions are `file:line:col`.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum CoreError {
    /// A path that is not a safe repository-relative one (absolute, climbing
    /// above the root, or with characters live-ci refuses).
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A file of the tree could not be read.
    #[error("cannot read {path:?}: {message}")]
    Io {
        /// The path read (in the repository or on disk).
        path: String,
        /// The reader's error.
        message: String,
    },
    /// A configuration file (accounts, voter logins) is not JSON of the
    /// expected shape.
    #[error("{file}:{line}: {message}")]
    AccountConfig {
        /// The file's repository path.
        file: String,
        /// The line of the parse error (1-based).
        line: usize,
        /// The parser's message.
        message: String,
    },
    /// One account's entry breaks a rule (a name, a path, a threshold, …).
    #[error("{file}: account {account:?}, field {field}: {message}")]
    AccountInvalid {
        /// The accounts file's repository path.
        file: String,
        /// The account's `name`.
        account: String,
        /// The field at fault.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// An entry of `voter_github_logins` (the e-mail -> GitHub login map).
    #[error("{file}: voter_github_logins entry {entry:?}: {message}")]
    VoterLoginInvalid {
        /// The accounts file's repository path.
        file: String,
        /// The entry's e-mail address.
        entry: String,
        /// What is wrong with it.
        message: String,
    },
    /// A new run breaks a rule checked before anything is written.
    #[error("run: {field}: {message}")]
    InvalidRun {
        /// The field at fault.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// One execution of a new run breaks a rule checked before anything is written.
    #[error("execution {execution:?}: {field}: {message}")]
    InvalidExecution {
        /// The execution's id.
        execution: String,
        /// The field at fault.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// A version-control query failed (the message is git's).
    #[error("git: {0}")]
    Vcs(String),
    /// The configured notification format is not one live-ci writes.
    #[error("notification format {0:?} is not slack, teams or json")]
    NotificationFormat(String),
    /// The configured `policy_dir` does not exist at the trunk's commit.
    #[error("the policy directory {0:?} is not in the trunk (policy_dir)")]
    PolicyDirMissing(String),
}

/// A result whose error defaults to [`CoreError`].
pub type Result<T, E = CoreError> = std::result::Result<T, E>;
