//! The one error type of the metadb crate.

use live_ci_core::CoreError;
use live_ci_core::port::{Classify, ErrorKind};

/// Why a metadb call failed. Guarded updates that find nothing to do are not
/// errors: they report it in their result.
#[derive(Debug, thiserror::Error)]
pub enum MetadbError {
    /// The input was refused before anything was written.
    #[error(transparent)]
    Invalid(#[from] CoreError),
    /// `code` is the SQLSTATE when the server answered; `message` the server's
    /// own text (or the cause's), `source` the driver's error itself (its
    /// `DbError` with position, constraint, table…), absent only for an error
    /// built without one.
    #[error("postgres: {message}")]
    Postgres {
        /// The server's text, or the cause's.
        message: String,
        /// The five-character SQLSTATE, when the server answered.
        code: Option<String>,
        /// The driver's error.
        source: Option<tokio_postgres::Error>,
    },
    /// No connection could be had from the pool (it could not be built, a
    /// connect failed, or the wait timed out); retryable.
    #[error("connection pool: {0}")]
    Pool(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A statement on a transaction after its commit or rollback: a bug in
    /// the caller, which fails the same way however often it is retried.
    #[error("transaction already finished")]
    TransactionFinished,
    /// The database URL's TLS settings are unusable.
    #[error("invalid database url {url:?}: {message}")]
    Url {
        /// The URL, as given.
        url: String,
        /// What is wrong with it.
        message: String,
    },
    /// `retryable`: the transaction may be retried (a deadlock); `transient`:
    /// the call failed on the way (throttling, a 5xx, a timeout). `source` is
    /// the SDK's error (an `SdkError` of the operation), absent when the
    /// answer itself was unusable.
    #[error("rds data api: {message}")]
    DataApi {
        /// The Data API's message (or what was unusable in its answer).
        message: String,
        /// The transaction may be retried as a whole (a deadlock).
        retryable: bool,
        /// The call failed on the way and may be repeated.
        transient: bool,
        /// The SDK's error.
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The Aurora Serverless v2 cluster was still resuming from an auto-pause
    /// when the caller's deadline for it passed (`DatabaseResumingException`).
    #[error(
        "rds data api: DatabaseResumingException: cluster {cluster} still resuming after {waited:.1?} (deadline {deadline:?}): {message}"
    )]
    DatabaseResuming {
        /// The cluster's ARN.
        cluster: String,
        /// How long the call kept retrying.
        waited: std::time::Duration,
        /// The caller's deadline for the resume.
        deadline: std::time::Duration,
        /// The Data API's last message.
        message: String,
    },
    /// A Data API row does not have the shape the statement's reader expects.
    #[error("cannot decode a row of {statement:?}: {message}")]
    Decode {
        /// The statement's first line.
        statement: String,
        /// What did not decode.
        message: String,
    },
    /// A statement names a `:parameter` the call did not bind.
    #[error("statement needs parameter {name:?}, which was not given")]
    MissingParameter {
        /// The parameter's name, without `:`.
        name: String,
    },
    /// A versioned migration failed: it is not recorded as applied.
    #[error("migration {version} ({name}): {message}")]
    Migration {
        /// The migration's number.
        version: u32,
        /// The migration's name (`0001_metadb`: its file name without `.sql`).
        name: String,
        /// The server's error.
        message: String,
    },
    /// The database disagrees with what was just written: nothing is committed.
    #[error("{0}")]
    Inconsistent(String),
    /// terra-run's start found a schema older than the one it was built for:
    /// it does not migrate (its role may not), the migrator has not yet.
    #[error(
        "metadb schema is at migration {found}, this binary needs {expected}: not migrated yet"
    )]
    SchemaBehind {
        /// The migration this binary was built with.
        expected: u32,
        /// The newest migration applied.
        found: u32,
    },
    /// A function file failed to apply (`functions/<name>.sql`): nothing of
    /// the migration is committed.
    #[error("function {name:?} (crates/metadb/functions/{name}.sql): {message}")]
    Function {
        /// The function file's name.
        name: String,
        /// The server's error.
        message: String,
    },
    /// terra-run's or drift's start found the metadb's functions older than
    /// the ones it was built with: the migrator has not applied them yet.
    #[error("metadb functions are at {found}, this binary needs {expected}: not migrated yet")]
    FunctionsBehind {
        /// This binary's functions: revision and hash.
        expected: String,
        /// The metadb's recorded functions: revision and hash.
        found: String,
    },
    /// The metadb's functions have this binary's revision under another hash:
    /// two builds claim one revision, and neither may run on the other's.
    #[error(
        "metadb functions are {found}, this binary has {expected}: two builds claim one revision"
    )]
    FunctionsConflict {
        /// This binary's functions: revision and hash.
        expected: String,
        /// The metadb's recorded functions: revision and hash.
        found: String,
    },
    /// A login's secret could not be read or written.
    #[error("secret {secret:?}: {message}")]
    Secret {
        /// The secret's name or ARN.
        secret: String,
        /// What failed.
        message: String,
    },
    /// A login could not be set up.
    #[error("login {login:?}: {message}")]
    Login {
        /// The login's user name (empty when the URL names none).
        login: String,
        /// What failed.
        message: String,
    },
}

