//! The operator commands over the RDS Data API (the module's default metadb
//! connection) against wiremock servers (`aws_wire`): each test lists the exact
//! requests in order (the whole JSON body: SQL text, named parameters,
//! transaction, `formatRecordsAs = JSON`; SSM's PutParameter for the lock) and
//! answers with recorded JSON records. A request that no call matches, or out
//! of order, fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use live_ci_cli::ListFormat;
use live_ci_cli::commands::{migrate, runs};
use live_ci_core::operate;
use live_ci_metadb::MIGRATIONS;
use live_ci_metadb::sql::operator_statements as o;
use live_ci_metadb::sql::statements as q;
use live_ci_testkit::aws_wire::{Call, Wire};
use live_ci_testkit::data_api_mock::*;
use live_ci_testkit::wire_client;

/// Two rows of `RUNS` as PostgreSQL 15 produced them (a retry holding the lock,
/// and the failed run it retries), wrapped as the Data API's JSON records.
const RECORDED_RUNS: &str = r#"[{"text":"{\"pr_id\": 7, \"run_id\": 2, \"status\": \"running\", \"base_ref\": \"refs/heads/main\", \"base_sha\": \"1111111\", \"head_ref\": \"refs/heads/feature\", \"head_sha\": \"2222222\", \"progress\": {\"failed\": 0, \"aborted\": 0, \"running\": 1, \"waiting\": 1, \"succeeded\": 0}, \"retry_of\": 1, \"commit_id\": \"c0ffee\", \"fail_fast\": false, \"created_at\": 1795256420420, \"holds_lock\": true, \"started_at\": 1795256420421, \"finished_at\": null, \"max_parallel\": 4}"},{"text":"{\"pr_id\": 7, \"run_id\": 1, \"status\": \"failed\", \"base_ref\": \"refs/heads/main\", \"base_sha\": \"1111111\", \"head_ref\": \"refs/heads/feature\", \"head_sha\": \"2222222\", \"progress\": {\"failed\": 1, \"aborted\": 1, \"running\": 0, \"waiting\": 0, \"succeeded\": 1}, \"retry_of\": null, \"commit_id\": \"c0ffee\", \"fail_fast\": false, \"created_at\": 1795256410000, \"holds_lock\": false, \"started_at\": 1795256410001, \"finished_at\": 1795256419000, \"max_parallel\": 4}"}]"#;

#[tokio::test]
async fn migrate_through_the_data_api_applies_nothing_when_up_to_date() {
    let applied = applied_versions();
    // A current schema: one read, no transaction.
    let rules = [statement(q::SCHEMA_STATE, vec![], None, Some(&applied), 0)];
    let wire = Wire::start(rules).await;
    let out = migrate::migrate(&metadb(&wire)).await.unwrap();
    let v: Value = serde_json::from_str(&out.text).unwrap();
    let latest = MIGRATIONS.iter().map(|m| m.version).max().unwrap();
    assert_eq!(v, json!({"applied": [], "latest": latest}));
    wire.verify().await;
}

#[tokio::test]
async fn runs_through_the_data_api() {
    let rules = [statement(
        o::RUNS,
        vec![long("limit", 20)],
        None,
        Some(RECORDED_RUNS),
        0,
    )];
    let wire = Wire::start(rules).await;
    let out = runs::runs(&metadb(&wire), 20, ListFormat::Json)
        .await
        .unwrap();
    let v: Value = serde_json::from_str(&out.text).unwrap();
    assert_eq!(v[0]["run_id"], 2);
    assert_eq!(v[0]["retry_of"], 1);
    assert_eq!(v[0]["holds_lock"], true);
    assert_eq!(v[0]["progress"]["waiting"], 1);
    assert_eq!(v[1]["status"], "failed");
    assert_eq!(v[1]["progress"]["aborted"], 1);
    wire.verify().await;
}

/// `unlock` over the Data API: one transaction under the lock row (refusing
/// nothing: no run is running), the parameter set free, the action logged.
#[tokio::test]
async fn unlock_through_the_data_api_and_ssm() {
    let rules = [
        begin("tx-u"),
        statement(
            q::LOCK_MERGE_LOCK,
            vec![],
            Some("tx-u"),
            Some(r#"[{"coalesce":"3"}]"#),
            0,
        ),
        statement(o::RUNNING_RUN, vec![], Some("tx-u"), Some("[]"), 0),
        statement(o::CLEAR_MERGE_LOCK, vec![], Some("tx-u"), None, 0),
        commit("tx-u"),
        statement(
            o::LOG_ACTION,
            vec![
                string("action", "unlock"),
                long("run_id", 3),
                string("actor", "ops@example.com"),
                string("detail", "released the lock row of run 3"),
            ],
            None,
            None,
            0,
        ),
    ];
    let ssm = Wire::start(vec![
        Call::aws_json(
            "AmazonSSM.PutParameter",
            json!({"Name": "/live-ci/merge-lock", "Value": "none", "Type": "String", "Overwrite": true}),
        )
        .answer_json(json!({"Version": 2, "Tier": "Standard"})),
    ])
    .await;
    let wire = Wire::start(rules).await;
    let unlocked = operate::unlock(
        &metadb(&wire),
        &live_ci_aws::SsmParamStore::new(wire_client!(aws_sdk_ssm, ssm)),
        "/live-ci/merge-lock",
        false,
        "ops@example.com",
    )
    .await
    .unwrap();
    assert_eq!(unlocked.released_run, Some(3));
    assert_eq!(unlocked.running_run, None);
    wire.verify().await;
    ssm.verify().await;
}
