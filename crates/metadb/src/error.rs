//! The one error type of the metadb crate.

use live_ci_core::CoreError;

/// Why a metadb call failed. Guarded updates that find nothing to do are not
/// errors: they report it in their result.
#[derive(Debug, thiserror::Error)]
pub enum MetadbError {
    /// The input was refused before anything was written.
    #[error(transparent)]
    Invalid(#[from] CoreError),
    #[error("postgres: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    #[error("connection pool: {0}")]
    Pool(String),
    #[error("invalid database url {url:?}: {message}")]
    Url { url: String, message: String },
    #[error("rds data api: {message}")]
    DataApi { message: String, retryable: bool },
    #[error("cannot decode a row of {statement:?}: {message}")]
    Decode { statement: String, message: String },
    #[error("statement needs parameter {name:?}, which was not given")]
    MissingParameter { name: String },
    #[error("migration {version} ({name}): {message}")]
    Migration {
        version: u32,
        name: String,
        message: String,
    },
    /// The database disagrees with what was just written: nothing is committed.
    #[error("{0}")]
    Inconsistent(String),
}

impl MetadbError {
    /// A deadlock or serialization failure: the transaction may be retried.
    pub fn is_retryable(&self) -> bool {
        match self {
            MetadbError::Postgres(e) => e.code().is_some_and(|c| {
                *c == tokio_postgres::error::SqlState::T_R_DEADLOCK_DETECTED
                    || *c == tokio_postgres::error::SqlState::T_R_SERIALIZATION_FAILURE
            }),
            MetadbError::DataApi { retryable, .. } => *retryable,
            _ => false,
        }
    }
}

pub type Result<T, E = MetadbError> = std::result::Result<T, E>;
