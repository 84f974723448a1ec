//! The RDS Data API adapter (the AWS default): each statement is one
//! `ExecuteStatement` call with named parameters, rows come back with
//! `formatRecordsAs = JSON`, and transactions are `BeginTransaction` /
//! `CommitTransaction` / `RollbackTransaction`.
//!
//! An Aurora Serverless v2 cluster with minimum capacity 0 pauses when idle, and
//! the Data API then answers `DatabaseResumingException` until it has resumed
//! (seconds). Every call here retries that with back-off within the adapter's
//! resume deadline ([`DataApi::with_resume_deadline`]), then fails naming the
//! exception and the cluster: never longer than the deadline plus one call.

use std::future::Future;
use std::time::{Duration, Instant};

use aws_sdk_rdsdata::Client;
use aws_sdk_rdsdata::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_rdsdata::types::{Field, RecordsFormatType, SqlParameter};

use live_ci_core::port::ErrorKind;

use crate::error::{MetadbError, Result};
use crate::sql::{Param, Params, Sql, SqlTx};
use crate::store::Store;

/// The metadb through the RDS Data API.
pub type DataApiMetadb = Store<DataApi>;

impl DataApiMetadb {
    /// The metadb on `database` of cluster `resource_arn`, as `secret_arn`'s user.
    pub fn data_api(client: Client, resource_arn: &str, secret_arn: &str, database: &str) -> Self {
        Store::new(DataApi::new(client, resource_arn, secret_arn, database))
    }
}

/// The Data API's answer while a paused Aurora Serverless v2 instance resumes.
pub const DATABASE_RESUMING: &str = "DatabaseResumingException";

/// How long a call waits for a paused cluster to resume unless told otherwise:
/// half the module's default Lambda timeout (60 s); AWS documents resumes of
/// about 15 s.
pub const DEFAULT_RESUME_DEADLINE: Duration = Duration::from_secs(30);

/// The first wait after `DatabaseResumingException`, doubled up to [`MAX_RESUME_BACKOFF`].
const FIRST_RESUME_BACKOFF: Duration = Duration::from_millis(250);
const MAX_RESUME_BACKOFF: Duration = Duration::from_secs(2);

/// An Aurora cluster reached through the Data API.
#[derive(Debug, Clone)]
pub struct DataApi {
    client: Client,
    resource_arn: String,
    secret_arn: String,
    database: String,
    resume_deadline: Duration,
}

impl DataApi {
    /// Cluster `resource_arn`'s `database` as `secret_arn`'s user, with the
    /// default resume deadline.
    pub fn new(client: Client, resource_arn: &str, secret_arn: &str, database: &str) -> Self {
        DataApi {
            client,
            resource_arn: resource_arn.to_string(),
            secret_arn: secret_arn.to_string(),
            database: database.to_string(),
            resume_deadline: DEFAULT_RESUME_DEADLINE,
        }
    }

    /// How long each call retries `DatabaseResumingException` before failing
    /// (the receiver's is short: it answers GitHub within 10 s).
    pub fn with_resume_deadline(mut self, deadline: Duration) -> Self {
        self.resume_deadline = deadline;
        self
    }

    /// `call` until it succeeds, fails otherwise, or the cluster is still
    /// resuming at the deadline.
    async fn resuming<T, E, F, Fut>(&self, mut call: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, SdkError<E, aws_sdk_rdsdata::config::http::HttpResponse>>>,
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let started = Instant::now();
        let mut backoff = FIRST_RESUME_BACKOFF;
        loop {
            let e = match call().await {
                Ok(out) => return Ok(out),
                Err(e) if e.code() == Some(DATABASE_RESUMING) => e,
                Err(e) => return Err(sdk_error(e)),
            };
            let waited = started.elapsed();
            let Some(left) = self
                .resume_deadline
                .checked_sub(waited)
                .filter(|l| !l.is_zero())
            else {
                return Err(MetadbError::DatabaseResuming {
                    cluster: self.resource_arn.clone(),
                    waited,
                    deadline: self.resume_deadline,
                    message: e.message().unwrap_or_default().to_string(),
                });
            };
            tracing::info!(cluster = %self.resource_arn, waited_ms = waited.as_millis() as u64,
                "the metadb cluster is resuming from a pause; retrying");
            tokio::time::sleep(backoff.min(left)).await;
            backoff = (backoff * 2).min(MAX_RESUME_BACKOFF);
        }
    }

    /// One `ExecuteStatement`: the rows' single column, and the rows changed.
    async fn run(
        &self,
        sql: &str,
        params: Params<'_>,
        transaction_id: Option<&str>,
    ) -> Result<(Vec<String>, u64)> {
        let parameters: Vec<SqlParameter> = params.iter().map(parameter).collect();
        let out = self
            .resuming(|| {
                self.client
                    .execute_statement()
                    .resource_arn(&self.resource_arn)
                    .secret_arn(&self.secret_arn)
                    .database(&self.database)
                    .sql(sql)
                    .set_parameters(Some(parameters.clone()))
                    .set_transaction_id(transaction_id.map(str::to_string))
                    .format_records_as(RecordsFormatType::Json)
                    .send()
            })
            .await?;
        let rows = match out.formatted_records() {
            Some(json) => decode_records(sql, json)?,
            None => Vec::new(),
        };
        Ok((rows, out.number_of_records_updated().max(0) as u64))
    }
}

