//! trigger_sf with the real Step Functions adapter in LocalStack and a real
//! PostgreSQL metadb: a three-unit chain driven to the end by the sweep alone
//! (as if every status-change event had been lost).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use live_ci_testkit::pg as support;

use std::time::{Duration, Instant};

use crate::ports::{Fakes, Wired};
use live_ci_core::deploy::{ExecutionStatus, RunStatus};
use live_ci_core::port::ParamStore;
use live_ci_core::port::{ExecutionStore, RunStore, WorkflowEngine};
use live_ci_core::status::NoGitHost;
use live_ci_core::webhook::FilePattern;
use live_ci_stepfunctions::SfnEngine;
use live_ci_testkit::aws::{sfn_client, state_machine};
use live_ci_trigger_sf::{HandlerConfig, Input};
use support::{TestDb, exec, run};

use live_ci_testkit::params::MemoryParams as Params;

async fn engine() -> SfnEngine {
    let sfn = sfn_client();
    // A machine that passes its input through: the loop is under test here,
    // the deployment definition has its own LocalStack tests.
    let machine = state_machine(
        &sfn,
        "live-ci-trigger",
        r#"{"StartAt":"Done","States":{"Done":{"Type":"Pass","End":true}}}"#,
    )
    .await;
    SfnEngine::new(sfn, machine)
}

#[tokio::test]
async fn the_sweep_drives_a_chain_through_step_functions() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    // Execution names must be unique per state machine; the machine is new.
    let created = db
        .create_run(&run(
            "l1",
            4,
            vec![
                exec("l1-a", "dev", &[]),
                exec("l1-b", "dev", &["l1-a"]),
                exec("l1-c", "dev", &["l1-b"]),
            ],
        ))
        .await
        .unwrap();
    let config = HandlerConfig::new(
        "/live-ci/merge-lock",
        FilePattern::new(FilePattern::DEFAULT).unwrap(),
    );
    let h = Wired::new(
        config,
        Fakes::new(db, engine().await, Params::default(), NoGitHost),
    );

    let r = h.handle(&Input::Run(created.run_id)).await.unwrap();
    assert_eq!(r.started, ["l1-a"]);
    let mut recorded = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = h.handle(&Input::Sweep).await.unwrap();
        recorded.extend(r.recorded);
        if !r.finished.is_empty() {
            assert_eq!(r.finished, [(created.run_id, RunStatus::Succeeded)]);
            break;
        }
        assert!(Instant::now() < deadline, "run not finished: {recorded:?}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert_eq!(recorded, ["l1-a", "l1-b", "l1-c"]);
    for id in ["l1-a", "l1-b", "l1-c"] {
        let e = h.metadb.execution(id).await.unwrap().unwrap();
        assert_eq!(e.status, ExecutionStatus::Succeeded);
        let arn = e.sfn_execution_arn.unwrap();
        let d = h.engine.describe_execution(&arn).await.unwrap();
        assert_eq!(d.status, "SUCCEEDED");
        assert_eq!(d.name, id);
    }
    assert_eq!(h.params.get("/live-ci/merge-lock").await.unwrap(), "none");
    t.drop_db().await;
}

/// A denied call surfaces naming role, action and resource (issue 28, item 5;
/// trigger_sf): StartExecution as a role that may only describe executions is
/// refused by the local cloud's IAM; with one start attempt allowed the unit
/// fails at once (no retry loop), its reason carrying AWS's AccessDenied text.
#[tokio::test]
async fn a_start_execution_the_role_may_not_make_fails_the_unit_naming_role_action_and_resource() {
    let endpoint = live_ci_testkit::localstack_endpoint().unwrap();
    if !live_ci_testkit::aws::iam_enforced(&endpoint).await {
        eprintln!("skipping: the local cloud does not enforce IAM");
        return;
    }
    let machine = state_machine(
        &sfn_client(),
        "live-ci-denied",
        r#"{"StartAt":"Done","States":{"Done":{"Type":"Pass","End":true}}}"#,
    )
    .await;
    let role = live_ci_testkit::unique("trigger-sf");
    let (role_arn, config) = live_ci_testkit::aws::role_session(
        &endpoint,
        &role,
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"states:DescribeExecution","Resource":"*"}]}"#,
    )
    .await;
    let engine = SfnEngine::new(aws_sdk_sfn::Client::new(&config), machine.clone());
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let created = db
        .create_run(&run("d1", 4, vec![exec("d1-a", "dev", &[])]))
        .await
        .unwrap();
    let mut handler_config = HandlerConfig::new(
        "/live-ci/merge-lock",
        FilePattern::new(FilePattern::DEFAULT).unwrap(),
    );
    handler_config.max_start_attempts = 1;
    let h = Wired::new(
        handler_config,
        Fakes::new(db, engine, Params::default(), NoGitHost),
    );
    let started = Instant::now();
    let r = h.handle(&Input::Run(created.run_id)).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(r.start_failed, ["d1-a"]);
    let e = h.metadb.execution("d1-a").await.unwrap().unwrap();
    assert_eq!(e.status, ExecutionStatus::Failed);
    let reason = e.status_reason.unwrap_or_default();
    let session = role_arn
        .replace(":iam::", ":sts::")
        .replace(":role/", ":assumed-role/");
    assert!(
        reason.contains(&format!(
            "User: {session}/test is not authorized to perform: states:StartExecution on resource: {machine}"
        )),
        "{reason}"
    );
    t.drop_db().await;
}
