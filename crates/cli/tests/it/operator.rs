//! The operator's controls through the `live-ci` binary against a real
//! PostgreSQL metadb (scripts/pg.sh) and LocalStack's Step Functions and SSM
//! (scripts/localstack.sh): abort stops executions and hands the lock on, retry
//! re-queues failed units at the same commit, unlock refuses while a run runs
//! unless forced; every control is logged.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use live_ci_testkit::pg as support;

use std::process::{Command, Output};

use live_ci_core::deploy::{ExecutionStatus, Outcome, RunStatus};
use live_ci_core::operate::ABORTED_BY_OPERATOR;
use live_ci_core::port::RunControl;
use live_ci_core::port::{ExecutionStore, RunStore, WorkflowEngine};
use live_ci_metadb::PgMetadb;
use live_ci_stepfunctions::SfnEngine;
use live_ci_testkit::aws::{sdk_config, sfn_client, state_machine};
use live_ci_testkit::{localstack_endpoint, unique};
use serde_json::Value;
use support::{TestDb, exec, run};

fn ssm() -> aws_sdk_ssm::Client {
    aws_sdk_ssm::Client::new(&sdk_config())
}

async fn put_lock(name: &str, value: &str) {
    ssm()
        .put_parameter()
        .name(name)
        .value(value)
        .r#type(aws_sdk_ssm::types::ParameterType::String)
        .overwrite(true)
        .send()
        .await
        .unwrap();
}

async fn lock_value(name: &str) -> String {
    ssm()
        .get_parameter()
        .name(name)
        .send()
        .await
        .unwrap()
        .parameter
        .unwrap()
        .value
        .unwrap()
}

/// A state machine whose executions wait (until stopped).
async fn waiting_engine() -> SfnEngine {
    let sfn = sfn_client();
    let machine = state_machine(
        &sfn,
        "live-ci-abort",
        r#"{"StartAt":"Wait","States":{"Wait":{"Type":"Wait","Seconds":600,"End":true}}}"#,
    )
    .await;
    SfnEngine::new(sfn, machine)
}

/// `live-ci <args>` with the metadb URL, the lock parameter and LocalStack.
fn live_ci(url: &str, lock: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_live-ci"))
        .args(args)
        .env("LIVE_CI_DATABASE_URL", url)
        .env("MERGE_LOCK_SSM_KEY", lock)
        .env("LIVE_CI_OPERATOR", "ops@example.com")
        .env("AWS_ENDPOINT_URL", localstack_endpoint().unwrap())
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env_remove("METADB_URL")
        .env_remove("METADB_CLUSTER_ARN")
        .output()
        .unwrap()
}

fn json_ok(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn failed_with(out: &Output, message: &str) {
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(message), "{err}");
}

