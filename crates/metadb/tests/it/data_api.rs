//! The RDS Data API adapter against a wiremock server (`aws_wire`): each test
//! lists the exact requests in order (the whole JSON body: SQL text, named
//! parameters, transaction id, `formatRecordsAs = JSON`) and decodes recorded
//! JSON responses. A request that no call matches, or out of order, fails the test.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use live_ci_core::deploy::{
    Action, ExecutionStatus, FinishOutcome, Outcome, Settled, StatusChange,
};
use live_ci_core::port::{ExecutionStore, RunStore};
use live_ci_metadb::sql::statements as q;
use live_ci_testkit::aws_wire::{Call, Wire};
use live_ci_testkit::data_api_mock::*;

/// A row of the claim as PostgreSQL 15 produced it (captured from the PostgreSQL
/// adapter; the Data API wraps the one text column in a JSON record).
const RECORDED_CLAIM: &str = r#"[{"?column?":"{\"id\": 1, \"seq\": 0, \"pr_id\": 7, \"action\": \"apply\", \"run_id\": 1, \"status\": \"running\", \"voters\": [\"voter@example.com\"], \"base_ref\": \"refs/heads/main\", \"cfg_deps\": [], \"cfg_path\": \"directory_dependency/dev-account/us-west-2/env-one/baz\", \"decision\": null, \"head_ref\": \"refs/heads/feature\", \"priority\": 3, \"wait_for\": [], \"commit_id\": \"c8c5f6afc7345bd21cd79acaf740dc18b60755e3\", \"claimed_at\": 1795256420430, \"created_at\": 1795256420420, \"updated_at\": 1795256420430, \"finished_at\": null, \"is_rollback\": false, \"account_deps\": [\"shared_services\"], \"account_name\": \"dev\", \"account_path\": \"dev\", \"execution_id\": \"run-1-c8c5-dev-baz-729\", \"pending_deps\": 0, \"plan_command\": \"terragrunt plan --terragrunt-working-dir dev/run-1-c8c5-dev-baz-729\", \"apply_command\": \"terragrunt apply --terragrunt-working-dir dev/run-1-c8c5-dev-baz-729\", \"new_providers\": [\"registry.terraform.io/hashicorp/null\"], \"new_resources\": [], \"plan_role_arn\": \"arn:aws:iam::111111111111:role/plan\", \"status_reason\": null, \"wait_accounts\": [], \"apply_role_arn\": \"arn:aws:iam::111111111111:role/apply\", \"approval_voters\": [], \"pending_accounts\": 0, \"rejection_voters\": [], \"sfn_execution_arn\": null, \"min_approval_count\": 1, \"min_rejection_count\": 1}"}]"#;

/// The claim's answer as `live_ci_claim` gives it: the recorded row as the one
/// claimed record, and the run's counts.
fn recorded_claim() -> String {
    let rows: Vec<serde_json::Map<String, serde_json::Value>> =
        serde_json::from_str(RECORDED_CLAIM).unwrap();
    let record: serde_json::Value =
        serde_json::from_str(rows[0]["?column?"].as_str().unwrap()).unwrap();
    let answer = serde_json::json!({
        "claimed": [record],
        "progress": {"waiting": 4, "running": 1, "succeeded": 2, "failed": 0, "aborted": 0},
    });
    let records = serde_json::json!([{ "live_ci_claim": answer.to_string() }]);
    records.to_string()
}

#[tokio::test]
async fn a_claim_is_one_statement_outside_transactions_and_decodes_the_recorded_row() {
    let rules = [statement(
        q::CLAIM,
        vec![long("run_id", 7), long("limit", 10)],
        None,
        Some(&recorded_claim()),
        0,
    )];
    let wire = Wire::start(rules).await;
    let next = metadb(&wire).claim_next(7, 10).await.unwrap();
    wire.verify().await;
    assert_eq!(
        (
            next.progress.waiting,
            next.progress.running,
            next.progress.succeeded
        ),
        (4, 1, 2)
    );
    let claimed = next.claimed;
    assert_eq!(claimed.len(), 1);
    let e = &claimed[0];
    assert_eq!(e.execution_id, "run-1-c8c5-dev-baz-729");
    assert_eq!(
        (e.status, e.action),
        (ExecutionStatus::Running, Action::Apply)
    );
    assert_eq!(e.claimed_at, Some(1_795_256_420_430));
    assert_eq!(e.priority, 3.0);
    let input = serde_json::to_value(e.sfn_input()).unwrap();
    assert_eq!(
        input["cfg_path"],
        "directory_dependency/dev-account/us-west-2/env-one/baz"
    );
    assert_eq!(
        input["new_providers"][0],
        "registry.terraform.io/hashicorp/null"
    );
    assert_eq!(input["approval_voters"], serde_json::json!([]));
    assert_eq!(input["account_deps"][0], "shared_services");
    assert_eq!(input["min_approval_count"], 1);
}

