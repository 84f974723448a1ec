//! Request-exact RDS Data API calls (wiremock, [`crate::aws_wire`]) for the
//! metadb's Data API path: each call matches the exact JSON body the SDK sends
//! — cluster, secret, database, transaction, SQL text, named parameters and
//! `formatRecordsAs = JSON` — on the operation's path, and answers a recorded
//! response in the Data API's wire shape. AWS's Data API cannot run here; the
//! plugin's `rds-data` in LocalStack ([`crate::data_api`]) covers the real protocol.

use live_ci_metadb::DataApiMetadb;
use serde_json::{Value, json};

use crate::aws_wire::{Call, Wire};

/// The cluster every request must name.
pub const CLUSTER: &str = "arn:aws:rds:us-west-2:111111111111:cluster:live-ci-metadb";
/// The secret every request must name.
pub const SECRET: &str = "arn:aws:secretsmanager:us-west-2:111111111111:secret:live-ci-metadb";
/// The database every statement and transaction must name.
pub const DATABASE: &str = "live_ci";

/// A named parameter with `value` in the wire shape of a `Field`
/// (`{"longValue": 7}`, `{"stringValue": "x"}`, `{"isNull": true}` …).
pub fn param(name: &str, value: Value) -> Value {
    json!({"name": name, "value": value})
}

/// A named integer parameter.
pub fn long(name: &str, n: i64) -> Value {
    param(name, json!({"longValue": n}))
}

/// A named string parameter.
pub fn string(name: &str, s: &str) -> Value {
    param(name, json!({"stringValue": s}))
}

/// A named boolean parameter.
pub fn boolean(name: &str, b: bool) -> Value {
    param(name, json!({"booleanValue": b}))
}

/// A named NULL parameter.
pub fn null(name: &str) -> Value {
    param(name, json!({"isNull": true}))
}

/// `BeginTransaction` on the cluster's database, answering transaction `tx`.
pub fn begin(tx: &str) -> Call {
    Call::rest_json(
        "/BeginTransaction",
        json!({"resourceArn": CLUSTER, "secretArn": SECRET, "database": DATABASE}),
    )
    .answer_json(json!({"transactionId": tx}))
}

/// `CommitTransaction` of `tx`.
pub fn commit(tx: &str) -> Call {
    Call::rest_json(
        "/CommitTransaction",
        json!({"resourceArn": CLUSTER, "secretArn": SECRET, "transactionId": tx}),
    )
    .answer_json(json!({"transactionStatus": "Transaction Committed"}))
}

/// `RollbackTransaction` of `tx`.
pub fn rollback(tx: &str) -> Call {
    Call::rest_json(
        "/RollbackTransaction",
        json!({"resourceArn": CLUSTER, "secretArn": SECRET, "transactionId": tx}),
    )
    .answer_json(json!({"transactionStatus": "Rollback Complete"}))
}

/// The exact body of an `ExecuteStatement` of `sql` with these parameters in
/// transaction `tx` (outside any when `None`).
pub fn statement_request(sql: &str, params: Vec<Value>, tx: Option<&str>) -> Value {
    let mut body = json!({
        "resourceArn": CLUSTER,
        "secretArn": SECRET,
        "database": DATABASE,
        "sql": sql,
        "parameters": params,
        "formatRecordsAs": "JSON",
    });
    if let Some(tx) = tx {
        body["transactionId"] = json!(tx);
    }
    body
}

/// An `ExecuteStatement` with exactly this SQL, these parameters and this
/// transaction, answering `records` (JSON) and `updated`.
pub fn statement(
    sql: &str,
    params: Vec<Value>,
    tx: Option<&str>,
    records: Option<&str>,
    updated: i64,
) -> Call {
    let mut answer = json!({"numberOfRecordsUpdated": updated});
    if let Some(records) = records {
        answer["formattedRecords"] = json!(records);
    }
    Call::rest_json("/Execute", statement_request(sql, params, tx)).answer_json(answer)
}

/// An `ExecuteStatement` of `sql` outside transactions, with any parameters
/// of the given body, failing with the Data API's `DatabaseErrorException`
/// carrying PostgreSQL's `message`.
pub fn database_error(sql: &str, params: Vec<Value>, message: &str) -> Call {
    Call::rest_json("/Execute", statement_request(sql, params, None)).error(
        400,
        "DatabaseErrorException",
        message,
    )
}

/// A current schema as `SCHEMA_STATE` lists it: every migration, then the
/// binary's function set.
pub fn applied_versions() -> String {
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
    format!("[{}]", rows.join(","))
}

/// The Data API metadb talking to `wire`, naming [`CLUSTER`], [`SECRET`] and
/// [`DATABASE`].
pub fn metadb(wire: &Wire) -> DataApiMetadb {
    DataApiMetadb::data_api(
        crate::wire_client!(aws_sdk_rdsdata, wire),
        CLUSTER,
        SECRET,
        DATABASE,
    )
}
