//! How a statement reaches the database: the small interface both adapters
//! implement, and the shared SQL text they run.

pub mod approval_statements;
pub mod deploy_comment_statements;
pub mod drift_statements;
pub mod operator_statements;
pub mod statements;
pub mod text;

use std::future::Future;

use crate::error::Result;

/// A parameter value. Arrays and records travel as [`Param::Json`] text and are
/// cast in SQL, because the Data API takes no array parameters.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    /// A `bigint`.
    Int(i64),
    /// A `double precision`.
    Float(f64),
    /// A `boolean`.
    Bool(bool),
    /// A `text`.
    Text(String),
    /// JSON text, sent as `text` and cast in the statement (`jsonb`, arrays).
    Json(String),
    /// A `NULL` `bigint`.
    NullInt,
    /// A `NULL` `text`.
    NullText,
}

impl Param {
    /// A text parameter.
    pub fn text(s: impl Into<String>) -> Self {
        Param::Text(s.into())
    }

    /// A text parameter, `NULL` when `None`.
    pub fn opt_text(s: Option<&str>) -> Self {
        s.map_or(Param::NullText, |s| Param::Text(s.to_string()))
    }

    /// A `bigint` parameter, `NULL` when `None`.
    pub fn opt_int(n: Option<i64>) -> Self {
        n.map_or(Param::NullInt, Param::Int)
    }
}

/// Named parameters of one statement (names without the colon).
pub type Params<'a> = &'a [(&'a str, Param)];

/// A connection to the metadb that runs single statements (each committed on
/// its own) and opens transactions. A statement that returns rows returns one
/// text column; `query` yields that column of every row.
pub trait Sql: Send + Sync {
    /// The connection's transaction.
    type Tx: SqlTx;

    /// Runs a statement, returning its one text column of every row.
    fn query(
        &self,
        sql: &str,
        params: Params<'_>,
    ) -> impl Future<Output = Result<Vec<String>>> + Send;

    /// Runs a statement, returning the number of rows it changed.
    fn execute(&self, sql: &str, params: Params<'_>) -> impl Future<Output = Result<u64>> + Send;

    /// Opens a transaction.
    fn begin(&self) -> impl Future<Output = Result<Self::Tx>> + Send;
}

/// An open transaction. Dropping it without `commit` rolls it back.
pub trait SqlTx: Send {
    /// Runs a statement in the transaction, returning its one text column of every row.
    fn query(
        &mut self,
        sql: &str,
        params: Params<'_>,
    ) -> impl Future<Output = Result<Vec<String>>> + Send;

    /// Runs a statement in the transaction, returning the number of rows it changed.
    fn execute(
        &mut self,
        sql: &str,
        params: Params<'_>,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// Commits the transaction.
    fn commit(self) -> impl Future<Output = Result<()>> + Send;

    /// Rolls the transaction back.
    fn rollback(self) -> impl Future<Output = Result<()>> + Send;
}
