//! Request-exact RDS Data API rules (aws-smithy-mocks) for the metadb's Data
//! API path: each rule asserts the cluster, secret, database, transaction,
//! SQL text, named parameters and `formatRecordsAs = JSON` of its request and
//! answers a recorded response. AWS's Data API cannot run here; the plugin's
//! `rds-data` in LocalStack ([`crate::data_api`]) covers the real protocol.

use aws_sdk_rdsdata::Client;
use aws_sdk_rdsdata::operation::begin_transaction::BeginTransactionOutput;
use aws_sdk_rdsdata::operation::commit_transaction::CommitTransactionOutput;
use aws_sdk_rdsdata::operation::execute_statement::ExecuteStatementOutput;
use aws_sdk_rdsdata::operation::rollback_transaction::RollbackTransactionOutput;
use aws_sdk_rdsdata::types::{Field, RecordsFormatType, SqlParameter};
use aws_smithy_mocks::{Rule, mock};
use live_ci_metadb::DataApiMetadb;

/// The cluster every request must name.
pub const CLUSTER: &str = "arn:aws:rds:us-west-2:111111111111:cluster:live-ci-metadb";
/// The secret every request must name.
pub const SECRET: &str = "arn:aws:secretsmanager:us-west-2:111111111111:secret:live-ci-metadb";
/// The database every statement and transaction must name.
pub const DATABASE: &str = "live_ci";

/// A named parameter.
pub fn param(name: &str, value: Field) -> SqlParameter {
    SqlParameter::builder().name(name).value(value).build()
}

/// A named integer parameter.
pub fn long(name: &str, n: i64) -> SqlParameter {
    param(name, Field::LongValue(n))
}

/// A named string parameter.
pub fn string(name: &str, s: &str) -> SqlParameter {
    param(name, Field::StringValue(s.into()))
}

/// A named NULL parameter.
pub fn null(name: &str) -> SqlParameter {
    param(name, Field::IsNull(true))
}

/// `BeginTransaction` on the cluster's database, answering transaction `tx`.
pub fn begin(tx: &'static str) -> Rule {
    mock!(Client::begin_transaction)
        .match_requests(|r| {
            assert_eq!(
                (r.resource_arn(), r.secret_arn(), r.database()),
                (Some(CLUSTER), Some(SECRET), Some(DATABASE))
            );
            true
        })
        .then_output(move || BeginTransactionOutput::builder().transaction_id(tx).build())
}

/// `CommitTransaction` of `tx`.
pub fn commit(tx: &'static str) -> Rule {
    mock!(Client::commit_transaction)
        .match_requests(move |r| {
            assert_eq!(
                (r.resource_arn(), r.secret_arn(), r.transaction_id()),
                (Some(CLUSTER), Some(SECRET), Some(tx))
            );
            true
        })
        .then_output(|| CommitTransactionOutput::builder().build())
}

/// `RollbackTransaction` of `tx`.
pub fn rollback(tx: &'static str) -> Rule {
    mock!(Client::rollback_transaction)
        .match_requests(move |r| {
            assert_eq!(r.transaction_id(), Some(tx));
            true
        })
        .then_output(|| RollbackTransactionOutput::builder().build())
}

/// An `ExecuteStatement` with exactly this SQL, these parameters and this
/// transaction, answering `records` (JSON) and `updated`.
pub fn statement(
    sql: &'static str,
    params: Vec<SqlParameter>,
    tx: Option<&'static str>,
    records: Option<&'static str>,
    updated: i64,
) -> Rule {
    mock!(Client::execute_statement)
        .match_requests(move |r| {
            assert_eq!(r.sql(), Some(sql));
            assert_eq!(r.parameters(), params.as_slice(), "parameters of {sql}");
            assert_eq!(r.transaction_id(), tx, "transaction of {sql}");
            assert_eq!(r.format_records_as(), Some(&RecordsFormatType::Json));
            assert_eq!(
                (r.resource_arn(), r.secret_arn(), r.database()),
                (Some(CLUSTER), Some(SECRET), Some(DATABASE))
            );
            true
        })
        .then_output(move || {
            let out = ExecuteStatementOutput::builder().number_of_records_updated(updated);
            match records {
                Some(r) => out.formatted_records(r).build(),
                None => out.build(),
            }
        })
}

/// A current schema as `SCHEMA_STATE` lists it: every migration, then the
/// binary's function set (leaked: rules take `'static` answers, and a test
/// process makes a handful).
pub fn applied_versions() -> &'static str {
    let functions = live_ci_metadb::FunctionSet::current();
    let rows: Vec<String> = live_ci_metadb::MIGRATIONS
        .iter()
        .map(|m| format!(r#"{{"version":"{}"}}"#, m.version))
        .chain([format!(
            r#"{{"version":"functions {} {}"}}"#,
            functions.revision,
            functions.hash()
        )])
        .collect();
    Box::leak(format!("[{}]", rows.join(",")).into_boxed_str())
}

/// The Data API metadb on `client` (a `mock_client!` of the rules), naming
/// [`CLUSTER`], [`SECRET`] and [`DATABASE`].
pub fn metadb(client: Client) -> DataApiMetadb {
    DataApiMetadb::data_api(client, CLUSTER, SECRET, DATABASE)
}
