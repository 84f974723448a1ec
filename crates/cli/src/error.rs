//! The one error type of the CLI crate.

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Core(#[from] live_ci_core::CoreError),
    #[error(transparent)]
    Engine(#[from] live_ci_terragrunt::EngineError),
    #[error(transparent)]
    Git(#[from] live_ci_git::GitError),
    #[error("cannot read {path:?}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Usage(String),
    /// Discovery problems, one message per line.
    #[error("{}", .0.join("\nerror: "))]
    Graph(Vec<String>),
    #[error("metadb: {0}")]
    Metadb(#[from] live_ci_metadb::MetadbError),
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    #[error(transparent)]
    Operate(live_ci_core::operate::OperateError),
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