impl MetadbError {
    /// The Data API refused a result over its response size limit (1 MiB):
    /// the same read in smaller pages succeeds.
    pub fn is_response_too_large(&self) -> bool {
        matches!(self, MetadbError::DataApi { message, .. }
            if message.contains("more than the allowed response size limit"))
    }

    /// A deadlock or serialization failure: the transaction may be retried.
    pub fn is_retryable(&self) -> bool {
        match self {
            MetadbError::Postgres { code, .. } => {
                matches!(code.as_deref(), Some("40P01") | Some("40001"))
            }
            MetadbError::DataApi { retryable, .. } => *retryable,
            _ => false,
        }
    }
}

impl Classify for MetadbError {
    /// Retryable: a deadlock or serialization failure, a connection that
    /// failed or was lost (no SQLSTATE, class 08), a server short of resources
    /// (53) or shutting down (57P), the Data API throttled or unavailable.
    /// Everything else (refused input, constraint violations, decoding) fails
    /// the same way again.
    fn kind(&self) -> ErrorKind {
        let retryable = match self {
            MetadbError::Postgres { code: None, .. } | MetadbError::Pool(_) => true,
            MetadbError::Postgres {
                code: Some(code), ..
            } => ["08", "40", "53", "57P"]
                .iter()
                .any(|class| code.starts_with(class)),
            MetadbError::DataApi {
                retryable,
                transient,
                ..
            } => *retryable || *transient,
            // Resumed a little later: the caller's own retry (the next event,
            // Step Functions' Retry) finds it up.
            MetadbError::DatabaseResuming { .. } => true,
            _ => false,
        };
        if retryable {
            ErrorKind::Retryable
        } else {
            ErrorKind::Permanent
        }
    }
}

impl From<tokio_postgres::Error> for MetadbError {
    /// The server's own message (tokio-postgres displays only "db error").
    fn from(e: tokio_postgres::Error) -> Self {
        match e.as_db_error() {
            Some(db) => {
                let mut message = db.message().to_string();
                if let Some(detail) = db.detail() {
                    message = format!("{message}: {detail}");
                }
                MetadbError::Postgres {
                    message,
                    code: Some(db.code().code().to_string()),
                    source: Some(e),
                }
            }
            None => {
                // The cause (a refused certificate, a reset connection) is in the
                // source chain; tokio-postgres' own text names only the step.
                let mut message = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(cause) = source {
                    let text = cause.to_string();
                    if !message.contains(&text) {
                        message = format!("{message}: {text}");
                    }
                    source = cause.source();
                }
                MetadbError::Postgres {
                    message,
                    code: e.code().map(|c| c.code().to_string()),
                    source: Some(e),
                }
            }
        }
    }
}

/// The result of every metadb call.
pub type Result<T, E = MetadbError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use deadpool_postgres::{PoolError, TimeoutType};

    #[test]
    fn a_finished_transaction_is_permanent_and_a_pool_timeout_retryable() {
        assert_eq!(
            MetadbError::TransactionFinished.kind(),
            ErrorKind::Permanent
        );
        for waited in [TimeoutType::Wait, TimeoutType::Create, TimeoutType::Recycle] {
            let timeout = MetadbError::Pool(Box::new(PoolError::Timeout(waited)));
            assert_eq!(timeout.kind(), ErrorKind::Retryable, "{timeout}");
        }
    }
}
