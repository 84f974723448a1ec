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
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(String),
    Json(String),
    NullInt,
    NullText,
}

impl Param {
    pub fn text(s: impl Into<String>) -> Self {
        Param::Text(s.into())
    }

    pub fn opt_text(s: Option<&str>) -> Self {
        s.map_or(Param::NullText, |s| Param::Text(s.to_string()))
    }

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
    type Tx: SqlTx;

    fn query(
        &self,
        sql: &str,
        params: Params<'_>,
    ) -> impl Future<Output = Result<Vec<String>>> + Send;

    /// Runs a statement, returning the number of rows it changed.
    fn execute(&self, sql: &str, params: Params<'_>) -> impl Future<Output = Result<u64>> + Send;

    fn begin(&self) -> impl Future<Output = Result<Self::Tx>> + Send;
}

/// An open transaction. Dropping it without `commit` rolls it back.
pub trait SqlTx: Send {
    fn query(
        &mut self,
        sql: &str,
        params: Params<'_>,
    ) -> impl Future<Output = Result<Vec<String>>> + Send;

    fn execute(
        &mut self,
        sql: &str,
        params: Params<'_>,
    ) -> impl Future<Output = Result<u64>> + Send;

    fn commit(self) -> impl Future<Output = Result<()>> + Send;

    fn rollback(self) -> impl Future<Output = Result<()>> + Send;
}