async fn execution(db: &PgMetadb, id: &str) -> live_ci_core::deploy::ExecutionRecord {
    db.execution(id).await.unwrap().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_stops_running_executions_aborts_the_rest_and_hands_on_the_lock() {
    let t = TestDb::new().await;
    let db = t.metadb(1).await;
    let engine = waiting_engine().await;
    let lock = format!("/live-ci/{}", unique("lock"));
    let p = unique("ab");
    let (a, b, c) = (format!("{p}-a"), format!("{p}-b"), format!("{p}-c"));
    let first = db
        .create_run(&run(
            &format!("{p}-1"),
            4,
            vec![
                exec(&a, "dev", &[]),
                exec(&b, "dev", &[&a]),
                exec(&c, "dev", &[]),
            ],
        ))
        .await
        .unwrap()
        .run_id;
    let mut queued = run(
        &format!("{p}-2"),
        4,
        vec![exec(&format!("{p}-q"), "dev", &[])],
    );
    queued.pr_id = 8;
    let second = db.create_run(&queued).await.unwrap().run_id;
    // a and c deploy (real Step Functions executions), b waits for a.
    let mut arns = Vec::new();
    for e in db.claim_ready(first, 10).await.unwrap() {
        let arn = engine.start_execution(&e.execution_id, "{}").await.unwrap();
        assert!(
            db.attach_execution_arn(&e.execution_id, &arn)
                .await
                .unwrap()
        );
        arns.push(arn);
    }
    assert_eq!(arns.len(), 2);
    put_lock(&lock, "7").await;

    let out = live_ci(&t.url, &lock, &["abort", "--run", &first.to_string()]);
    let report = json_ok(&out);
    let mut aborted: Vec<String> = serde_json::from_value(report["aborted"].clone()).unwrap();
    aborted.sort();
    assert_eq!(aborted, [a.clone(), b.clone(), c.clone()]);
    let mut stopped: Vec<String> = serde_json::from_value(report["stopped"].clone()).unwrap();
    stopped.sort();
    arns.sort();
    assert_eq!(stopped, arns);
    assert_eq!(report["next_run"], second);
    assert_eq!(report["merge_lock"], "8");

    for arn in &arns {
        assert_eq!(
            engine.describe_execution(arn).await.unwrap().status,
            "ABORTED"
        );
    }
    for id in [&a, &b, &c] {
        let e = execution(&db, id).await;
        assert_eq!(e.status, ExecutionStatus::Aborted);
        assert_eq!(e.status_reason.as_deref(), Some(ABORTED_BY_OPERATOR));
    }
    assert_eq!(
        db.run(first).await.unwrap().unwrap().status,
        RunStatus::Failed
    );
    // The lock went to the queued run, in the row and in the parameter.
    assert_eq!(
        db.run(second).await.unwrap().unwrap().status,
        RunStatus::Running
    );
    assert_eq!(db.merge_lock().await.unwrap().run_id, Some(second));
    assert_eq!(lock_value(&lock).await, "8");
    let log = RunControl::actions(&db, 10).await.unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(
        (log[0].action.action.as_str(), log[0].action.run_id),
        ("abort", Some(first))
    );
    assert_eq!(log[0].action.actor, "ops@example.com");

    // A finished run cannot be aborted, nor a run that does not exist.
    let out = live_ci(&t.url, &lock, &["abort", "--run", &first.to_string()]);
    failed_with(
        &out,
        &format!("run {first} is failed: only a queued or running run can be aborted"),
    );
    let out = live_ci(&t.url, &lock, &["abort", "--run", "999999"]);
    failed_with(&out, "the metadb has no run 999999");
    assert_eq!(RunControl::actions(&db, 10).await.unwrap().len(), 1);
    t.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_requeues_the_failed_units_of_the_last_run_at_the_same_commit() {
    let t = TestDb::new().await;
    let db = t.metadb(1).await;
    let lock = format!("/live-ci/{}", unique("lock"));
    let p = unique("re");
    let (a, b, c) = (format!("{p}-a"), format!("{p}-b"), format!("{p}-c"));
    let commit = format!("{p}-commit");
    let new_run = run(
        &commit,
        4,
        vec![
            exec(&a, "dev", &[]),
            exec(&b, "dev", &[&a]),
            exec(&c, "dev", &[]),
        ],
    );
    let first = db.create_run(&new_run).await.unwrap().run_id;
    db.claim_ready(first, 10).await.unwrap();
    db.record_finished(&a, Outcome::Failed, Some("apply failed: boom"))
        .await
        .unwrap();
    db.record_finished(&c, Outcome::Succeeded, None)
        .await
        .unwrap();
    // Still running: nothing to retry yet.
    let out = live_ci(&t.url, &lock, &["retry", "--run", &first.to_string()]);
    failed_with(
        &out,
        &format!("run {first} is running: only a finished run can be retried"),
    );
    db.finish_run(first).await.unwrap();
    put_lock(&lock, "none").await;

    let out = live_ci(&t.url, &lock, &["retry", "--run", &first.to_string()]);
    let report = json_ok(&out);
    let retry = report["run_id"].as_i64().unwrap();
    assert_eq!(report["retried_run"], first);
    assert_eq!(report["started"], true);
    assert_eq!(report["merge_lock"], "7");
    let ids: Vec<String> = serde_json::from_value(report["execution_ids"].clone()).unwrap();
    assert_eq!(ids.len(), 2, "{ids:?}");

    let run = db.run(retry).await.unwrap().unwrap();
    assert_eq!(run.commit_id, commit);
    assert_eq!(run.status, RunStatus::Running);
    let executions = db.executions(retry).await.unwrap();
    let by_path = |path: &str| {
        executions
            .iter()
            .find(|e| e.cfg_path.as_str() == path)
            .unwrap()
            .clone()
    };
    let (ra, rb) = (by_path(&format!("dev/{a}")), by_path(&format!("dev/{b}")));
    assert!(
        executions
            .iter()
            .all(|e| e.status == ExecutionStatus::Waiting)
    );
    // b' waits for a' only; c succeeded and is not deployed again.
    assert_eq!(rb.wait_for, std::slice::from_ref(&ra.execution_id));
    assert!(ra.wait_for.is_empty());
    assert_ne!(ra.execution_id, a);
    // The claim follows the kept edge.
    let claimed = db.claim_ready(retry, 10).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].execution_id, ra.execution_id);
    assert_eq!(db.merge_lock().await.unwrap().run_id, Some(retry));
    assert_eq!(lock_value(&lock).await, "7");

    // The merge's own run stays the commit's run; a redelivered merge is
    // still recognised as a repeat.
    assert_eq!(
        db.run_by_commit(&commit).await.unwrap().unwrap().run_id,
        first
    );
    let again = db.create_run(&new_run).await.unwrap();
    assert!(!again.created && again.run_id == first, "{again:?}");

    // `runs` shows the retry and who holds the lock.
    let out = live_ci(&t.url, &lock, &["runs", "--format", "json"]);
    let runs = json_ok(&out);
    assert_eq!(runs[0]["run_id"], retry);
    assert_eq!(runs[0]["retry_of"], first);
    assert_eq!(runs[0]["holds_lock"], true);
    assert_eq!(runs[0]["progress"]["waiting"], 1);
    assert_eq!(runs[0]["progress"]["running"], 1);
    assert_eq!(runs[1]["run_id"], first);
    assert_eq!(runs[1]["status"], "failed");
    assert_eq!(runs[1]["progress"]["failed"], 1);
    assert_eq!(runs[1]["progress"]["aborted"], 1);
    assert_eq!(runs[1]["progress"]["succeeded"], 1);
    let out = live_ci(&t.url, &lock, &["runs"]);
    assert!(out.status.success());
    let table = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("RUN"), "{table}");
    assert!(
        lines[1].starts_with(&retry.to_string())
            && lines[1].contains("holds the merge lock, retry of run"),
        "{table}"
    );

    // Only the last run is retried: its units are in the newer one.
    let out = live_ci(&t.url, &lock, &["retry", "--run", &first.to_string()]);
    failed_with(
        &out,
        &format!("run {first} is not the last run: run {retry} came after it"),
    );
    let log = RunControl::actions(&db, 10).await.unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].action.action, "retry");
    t.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlock_refuses_while_a_run_runs_unless_forced_and_frees_a_stuck_parameter() {
    let t = TestDb::new().await;
    let db = t.metadb(1).await;
    let lock = format!("/live-ci/{}", unique("lock"));
    // No run at all, but the parameter was left "locked" (a lost write).
    put_lock(&lock, "42").await;
    let out = live_ci(&t.url, &lock, &["unlock"]);
    let report = json_ok(&out);
    assert_eq!(report["released_run"], Value::Null);
    assert_eq!(lock_value(&lock).await, "none");

    let p = unique("un");
    let running = db
        .create_run(&run(&p, 4, vec![exec(&format!("{p}-a"), "dev", &[])]))
        .await
        .unwrap()
        .run_id;
    put_lock(&lock, "7").await;
    let out = live_ci(&t.url, &lock, &["unlock"]);
    failed_with(
        &out,
        &format!("run {running} (PR #7) is running: abort it first, or pass --force"),
    );
    // Refused: nothing changed.
    assert_eq!(db.merge_lock().await.unwrap().run_id, Some(running));
    assert_eq!(lock_value(&lock).await, "7");

    let out = live_ci(&t.url, &lock, &["unlock", "--force"]);
    let report = json_ok(&out);
    assert_eq!(report["released_run"], running);
    assert_eq!(report["running_run"], running);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "forced free by ops@example.com while run {running} is running"
        )),
        "{err}"
    );
    assert_eq!(db.merge_lock().await.unwrap().run_id, None);
    assert_eq!(lock_value(&lock).await, "none");
    // The run deploys on.
    assert_eq!(
        db.run(running).await.unwrap().unwrap().status,
        RunStatus::Running
    );
    let log = RunControl::actions(&db, 10).await.unwrap();
    let actions: Vec<(&str, Option<i64>)> = log
        .iter()
        .map(|l| (l.action.action.as_str(), l.action.run_id))
        .collect();
    assert_eq!(
        actions,
        [("unlock --force", Some(running)), ("unlock", None)]
    );
    assert!(log[0].action.detail.contains("forced while run"), "{log:?}");
    t.drop_db().await;
}
