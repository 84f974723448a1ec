//! A [`Sql`] connection that records every round trip it makes: each
//! statement, and each BEGIN, COMMIT and ROLLBACK, is one call of the RDS Data
//! API (`ExecuteStatement`, `BeginTransaction`, …), so the log's length is the
//! number of Data API calls the same work costs in AWS, over any connection.

use std::sync::{Arc, Mutex};

use live_ci_metadb::sql::Params;
use live_ci_metadb::{Result, Sql, SqlTx};

/// Wraps a connection; clones share one log.
#[derive(Debug, Clone)]
pub struct Counting<S> {
    inner: S,
    log: Arc<Mutex<Vec<String>>>,
}

impl<S> Counting<S> {
    /// Wraps `inner` with an empty log.
    pub fn new(inner: S) -> Self {
        Counting {
            inner,
            log: Arc::default(),
        }
    }

    /// The calls so far, each as `BEGIN`, `COMMIT`, `ROLLBACK` or its
    /// statement's first line, and empties the log.
    pub fn take(&self) -> Vec<String> {
        self.log
            .lock()
            .map(|mut log| std::mem::take(&mut *log))
            .unwrap_or_default()
    }
}

fn record(log: &Mutex<Vec<String>>, call: &str) {
    if let Ok(mut log) = log.lock() {
        log.push(call.lines().next().unwrap_or_default().trim().to_string());
    }
}

impl<S: Sql> Sql for Counting<S> {
    type Tx = CountingTx<S::Tx>;

    async fn query(&self, sql: &str, params: Params<'_>) -> Result<Vec<String>> {
        record(&self.log, sql);
        self.inner.query(sql, params).await
    }

    async fn execute(&self, sql: &str, params: Params<'_>) -> Result<u64> {
        record(&self.log, sql);
        self.inner.execute(sql, params).await
    }

    async fn begin(&self) -> Result<Self::Tx> {
        record(&self.log, "BEGIN");
        Ok(CountingTx {
            inner: self.inner.begin().await?,
            log: self.log.clone(),
        })
    }
}

/// A transaction of a [`Counting`] connection.
#[derive(Debug)]
pub struct CountingTx<T> {
    inner: T,
    log: Arc<Mutex<Vec<String>>>,
}

impl<T: SqlTx> SqlTx for CountingTx<T> {
    async fn query(&mut self, sql: &str, params: Params<'_>) -> Result<Vec<String>> {
        record(&self.log, sql);
        self.inner.query(sql, params).await
    }

    async fn execute(&mut self, sql: &str, params: Params<'_>) -> Result<u64> {
        record(&self.log, sql);
        self.inner.execute(sql, params).await
    }

    async fn commit(self) -> Result<()> {
        record(&self.log, "COMMIT");
        self.inner.commit().await
    }

    async fn rollback(self) -> Result<()> {
        record(&self.log, "ROLLBACK");
        self.inner.rollback().await
    }
}