#[tokio::test]
async fn a_claim_on_a_run_that_is_not_running_claims_nothing() {
    let rules = [statement(
        q::CLAIM,
        vec![long("run_id", 8), long("limit", 10)],
        None,
        Some(
            r#"[{"live_ci_claim":"{\"claimed\": [], \"progress\": {\"failed\": 0, \"aborted\": 0, \"running\": 0, \"waiting\": 0, \"succeeded\": 3}}"}]"#,
        ),
        0,
    )];
    let wire = Wire::start(rules).await;
    assert!(metadb(&wire).claim_ready(8, 10).await.unwrap().is_empty());
    wire.verify().await;
}

#[tokio::test]
async fn a_failure_and_its_dependents_in_one_statement() {
    let rules = [statement(
        q::FINISH,
        vec![
            string("execution_id", "run-1-c8c5-dev-vpc-001"),
            string("status", "failed"),
            string("reason", "States.TaskFailed"),
        ],
        None,
        Some(
            r#"[{"live_ci_finish":"{\"units\": [{\"cfg_path\": \"dev/app\", \"is_rollback\": false, \"execution_id\": \"run-1-c8c5-dev-app-002\", \"status_reason\": \"ancestor failed\"}, {\"cfg_path\": \"dev/db\", \"is_rollback\": false, \"execution_id\": \"run-1-c8c5-dev-db-003\", \"status_reason\": \"ancestor failed\"}], \"aborted\": [\"run-1-c8c5-dev-app-002\", \"run-1-c8c5-dev-db-003\"], \"recorded\": true}"}]"#,
        ),
        0,
    )];
    let wire = Wire::start(rules).await;
    let out = metadb(&wire)
        .record_finished(
            "run-1-c8c5-dev-vpc-001",
            Outcome::Failed,
            Some("States.TaskFailed"),
        )
        .await
        .unwrap();
    assert_eq!(
        out,
        FinishOutcome::Recorded {
            aborted: vec![
                "run-1-c8c5-dev-app-002".into(),
                "run-1-c8c5-dev-db-003".into()
            ]
        }
    );
    wire.verify().await;
}

