//! The one error type of the CLI crate.

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The repository's files or the accounts file are invalid (core's message).
    #[error(transparent)]
    Core(#[from] live_ci_core::CoreError),
    /// Terragrunt discovery, filters or affected-unit detection failed.
    #[error(transparent)]
    Engine(#[from] live_ci_terragrunt::EngineError),
    /// Reading the repository's revisions with git failed.
    #[error(transparent)]
    Git(#[from] live_ci_git::GitError),
    #[error("cannot read {path:?}: {source}")]
    /// A file or directory could not be read, or stdout not written.
    Read {
        /// The file or directory (`<stdout>` for the output).
        path: String,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The arguments are inconsistent or incomplete (exit code 2).
    #[error("{0}")]
    Usage(String),
    /// Discovery problems, one message per line.
    #[error("{}", .0.join("\nerror: "))]
    Graph(Vec<String>),
    /// The metadb refused or failed a query.
    #[error("metadb: {0}")]
    Metadb(#[from] live_ci_metadb::MetadbError),
    /// The tokio runtime of a metadb command could not be built.
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    /// An operator control (abort, retry, unlock) was refused or failed.
    #[error(transparent)]
    Operate(live_ci_core::operate::OperateError),
    /// The JSON output could not be serialised.
    #[error("cannot encode output: {0}")]
    Encode(#[from] serde_json::Error),
}

impl CliError {
    /// 2 for bad usage, 1 for everything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            _ => 1,
        }
    }
}
