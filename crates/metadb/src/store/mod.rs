//! The metadb ports over any [`Sql`] connection: the transactions and guarded
//! statements both adapters share, so the Data API and PostgreSQL paths cannot
//! drift apart. One file per port, as `live_ci_core::port` has them: runs
//! ([`RunStore`](live_ci_core::port::RunStore)), executions, the sweep, the
//! deliveries log, approvals, the operator's run control, deploy comments and
//! drift; this file holds the [`Store`] they share and its decoding helpers.

use serde::de::DeserializeOwned;

use crate::error::{MetadbError, Result};
use crate::migrate::migrate;
use crate::sql::{Param, Params, Sql};

mod approvals;
mod deliveries;
mod deploy_comments;
mod drift;
mod executions;
mod run_control;
mod runs;
mod sweep;

pub(crate) use executions::finish_tx;
pub(crate) use runs::{checkout_param, insert_run_executions_tx};

/// Attempts of a transaction that hit a deadlock or serialization failure.
pub(crate) const MAX_ATTEMPTS: u32 = 4;

/// The metadb over one connection kind.
#[derive(Debug, Clone)]
pub struct Store<S> {
    sql: S,
}

/// Runs `$body` (an expression using the transaction `$tx`, evaluating to a
/// future) in a transaction, retrying deadlocks and serialization failures.
macro_rules! in_tx {
    ($sql:expr, |$tx:ident| $body:expr) => {{
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut $tx = $sql.begin().await?;
            let result = $body.await;
            match result {
                Ok(value) => match $tx.commit().await {
                    Ok(()) => break Ok(value),
                    Err(e) if e.is_retryable() && attempt < $crate::store::MAX_ATTEMPTS => continue,
                    Err(e) => break Err(e),
                },
                Err(e) => {
                    let _ = $tx.rollback().await;
                    if e.is_retryable() && attempt < $crate::store::MAX_ATTEMPTS {
                        continue;
                    }
                    break Err(e);
                }
            }
        }
    }};
}
pub(crate) use in_tx;

impl<S: Sql> Store<S> {
    /// The store over connection `sql`.
    pub fn new(sql: S) -> Self {
        Store { sql }
    }

    /// The connection, for statements the port does not cover (tests, tools).
    pub fn sql(&self) -> &S {
        &self.sql
    }

    /// Applies missing migrations, then the function files when the
    /// database's set is older; returns the versions applied.
    pub async fn migrate(&self) -> Result<Vec<u32>> {
        migrate(&self.sql).await
    }

    /// One statement that is a whole transaction of its own (a call of one of
    /// migration 0010's functions), run again after a deadlock or
    /// serialization failure, which rolled all of it back.
    async fn query_retrying(&self, sql: &str, params: Params<'_>) -> Result<Vec<String>> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.sql.query(sql, params).await {
                Err(e) if e.is_retryable() && attempt < MAX_ATTEMPTS => continue,
                done => return done,
            }
        }
    }

    /// The one row of a statement that always returns one.
    async fn query_one(&self, sql: &str, params: Params<'_>) -> Result<String> {
        let rows = self.query_retrying(sql, params).await?;
        rows.into_iter().next().ok_or_else(|| no_row(sql))
    }
}

pub(crate) fn decode<T: DeserializeOwned>(statement: &str, row: &str) -> Result<T> {
    serde_json::from_str(row).map_err(|e| MetadbError::Decode {
        statement: statement.lines().next().unwrap_or_default().to_string(),
        message: format!("{e} in {row:?}"),
    })
}

pub(crate) fn decode_all<T: DeserializeOwned>(statement: &str, rows: &[String]) -> Result<Vec<T>> {
    rows.iter().map(|r| decode(statement, r)).collect()
}

pub(crate) fn decode_first<T: DeserializeOwned>(
    statement: &str,
    rows: &[String],
) -> Result<Option<T>> {
    rows.first().map(|r| decode(statement, r)).transpose()
}

pub(crate) fn parse_id(statement: &str, row: &str) -> Result<i64> {
    row.parse().map_err(|_| MetadbError::Decode {
        statement: statement.lines().next().unwrap_or_default().to_string(),
        message: format!("{row:?} is not an id"),
    })
}

pub(crate) fn json<T: serde::Serialize + ?Sized>(value: &T) -> Result<Param> {
    serde_json::to_string(value)
        .map(Param::Json)
        .map_err(|e| MetadbError::Inconsistent(format!("cannot encode parameter: {e}")))
}

pub(crate) fn int(n: u64, field: &str) -> Result<Param> {
    i64::try_from(n).map(Param::Int).map_err(|_| {
        MetadbError::Invalid(live_ci_core::CoreError::InvalidRun {
            field: field.to_string(),
            message: format!("{n} is too large"),
        })
    })
}

fn no_row(statement: &str) -> MetadbError {
    MetadbError::Decode {
        statement: statement.lines().next().unwrap_or_default().to_string(),
        message: "no row".into(),
    }
}