fn parameter((name, value): &(&str, Param)) -> SqlParameter {
    let value = match value {
        Param::Int(n) => Field::LongValue(*n),
        Param::Float(x) => Field::DoubleValue(*x),
        Param::Bool(b) => Field::BooleanValue(*b),
        Param::Text(s) | Param::Json(s) => Field::StringValue(s.clone()),
        Param::NullInt | Param::NullText => Field::IsNull(true),
    };
    SqlParameter::builder().name(*name).value(value).build()
}

/// `formattedRecords` is a JSON array with one object per row; our statements
/// return a single text column, so each object holds one string.
fn decode_records(sql: &str, json: &str) -> Result<Vec<String>> {
    let bad = |message: String| MetadbError::Decode {
        statement: sql.lines().next().unwrap_or_default().to_string(),
        message,
    };
    let records: Vec<serde_json::Map<String, serde_json::Value>> =
        serde_json::from_str(json).map_err(|e| bad(format!("formattedRecords: {e}")))?;
    records
        .into_iter()
        .map(|record| match record.into_iter().next() {
            Some((_, serde_json::Value::String(s))) => Ok(s),
            Some((_, serde_json::Value::Null)) => Ok(String::new()),
            Some((column, other)) => Err(bad(format!(
                "column {column:?} is {other}, not the text the statement should return"
            ))),
            None => Err(bad("a record without columns".into())),
        })
        .collect()
}

fn sdk_error<E>(
    e: aws_sdk_rdsdata::error::SdkError<E, aws_sdk_rdsdata::config::http::HttpResponse>,
) -> MetadbError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let transient = ErrorKind::of_aws_call(
        !matches!(e, SdkError::ConstructionFailure(_)),
        e.code(),
        e.raw_response().map(|r| r.status().as_u16()),
    ) == ErrorKind::Retryable;
    let message = DisplayErrorContext(&e).to_string();
    let lower = message.to_lowercase();
    let retryable = lower.contains("deadlock detected")
        || lower.contains("could not serialize access")
        || lower.contains("40p01")
        || lower.contains("40001");
    MetadbError::DataApi {
        message,
        retryable,
        transient,
        source: Some(Box::new(e)),
    }
}

impl Sql for DataApi {
    type Tx = DataApiTx;

    async fn query(&self, sql: &str, params: Params<'_>) -> Result<Vec<String>> {
        Ok(self.run(sql, params, None).await?.0)
    }

    async fn execute(&self, sql: &str, params: Params<'_>) -> Result<u64> {
        Ok(self.run(sql, params, None).await?.1)
    }

    async fn begin(&self) -> Result<DataApiTx> {
        let out = self
            .resuming(|| {
                self.client
                    .begin_transaction()
                    .resource_arn(&self.resource_arn)
                    .secret_arn(&self.secret_arn)
                    .database(&self.database)
                    .send()
            })
            .await?;
        let id = out.transaction_id().ok_or_else(|| MetadbError::DataApi {
            message: "begin transaction returned no transaction id".into(),
            retryable: false,
            transient: false,
            source: None,
        })?;
        Ok(DataApiTx {
            api: self.clone(),
            id: Some(id.to_string()),
        })
    }
}

/// A Data API transaction, named by its id on every call.
#[derive(Debug)]
pub struct DataApiTx {
    api: DataApi,
    id: Option<String>,
}

impl DataApiTx {
    fn id(&self) -> Result<&str> {
        self.id.as_deref().ok_or(MetadbError::TransactionFinished)
    }
}

impl SqlTx for DataApiTx {
    async fn query(&mut self, sql: &str, params: Params<'_>) -> Result<Vec<String>> {
        let id = self.id()?;
        Ok(self.api.run(sql, params, Some(id)).await?.0)
    }

    async fn execute(&mut self, sql: &str, params: Params<'_>) -> Result<u64> {
        let id = self.id()?;
        Ok(self.api.run(sql, params, Some(id)).await?.1)
    }

    async fn commit(mut self) -> Result<()> {
        if let Some(id) = self.id.take() {
            let api = &self.api;
            api.resuming(|| {
                api.client
                    .commit_transaction()
                    .resource_arn(&api.resource_arn)
                    .secret_arn(&api.secret_arn)
                    .transaction_id(&id)
                    .send()
            })
            .await?;
        }
        Ok(())
    }

    async fn rollback(mut self) -> Result<()> {
        if let Some(id) = self.id.take() {
            rollback(&self.api, id).await?;
        }
        Ok(())
    }
}

async fn rollback(api: &DataApi, id: String) -> Result<()> {
    api.resuming(|| {
        api.client
            .rollback_transaction()
            .resource_arn(&api.resource_arn)
            .secret_arn(&api.secret_arn)
            .transaction_id(&id)
            .send()
    })
    .await?;
    Ok(())
}

impl Drop for DataApiTx {
    fn drop(&mut self) {
        // Best effort: the Data API ends an abandoned transaction itself after
        // a few minutes, but its row locks would block every claim until then.
        if let (Some(id), Ok(handle)) = (self.id.take(), tokio::runtime::Handle::try_current()) {
            let api = self.api.clone();
            handle.spawn(async move {
                if let Err(e) = rollback(&api, id).await {
                    tracing::warn!("rolling back an abandoned transaction: {e}");
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_json_records() {
        assert_eq!(
            decode_records("SELECT x", r#"[{"j":"{\"a\":1}"},{"j":null}]"#).unwrap(),
            ["{\"a\":1}", ""]
        );
        let err = decode_records("SELECT x\nFROM y", r#"[{"j":1}]"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot decode a row of \"SELECT x\": column \"j\" is 1, not the text the statement should return"
        );
    }
}