#[tokio::test]
async fn a_success_sends_a_null_reason_and_a_repeat_reads_the_status() {
    let id = "run-1-c8c5-dev-vpc-001";
    let finish = |answer: &str| {
        statement(
            q::FINISH,
            vec![
                string("execution_id", id),
                string("status", "succeeded"),
                null("reason"),
            ],
            None,
            Some(answer),
            0,
        )
    };
    let rules = [
        finish(r#"[{"live_ci_finish":"{\"units\": [], \"aborted\": [], \"recorded\": true}"}]"#),
        finish(r#"[{"live_ci_finish":"{\"status\": \"succeeded\", \"recorded\": false}"}]"#),
    ];
    let wire = Wire::start(rules).await;
    let db = metadb(&wire);
    let out = db
        .record_finished(id, Outcome::Succeeded, None)
        .await
        .unwrap();
    assert_eq!(out, FinishOutcome::Recorded { aborted: vec![] });
    let out = db
        .record_finished(id, Outcome::Succeeded, None)
        .await
        .unwrap();
    assert_eq!(
        out,
        FinishOutcome::Unchanged {
            status: Some(ExecutionStatus::Succeeded)
        }
    );
    wire.verify().await;
}

/// A status change is one statement: the execution, the finish with the
/// aborted units' details, the claim and the counts come back in one answer;
/// a name no execution has is SQL NULL.
#[tokio::test]
async fn a_status_change_is_one_statement() {
    let settle = |name: &str, answer: &str| {
        statement(
            q::SETTLE,
            vec![
                string("execution_id", name),
                string("arn", "arn:aws:states:us-west-2:1:execution:deploy:x"),
                string("status", "failed"),
                string("reason", "plan failed"),
                long("limit", 100),
            ],
            None,
            Some(answer),
            0,
        )
    };
    let rows: Vec<serde_json::Map<String, serde_json::Value>> =
        serde_json::from_str(RECORDED_CLAIM).unwrap();
    let record: serde_json::Value =
        serde_json::from_str(rows[0]["?column?"].as_str().unwrap()).unwrap();
    let answer = serde_json::json!({
        "execution": record,
        "finish": {
            "recorded": true,
            "aborted": ["run-1-c8c5-dev-app-002"],
            "units": [{"execution_id": "run-1-c8c5-dev-app-002", "cfg_path": "dev/app",
                       "is_rollback": false, "status_reason": "ancestor failed"}],
        },
        "claimed": [],
        "progress": {"waiting": 0, "running": 1, "succeeded": 0, "failed": 1, "aborted": 1},
    });
    let answer = serde_json::json!([{ "live_ci_settle": answer.to_string() }]).to_string();
    let rules = [
        settle("run-1-c8c5-dev-baz-729", &answer),
        settle("elsewhere", r#"[{"live_ci_settle":null}]"#),
    ];
    let wire = Wire::start(rules).await;
    let db = metadb(&wire);
    let change = |name| StatusChange {
        execution_id: name,
        execution_arn: "arn:aws:states:us-west-2:1:execution:deploy:x",
        ended: Some((Outcome::Failed, Some("plan failed"))),
    };
    let Settled::Advanced {
        execution,
        finish,
        aborted_units,
        next,
    } = db
        .settle(&change("run-1-c8c5-dev-baz-729"), 100)
        .await
        .unwrap()
    else {
        panic!("not advanced")
    };
    assert_eq!(execution.execution_id, "run-1-c8c5-dev-baz-729");
    assert_eq!(
        finish,
        Some(FinishOutcome::Recorded {
            aborted: vec!["run-1-c8c5-dev-app-002".into()]
        })
    );
    assert_eq!(aborted_units.len(), 1);
    assert_eq!(aborted_units[0].cfg_path.as_str(), "dev/app");
    assert_eq!(
        aborted_units[0].status_reason.as_deref(),
        Some("ancestor failed")
    );
    assert!(next.claimed.is_empty());
    assert_eq!((next.progress.running, next.progress.failed), (1, 1));
    assert_eq!(
        db.settle(&change("elsewhere"), 100).await.unwrap(),
        Settled::Unknown
    );
    wire.verify().await;
}

#[tokio::test]
async fn single_statements_run_outside_transactions() {
    let rules = [statement(
        q::ATTACH_ARNS,
        vec![string(
            "started",
            r#"[{"execution_id":"run-1-c8c5-dev-baz-729","arn":"arn:aws:states:us-west-2:1:execution:deploy:run-1-c8c5-dev-baz-729"}]"#,
        )],
        None,
        Some(r#"[{"execution_id":"run-1-c8c5-dev-baz-729"}]"#),
        1,
    )];
    let wire = Wire::start(rules).await;
    assert!(
        metadb(&wire)
            .attach_execution_arn(
                "run-1-c8c5-dev-baz-729",
                "arn:aws:states:us-west-2:1:execution:deploy:run-1-c8c5-dev-baz-729"
            )
            .await
            .unwrap()
    );
    wire.verify().await;
}

/// A deadlock rolled the whole call back (one statement, its own
/// transaction): it is sent again.
#[tokio::test]
async fn a_deadlock_is_retried() {
    let deadlock = database_error(
        q::CLAIM,
        vec![long("run_id", 7), long("limit", 5)],
        "ERROR: deadlock detected; SQLState: 40P01",
    );
    let rules = [
        deadlock,
        statement(
            q::CLAIM,
            vec![long("run_id", 7), long("limit", 5)],
            None,
            Some(
                r#"[{"live_ci_claim":"{\"claimed\": [], \"progress\": {\"failed\": 0, \"aborted\": 0, \"running\": 5, \"waiting\": 2, \"succeeded\": 0}}"}]"#,
            ),
            0,
        ),
    ];
    let wire = Wire::start(rules).await;
    assert!(metadb(&wire).claim_ready(7, 5).await.unwrap().is_empty());
    wire.verify().await;
}

#[tokio::test]
async fn create_run_sends_records_as_json_text() {
    let mut run = live_ci_core::deploy::NewRun {
        pr_id: 1,
        commit_id: "c8c5f6af".into(),
        base_ref: "refs/heads/master".into(),
        head_ref: "refs/heads/feature-1".into(),
        base_sha: "aaaa".into(),
        head_sha: "bbbb".into(),
        max_parallel: 10,
        fail_fast: false,
        trunk_seq: 12,
        checkout: None,
        executions: vec![],
    };
    run.executions.push(live_ci_core::deploy::NewExecution {
        execution_id: "run-1-c8c5-dev-baz-729".into(),
        is_rollback: false,
        cfg_path: live_ci_core::RepoPath::new("dev/baz").unwrap(),
        cfg_deps: vec![],
        action: Action::Apply,
        plan_command: "terragrunt plan".into(),
        apply_command: "terragrunt apply".into(),
        new_providers: vec![],
        account_name: "dev".into(),
        account_path: "dev".into(),
        account_deps: vec![],
        voters: vec!["voter@example.com".into()],
        min_approval_count: 1,
        min_rejection_count: 1,
        plan_role_arn: "arn:plan".into(),
        apply_role_arn: "arn:apply".into(),
        priority: 1.0,
        wait_for: vec![],
        wait_accounts: vec![],
        account_max_parallel: None,
    });
    let executions_json = r#"[{"seq":0,"execution_id":"run-1-c8c5-dev-baz-729","is_rollback":false,"cfg_path":"dev/baz","cfg_deps":[],"action":"apply","plan_command":"terragrunt plan","apply_command":"terragrunt apply","new_providers":[],"account_name":"dev","account_path":"dev","account_deps":[],"voters":["voter@example.com"],"min_approval_count":1,"min_rejection_count":1,"plan_role_arn":"arn:plan","apply_role_arn":"arn:apply","priority":1.0,"wait_for":[],"wait_accounts":[]}]"#;
    let run_id = || vec![long("run_id", 4)];
    let rules = [
        begin("tx-c"),
        statement(
            q::LOCK_MERGE_LOCK,
            vec![],
            Some("tx-c"),
            Some(r#"[{"coalesce":""}]"#),
            0,
        ),
        statement(
            q::INSERT_RUN,
            vec![
                long("pr_id", 1),
                string("commit_id", "c8c5f6af"),
                string("base_ref", "refs/heads/master"),
                string("head_ref", "refs/heads/feature-1"),
                string("base_sha", "aaaa"),
                string("head_sha", "bbbb"),
                long("max_parallel", 10),
                boolean("fail_fast", false),
                long("trunk_seq", 12),
                // No packed checkout: NULLs, not empty strings.
                null("checkout_key"),
                null("checkout_sha256"),
            ],
            Some("tx-c"),
            Some(r#"[{"run_id":"4"}]"#),
            1,
        ),
        statement(
            q::INSERT_EXECUTIONS,
            vec![long("run_id", 4), string("executions", executions_json)],
            Some("tx-c"),
            None,
            1,
        ),
        statement(q::INSERT_DEPS, run_id(), Some("tx-c"), None, 0),
        statement(q::INSERT_RUN_ACCOUNTS, run_id(), Some("tx-c"), None, 1),
        statement(q::INSERT_ACCOUNT_WAITS, run_id(), Some("tx-c"), None, 0),
        statement(q::SET_PENDING_ACCOUNTS, run_id(), Some("tx-c"), None, 0),
        statement(
            q::START_NEXT_RUN,
            vec![],
            Some("tx-c"),
            Some(r#"[{"live_ci_start_next_run":"4"}]"#),
            0,
        ),
        commit("tx-c"),
    ];
    let wire = Wire::start(rules).await;
    let created = metadb(&wire).create_run(&run).await.unwrap();
    assert_eq!(
        (created.run_id, created.created, created.started),
        (4, true, true)
    );
    wire.verify().await;
}

/// What a fresh database answers to the read of `schema_migrations` and
/// `schema_functions`.
fn no_schema_migrations() -> Call {
    database_error(
        q::SCHEMA_STATE,
        vec![],
        "ERROR: relation \"schema_migrations\" does not exist; SQLState: 42P01",
    )
}

/// Every task migrates at start: a current schema costs one read, outside any
/// transaction, so tasks starting together do not queue on the advisory lock.
#[tokio::test]
async fn migrate_is_one_read_when_everything_is_applied() {
    let rules = [statement(
        q::SCHEMA_STATE,
        vec![],
        None,
        Some(&applied_versions()),
        0,
    )];
    let wire = Wire::start(rules).await;
    assert!(metadb(&wire).migrate().await.unwrap().is_empty());
    wire.verify().await;
}

/// A schema one migration behind takes the locked path and applies it there.
#[tokio::test]
async fn a_schema_behind_takes_the_lock_and_applies_what_is_missing() {
    let last = live_ci_metadb::MIGRATIONS.last().unwrap();
    let older: Vec<String> = live_ci_metadb::MIGRATIONS
        .iter()
        .filter(|m| m.version != last.version)
        .map(|m| format!(r#"{{"version":"{}"}}"#, m.version))
        .collect();
    let older = format!("[{}]", older.join(","));
    let mut rules = vec![
        statement(q::SCHEMA_STATE, vec![], None, Some(&older), 0),
        begin("tx-m"),
        statement(
            q::MIGRATION_LOCK,
            vec![],
            Some("tx-m"),
            Some(r#"[{"?column?":"locked"}]"#),
            0,
        ),
        statement(q::CREATE_SCHEMA_MIGRATIONS, vec![], Some("tx-m"), None, 0),
        statement(q::APPLIED_MIGRATIONS, vec![], Some("tx-m"), Some(&older), 0),
    ];
    for s in live_ci_metadb::sql::text::split_statements(last.sql) {
        rules.push(statement(&s, vec![], Some("tx-m"), None, 0));
    }
    rules.push(statement(
        q::RECORD_MIGRATION,
        vec![
            long("version", i64::from(last.version)),
            string("name", last.name),
        ],
        Some("tx-m"),
        None,
        1,
    ));
    rules.extend(function_rules("tx-m"));
    rules.push(commit("tx-m"));
    let wire = Wire::start(rules).await;
    assert_eq!(metadb(&wire).migrate().await.unwrap(), vec![last.version]);
    wire.verify().await;
}

/// The function step after the migrations, in their transaction `tx`: the
/// newest set recorded (none), each function file as one statement, then
/// the record of this binary's set.
fn function_rules(tx: &str) -> Vec<Call> {
    let set = live_ci_metadb::FunctionSet::current();
    let mut rules = vec![statement(
        q::APPLIED_FUNCTIONS,
        vec![],
        Some(tx),
        Some("[]"),
        0,
    )];
    for f in set.functions {
        let statements = live_ci_metadb::sql::text::split_statements(f.sql);
        assert_eq!(statements.len(), 1, "{}", f.name);
        for s in statements {
            rules.push(statement(&s, vec![], Some(tx), None, 0));
        }
    }
    rules.push(statement(
        q::RECORD_FUNCTIONS,
        vec![
            long("revision", i64::from(set.revision)),
            string("hash", &set.hash()),
            long(
                "migration",
                i64::from(live_ci_metadb::MIGRATIONS.last().unwrap().version),
            ),
        ],
        Some(tx),
        None,
        1,
    ));
    rules
}

#[tokio::test]
async fn a_first_migration_sends_each_statement_of_the_file_in_one_transaction() {
    let mut rules = vec![
        no_schema_migrations(),
        begin("tx-m"),
        statement(
            q::MIGRATION_LOCK,
            vec![],
            Some("tx-m"),
            Some(r#"[{"?column?":"locked"}]"#),
            0,
        ),
        statement(q::CREATE_SCHEMA_MIGRATIONS, vec![], Some("tx-m"), None, 0),
        statement(q::APPLIED_MIGRATIONS, vec![], Some("tx-m"), Some("[]"), 0),
    ];
    let mut counts = Vec::new();
    for script in live_ci_metadb::MIGRATIONS {
        let statements = live_ci_metadb::sql::text::split_statements(script.sql);
        for s in &statements {
            rules.push(statement(s, vec![], Some("tx-m"), None, 0));
        }
        rules.push(statement(
            q::RECORD_MIGRATION,
            vec![
                long("version", i64::from(script.version)),
                string("name", script.name),
            ],
            Some("tx-m"),
            None,
            1,
        ));
        // One statement per call: CREATE FUNCTION bodies keep their semicolons.
        assert!(statements.iter().all(|s| !s.trim_end().ends_with(';')));
        counts.push(statements.len());
    }
    rules.extend(function_rules("tx-m"));
    rules.push(commit("tx-m"));
    let wire = Wire::start(rules).await;
    let all: Vec<u32> = live_ci_metadb::MIGRATIONS
        .iter()
        .map(|m| m.version)
        .collect();
    assert_eq!(metadb(&wire).migrate().await.unwrap(), all);
    wire.verify().await;
    assert!(counts[0] > 15, "{counts:?}");
    assert_eq!(counts[1], 3, "{counts:?}");
    assert_eq!(counts[2], 1, "{counts:?}");
}

#[tokio::test]
async fn approval_requests_are_single_statements_with_named_parameters() {
    use live_ci_core::port::{ApprovalStore, NewApprovalRequest, RequestStored};
    use live_ci_metadb::sql::approval_statements as a;
    let rules = [
        statement(
            a::STORE_APPROVAL_REQUEST,
            vec![
                string("execution_id", "run-1-c8c5-dev-baz-729"),
                string(
                    "sfn_execution_arn",
                    "arn:aws:states:us-west-2:1:execution:m:x",
                ),
                string("task_token_ciphertext", "Y2lwaGVy"),
                string("task_token_hash", "ab12"),
                long("to_add", 1),
                long("to_change", 2),
                long("to_destroy", 3),
                string("plan_summary", "1 to add, 2 to change, 3 to destroy"),
                string("logs_url", "https://logs"),
                long("expires_at", 1_795_256_420_000),
            ],
            None,
            // As PostgreSQL 15 returns it through json_build_object.
            Some(
                r#"[{"json_build_object":"{\"stored\" : \"stored\", \"expires_at\" : 1795256420000, \"mailed\" : []}"}]"#,
            ),
            1,
        ),
        statement(
            a::APPROVAL_REQUEST,
            vec![string("execution_id", "run-1-c8c5-dev-baz-729")],
            None,
            // As PostgreSQL 15 returned it through live_ci_approval_json.
            Some(
                r#"[{"live_ci_approval_json":"{\"execution_id\" : \"run-1-c8c5-dev-baz-729\", \"sfn_execution_arn\" : \"arn:aws:states:us-west-2:1:execution:m:x\", \"task_token_ciphertext\" : \"Y2lwaGVy\", \"task_token_hash\" : \"ab12\", \"to_add\" : 1, \"to_change\" : 2, \"to_destroy\" : 3, \"plan_summary\" : \"1 to add, 2 to change, 3 to destroy\", \"logs_url\" : \"https://logs\", \"requested_at\" : 1795256400000, \"expires_at\" : 1795256420000, \"delivery_claimed_at\" : null, \"decision_sent_at\" : null, \"delivery\" : null}"}]"#,
            ),
            0,
        ),
        statement(
            a::CLAIM_DECISION_DELIVERY,
            vec![
                string("execution_id", "run-1-c8c5-dev-baz-729"),
                long("lease_secs", 30),
            ],
            None,
            Some("[]"),
            0,
        ),
    ];
    let wire = Wire::start(rules).await;
    let db = metadb(&wire);
    let stored = db
        .store_approval_request(&NewApprovalRequest {
            execution_id: "run-1-c8c5-dev-baz-729".into(),
            sfn_execution_arn: "arn:aws:states:us-west-2:1:execution:m:x".into(),
            task_token_ciphertext: "Y2lwaGVy".into(),
            task_token_hash: "ab12".into(),
            to_add: 1,
            to_change: 2,
            to_destroy: 3,
            plan_summary: "1 to add, 2 to change, 3 to destroy".into(),
            logs_url: "https://logs".into(),
            expires_at: 1_795_256_420_000,
        })
        .await
        .unwrap();
    assert_eq!(stored, RequestStored::Stored);
    let record = db
        .approval_request("run-1-c8c5-dev-baz-729")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((record.to_add, record.to_destroy), (1, 3));
    assert_eq!(
        record.plan_summary.as_deref(),
        Some("1 to add, 2 to change, 3 to destroy")
    );
    assert_eq!(record.expires_at, 1_795_256_420_000);
    assert_eq!(record.delivery, None);
    assert_eq!(record.task_token_ciphertext.as_deref(), Some("Y2lwaGVy"));
    assert!(
        !db.claim_decision_delivery("run-1-c8c5-dev-baz-729", 30)
            .await
            .unwrap()
    );
    wire.verify().await;
}
