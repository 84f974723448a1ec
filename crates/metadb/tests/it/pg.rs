//! The PostgreSQL adapter against a real PostgreSQL (scripts/pg.sh): claims
//! under concurrency, the run queue, guarded updates, votes, migrations.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use live_ci_testkit::pg as support;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use live_ci_core::deploy::{
    Action, ExecutionStatus, FinishOutcome, Outcome, RunStatus, Vote, VoteOutcome, plan_rollbacks,
};
use live_ci_core::port::{ApprovalStore, ExecutionStore, RunStore, SweepStore};
use live_ci_metadb::{PgMetadb, Sql};
use support::{TestDb, exec, random_run, run};

async fn count(db: &PgMetadb, table: &str) -> i64 {
    let rows = db
        .sql()
        .query(&format!("SELECT count(*)::text FROM {table}"), &[])
        .await
        .unwrap();
    rows[0].parse().unwrap()
}

async fn status(db: &PgMetadb, id: &str) -> ExecutionStatus {
    db.execution(id).await.unwrap().unwrap().status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn migrations_are_idempotent_and_safe_concurrently() {
    let t = TestDb::new().await;
    let db = PgMetadb::connect(&t.url, 8).unwrap();
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move { db.migrate().await.unwrap() }));
    }
    let mut applied = Vec::new();
    for task in tasks {
        applied.push(task.await.unwrap());
    }
    let all: Vec<u32> = live_ci_metadb::MIGRATIONS
        .iter()
        .map(|m| m.version)
        .collect();
    assert_eq!(
        applied.iter().filter(|a| **a == all).count(),
        1,
        "{applied:?}"
    );
    assert_eq!(
        applied.iter().filter(|a| a.is_empty()).count(),
        5,
        "{applied:?}"
    );
    assert!(db.migrate().await.unwrap().is_empty());
    assert_eq!(count(&db, "schema_migrations").await, all.len() as i64);
    assert_eq!(count(&db, "merge_lock").await, 1);
    t.drop_db().await;
}

#[tokio::test]
async fn claims_follow_dependencies_and_carry_the_step_function_input() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let mut b = exec("run-7-c8c5-dev-b-001", "dev", &["run-7-c8c5-dev-a-000"]);
    b.priority = 1.0;
    let mut a = exec("run-7-c8c5-dev-a-000", "dev", &[]);
    a.priority = 2.0;
    a.new_providers = vec!["registry.terraform.io/hashicorp/null".into()];
    let created = db
        .create_run(&run("c8c5f6af", 4, vec![b, a]))
        .await
        .unwrap();
    assert!(created.created && created.started);
    let claimed = db.claim_ready(created.run_id, 10).await.unwrap();
    assert_eq!(claimed.len(), 1);
    let input = claimed[0].sfn_input();
    assert_eq!(input.execution_id, "run-7-c8c5-dev-a-000");
    assert_eq!(input.status, ExecutionStatus::Running);
    assert_eq!(input.pr_id, 7);
    assert_eq!(input.commit_id, "c8c5f6af");
    assert_eq!(input.cfg_path.as_str(), "dev/run-7-c8c5-dev-a-000");
    assert_eq!(
        input.new_providers,
        ["registry.terraform.io/hashicorp/null"]
    );
    assert_eq!(input.min_approval_count, 2);
    assert!(claimed[0].claimed_at.is_some() && claimed[0].sfn_execution_arn.is_none());
    // The claim builds its JSON inline; reads use live_ci_execution_json.
    let read = db.execution("run-7-c8c5-dev-a-000").await.unwrap().unwrap();
    assert_eq!(claimed[0], read);
    // b waits for a.
    assert!(db.claim_ready(created.run_id, 10).await.unwrap().is_empty());
    db.record_finished("run-7-c8c5-dev-a-000", Outcome::Succeeded, None)
        .await
        .unwrap();
    let claimed = db.claim_ready(created.run_id, 10).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].execution_id, "run-7-c8c5-dev-b-001");
    assert_eq!(claimed[0].wait_for, ["run-7-c8c5-dev-a-000"]);
    assert_eq!(claimed[0].cfg_deps[0].as_str(), "dev/run-7-c8c5-dev-a-000");
    t.drop_db().await;
}

#[tokio::test]
async fn account_waits_and_destroys_in_the_given_order() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let s1 = exec("s1", "shared", &[]);
    let s2 = exec("s2", "shared", &[]);
    let mut d1 = exec("d1", "dev", &[]);
    d1.wait_accounts = vec!["shared".into()];
    d1.priority = 9.0;
    // Destroys: the plan gives dependents first, so "old-vpc" waits for "old-app".
    let mut app = exec("old-app", "dev", &[]);
    app.action = Action::Destroy;
    let mut vpc = exec("old-vpc", "dev", &["old-app"]);
    vpc.action = Action::Destroy;
    vpc.priority = 5.0;
    // A destroy waiting for "shared" has no shared destroy to wait for.
    vpc.wait_accounts = vec!["shared".into()];
    let r = db
        .create_run(&run("c1", 10, vec![s1, s2, d1, app, vpc]))
        .await
        .unwrap();
    let ids = |v: Vec<live_ci_core::deploy::ExecutionRecord>| -> HashSet<String> {
        v.into_iter().map(|e| e.execution_id).collect()
    };
    let first = ids(db.claim_ready(r.run_id, 10).await.unwrap());
    assert_eq!(
        first,
        HashSet::from(["s1".into(), "s2".into(), "old-app".into()])
    );
    db.record_finished("s1", Outcome::Succeeded, None)
        .await
        .unwrap();
    assert!(db.claim_ready(r.run_id, 10).await.unwrap().is_empty());
    db.record_finished("old-app", Outcome::Succeeded, None)
        .await
        .unwrap();
    assert_eq!(
        ids(db.claim_ready(r.run_id, 10).await.unwrap()),
        HashSet::from(["old-vpc".into()])
    );
    db.record_finished("s2", Outcome::Succeeded, None)
        .await
        .unwrap();
    assert_eq!(
        ids(db.claim_ready(r.run_id, 10).await.unwrap()),
        HashSet::from(["d1".into()])
    );
    t.drop_db().await;
}

#[tokio::test]
async fn max_parallel_and_priority_order() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let execs: Vec<_> = (0..6)
        .map(|i| {
            let mut e = exec(&format!("e{i}"), "dev", &[]);
            e.priority = f64::from(i % 3);
            e
        })
        .collect();
    let r = db.create_run(&run("c1", 3, execs)).await.unwrap();
    let got: Vec<String> = db
        .claim_ready(r.run_id, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.execution_id)
        .collect();
    // Priority 2 first (e2, e5 in creation order), then one of priority 1: e1.
    assert_eq!(got, ["e2", "e5", "e1"]);
    assert!(db.claim_ready(r.run_id, 100).await.unwrap().is_empty());
    db.record_finished("e5", Outcome::Succeeded, None)
        .await
        .unwrap();
    let got: Vec<String> = db
        .claim_ready(r.run_id, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.execution_id)
        .collect();
    assert_eq!(got, ["e4"]);
    // The caller's limit applies too.
    db.record_finished("e4", Outcome::Succeeded, None)
        .await
        .unwrap();
    db.record_finished("e2", Outcome::Succeeded, None)
        .await
        .unwrap();
    assert_eq!(db.claim_ready(r.run_id, 1).await.unwrap().len(), 1);
    t.drop_db().await;
}

/// The brief's test: 8 concurrent claimers on a 500-unit run (random DAG with
/// account dependencies) start every unit exactly once, never before its
/// dependencies succeeded, never above max_parallel; some units fail and their
/// dependents are aborted.
#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn eight_concurrent_claimers_on_500_units() {
    let t = TestDb::new().await;
    let db = t.metadb(16).await;
    let accounts = ["shared", "dev", "prod"];
    let new_run = random_run("c500", 500, &accounts, 20, 42);
    let created = db.create_run(&new_run).await.unwrap();
    assert!(created.started);
    let run_id = created.run_id;
    let units: Arc<HashMap<String, live_ci_core::deploy::NewExecution>> = Arc::new(
        new_run
            .executions
            .iter()
            .map(|e| (e.execution_id.clone(), e.clone()))
            .collect(),
    );
    // Every 29th unit fails (deterministically).
    let fails: Arc<HashSet<String>> = Arc::new(
        new_run
            .executions
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 29 == 5)
            .map(|(_, e)| e.execution_id.clone())
            .collect(),
    );
    // Units reported succeeded, set just before the success is recorded: a
    // claim can only see a dependency succeed after that.
    let succeeded: Arc<Mutex<HashSet<String>>> = Arc::default();
    let started: Arc<Mutex<Vec<String>>> = Arc::default();
    let in_flight = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let mut claimers = Vec::new();
    for c in 0..8u64 {
        let (db, units, fails, succeeded, started, in_flight) = (
            db.clone(),
            units.clone(),
            fails.clone(),
            succeeded.clone(),
            started.clone(),
            in_flight.clone(),
        );
        claimers.push(tokio::spawn(async move {
            loop {
                let claimed = db.claim_ready(run_id, 3).await.unwrap();
                if claimed.is_empty() {
                    if db.run_progress(run_id).await.unwrap().is_done() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    continue;
                }
                let now = in_flight
                    .fetch_add(claimed.len() as u32, std::sync::atomic::Ordering::SeqCst)
                    + claimed.len() as u32;
                assert!(now <= 20, "{now} running above max_parallel 20");
                for e in &claimed {
                    let unit = &units[&e.execution_id];
                    {
                        let ok = succeeded.lock().unwrap();
                        for d in &unit.wait_for {
                            assert!(
                                ok.contains(d),
                                "{} started before {d} succeeded",
                                e.execution_id
                            );
                        }
                        for other in units.values() {
                            if unit.wait_accounts.contains(&other.account_name) {
                                assert!(
                                    ok.contains(&other.execution_id),
                                    "{} started before account unit {} succeeded",
                                    e.execution_id,
                                    other.execution_id
                                );
                            }
                        }
                    }
                    started.lock().unwrap().push(e.execution_id.clone());
                    assert!(
                        db.attach_execution_arn(
                            &e.execution_id,
                            &format!("arn:sfn:{}", e.execution_id)
                        )
                        .await
                        .unwrap()
                    );
                }
                for e in claimed {
                    let outcome = if fails.contains(&e.execution_id) {
                        Outcome::Failed
                    } else {
                        succeeded.lock().unwrap().insert(e.execution_id.clone());
                        Outcome::Succeeded
                    };
                    in_flight.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    let r = db
                        .record_finished(&e.execution_id, outcome, None)
                        .await
                        .unwrap();
                    assert!(matches!(r, FinishOutcome::Recorded { .. }), "{r:?}");
                }
                let _ = c;
            }
        }));
    }
    for c in claimers {
        c.await.unwrap();
    }
    let started = started.lock().unwrap().clone();
    let unique: HashSet<&String> = started.iter().collect();
    assert_eq!(unique.len(), started.len(), "an execution started twice");

    // Expected outcome: a unit is aborted iff something it (transitively) waits
    // for failed; everything else started exactly once.
    let records = db.executions(run_id).await.unwrap();
    assert_eq!(records.len(), 500);
    let by_id: HashMap<&str, &live_ci_core::deploy::ExecutionRecord> = records
        .iter()
        .map(|r| (r.execution_id.as_str(), r))
        .collect();
    let mut doomed: HashSet<String> = HashSet::new();
    // Units are generated so that everything a unit waits for comes before it.
    for e in &new_run.executions {
        let bad = e
            .wait_for
            .iter()
            .any(|d| fails.contains(d) || doomed.contains(d))
            || new_run.executions.iter().any(|o| {
                e.wait_accounts.contains(&o.account_name)
                    && (fails.contains(&o.execution_id) || doomed.contains(&o.execution_id))
            });
        if bad {
            doomed.insert(e.execution_id.clone());
        }
    }
    for e in &new_run.executions {
        let r = by_id[e.execution_id.as_str()];
        if doomed.contains(&e.execution_id) {
            assert_eq!(r.status, ExecutionStatus::Aborted, "{}", e.execution_id);
            assert_eq!(r.status_reason.as_deref(), Some("ancestor failed"));
            assert!(!unique.contains(&e.execution_id));
        } else if fails.contains(&e.execution_id) {
            assert_eq!(r.status, ExecutionStatus::Failed);
        } else {
            assert_eq!(r.status, ExecutionStatus::Succeeded, "{}", e.execution_id);
            assert!(unique.contains(&e.execution_id));
        }
    }
    assert!(
        !doomed.is_empty() && doomed.len() < 490,
        "{} doomed",
        doomed.len()
    );
    let finish = db.finish_run(run_id).await.unwrap();
    assert_eq!(finish.finished, Some(RunStatus::Failed));
    assert_eq!(db.merge_lock().await.unwrap().run_id, None);
    t.drop_db().await;
}

#[tokio::test]
async fn runs_queue_behind_the_running_one() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let r1 = db
        .create_run(&run("c1", 2, vec![exec("r1-a", "dev", &[])]))
        .await
        .unwrap();
    let r2 = db
        .create_run(&run("c2", 2, vec![exec("r2-a", "dev", &[])]))
        .await
        .unwrap();
    assert!(r1.started && !r2.started);
    assert!(r1.run_id < r2.run_id);
    assert_eq!(
        db.run(r2.run_id).await.unwrap().unwrap().status,
        RunStatus::Queued
    );
    let lock = db.merge_lock().await.unwrap();
    assert_eq!(
        (lock.run_id, lock.commit_id.as_deref()),
        (Some(r1.run_id), Some("c1"))
    );
    assert_eq!(
        lock.lock(),
        live_ci_core::merge_lock::MergeLock::Held { pr: 7 }
    );
    // A queued run claims nothing.
    assert!(db.claim_ready(r2.run_id, 10).await.unwrap().is_empty());
    // A repeated merge event changes nothing.
    let again = db
        .create_run(&run("c2", 2, vec![exec("other", "dev", &[])]))
        .await
        .unwrap();
    assert_eq!(
        (again.run_id, again.created, again.started),
        (r2.run_id, false, false)
    );
    assert!(db.execution("other").await.unwrap().is_none());
    // Run 1 is not finishable while its unit waits.
    assert_eq!(db.finish_run(r1.run_id).await.unwrap().finished, None);
    db.claim_ready(r1.run_id, 10).await.unwrap();
    db.record_finished("r1-a", Outcome::Succeeded, None)
        .await
        .unwrap();
    let f = db.finish_run(r1.run_id).await.unwrap();
    assert_eq!(
        (f.finished, f.next_run),
        (Some(RunStatus::Succeeded), Some(r2.run_id))
    );
    assert_eq!(db.merge_lock().await.unwrap().run_id, Some(r2.run_id));
    assert_eq!(
        db.run(r2.run_id).await.unwrap().unwrap().status,
        RunStatus::Running
    );
    let r3 = db.create_run(&run("c3", 2, vec![])).await.unwrap();
    assert!(!r3.started && r2.run_id < r3.run_id);
    assert_eq!(
        db.run(r3.run_id).await.unwrap().unwrap().status,
        RunStatus::Queued
    );
    assert_eq!(db.claim_ready(r2.run_id, 10).await.unwrap().len(), 1);
    db.record_finished("r2-a", Outcome::Failed, Some("plan failed"))
        .await
        .unwrap();
    let f = db.finish_run(r2.run_id).await.unwrap();
    assert_eq!(
        (f.finished, f.next_run),
        (Some(RunStatus::Failed), Some(r3.run_id))
    );
    // The empty run finishes at once and releases the lock.
    let f = db.finish_run(r3.run_id).await.unwrap();
    assert_eq!((f.finished, f.next_run), (Some(RunStatus::Succeeded), None));
    assert_eq!(db.merge_lock().await.unwrap().run_id, None);
    // With nothing running, the next merge starts at once.
    let r4 = db.create_run(&run("c4", 2, vec![])).await.unwrap();
    assert!(r4.started);
    t.drop_db().await;
}

#[tokio::test]
async fn guarded_updates_are_no_ops_the_second_time() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let r = db
        .create_run(&run(
            "c1",
            4,
            vec![
                exec("a", "dev", &[]),
                exec("b", "dev", &["a"]),
                exec("c", "dev", &["b"]),
                exec("x", "dev", &[]),
            ],
        ))
        .await
        .unwrap();
    let claimed = db.claim_ready(r.run_id, 10).await.unwrap();
    assert_eq!(claimed.len(), 2);
    // ARN: set once, repeatable with the same value, refused with another.
    assert!(db.attach_execution_arn("a", "arn:1").await.unwrap());
    assert!(db.attach_execution_arn("a", "arn:1").await.unwrap());
    assert!(!db.attach_execution_arn("a", "arn:2").await.unwrap());
    // Release: only a claim without an ARN, once.
    assert!(!db.release_claim("a").await.unwrap());
    assert!(db.release_claim("x").await.unwrap());
    assert!(!db.release_claim("x").await.unwrap());
    assert_eq!(status(&db, "x").await, ExecutionStatus::Waiting);
    assert!(!db.attach_execution_arn("x", "arn:x").await.unwrap());
    // New resources: recorded while running.
    let res = vec!["null_resource.this".to_string()];
    assert!(db.record_new_resources("a", &res).await.unwrap());
    assert!(!db.record_new_resources("x", &res).await.unwrap());
    assert_eq!(db.execution("a").await.unwrap().unwrap().new_resources, res);
    // Finish: once; repeats and unknown ids report instead of failing.
    let first = db
        .record_finished("a", Outcome::Failed, Some("FAILED"))
        .await
        .unwrap();
    assert_eq!(
        first,
        FinishOutcome::Recorded {
            aborted: vec!["b".into(), "c".into()]
        }
    );
    assert_eq!(
        db.record_finished("a", Outcome::Failed, None)
            .await
            .unwrap(),
        FinishOutcome::Unchanged {
            status: Some(ExecutionStatus::Failed)
        }
    );
    assert_eq!(
        db.record_finished("a", Outcome::Succeeded, None)
            .await
            .unwrap(),
        FinishOutcome::Unchanged {
            status: Some(ExecutionStatus::Failed)
        }
    );
    assert_eq!(
        db.record_finished("nope", Outcome::Succeeded, None)
            .await
            .unwrap(),
        FinishOutcome::Unchanged { status: None }
    );
    assert_eq!(
        db.record_finished("x", Outcome::Succeeded, None)
            .await
            .unwrap(),
        FinishOutcome::Unchanged {
            status: Some(ExecutionStatus::Waiting)
        }
    );
    let a = db.execution("a").await.unwrap().unwrap();
    assert_eq!(a.status_reason.as_deref(), Some("FAILED"));
    assert!(a.finished_at.is_some());
    assert!(db.abort_dependents("a").await.unwrap().is_empty());
    let c = db.execution("c").await.unwrap().unwrap();
    assert_eq!(
        (c.status, c.status_reason.as_deref()),
        (ExecutionStatus::Aborted, Some("ancestor failed"))
    );
    // Progress and the run's end, once.
    let p = db.run_progress(r.run_id).await.unwrap();
    assert_eq!((p.waiting, p.running, p.failed, p.aborted), (1, 0, 1, 2));
    db.claim_ready(r.run_id, 10).await.unwrap();
    db.record_finished("x", Outcome::Succeeded, None)
        .await
        .unwrap();
    assert_eq!(
        db.finish_run(r.run_id).await.unwrap().finished,
        Some(RunStatus::Failed)
    );
    assert_eq!(db.finish_run(r.run_id).await.unwrap().finished, None);
    assert!(db.claim_ready(r.run_id, 10).await.unwrap().is_empty());
    t.drop_db().await;
}

/// Rollbacks join a run only once its other executions ended, once, under
/// the same checks as a new run; their successes touch no account counter.
#[tokio::test]
async fn rollbacks_are_added_once_to_an_ended_run() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let r = db
        .create_run(&run(
            "c1",
            4,
            vec![exec("a", "dev", &[]), exec("b", "dev", &[])],
        ))
        .await
        .unwrap();
    let claimed = db.claim_ready(r.run_id, 10).await.unwrap();
    assert_eq!(claimed.len(), 2);
    db.record_new_resources("a", &["null_resource.a".into()])
        .await
        .unwrap();
    db.record_finished("a", Outcome::Succeeded, None)
        .await
        .unwrap();
    let executions = db.executions(r.run_id).await.unwrap();
    // b is still running: nothing is planned yet.
    assert!(plan_rollbacks(&executions).is_empty());
    db.record_finished("b", Outcome::Failed, Some("apply failed"))
        .await
        .unwrap();
    let executions = db.executions(r.run_id).await.unwrap();
    let rollbacks = plan_rollbacks(&executions);
    assert_eq!(rollbacks.len(), 1);

    let mut broken = rollbacks.clone();
    broken[0].execution.wait_for = vec!["nope".into()];
    let err = db.add_rollbacks(r.run_id, &broken).await.unwrap_err();
    assert!(err.to_string().contains("\"nope\""), "{err}");
    assert_eq!(count(&db, "executions").await, 2, "nothing written");

    let added = db.add_rollbacks(r.run_id, &rollbacks).await.unwrap();
    assert_eq!(added, ["a-rb"]);
    assert!(
        db.add_rollbacks(r.run_id, &rollbacks)
            .await
            .unwrap()
            .is_empty()
    );
    let rb = db.execution("a-rb").await.unwrap().unwrap();
    assert!(rb.is_rollback);
    assert_eq!(rb.action, Action::Destroy);
    assert_eq!(rb.new_resources, ["null_resource.a"]);
    assert_eq!(rb.status, ExecutionStatus::Waiting);

    let claimed = db.claim_ready(r.run_id, 10).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].execution_id, "a-rb");
    db.record_finished("a-rb", Outcome::Succeeded, None)
        .await
        .unwrap();
    let finish = db.finish_run(r.run_id).await.unwrap();
    assert_eq!(finish.finished, Some(RunStatus::Failed));
    // A finished run takes no rollbacks.
    let again = plan_rollbacks(&db.executions(r.run_id).await.unwrap());
    assert!(again.is_empty());
    t.drop_db().await;
}

#[tokio::test]
async fn fail_fast_aborts_every_unstarted_unit() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let mut new_run = run(
        "c1",
        1,
        vec![
            exec("a", "dev", &[]),
            exec("b", "dev", &["a"]),
            exec("z", "dev", &[]),
        ],
    );
    new_run.executions[0].priority = 5.0;
    new_run.fail_fast = true;
    let r = db.create_run(&new_run).await.unwrap();
    assert_eq!(
        db.claim_ready(r.run_id, 10).await.unwrap()[0].execution_id,
        "a"
    );
    let out = db
        .record_finished("a", Outcome::Failed, None)
        .await
        .unwrap();
    assert_eq!(
        out,
        FinishOutcome::Recorded {
            aborted: vec!["b".into(), "z".into()]
        }
    );
    let z = db.execution("z").await.unwrap().unwrap();
    assert_eq!(z.status_reason.as_deref(), Some("fail-fast"));
    let b = db.execution("b").await.unwrap().unwrap();
    assert_eq!(b.status_reason.as_deref(), Some("ancestor failed"));
    t.drop_db().await;
}

#[tokio::test]
async fn stale_claims_and_running_with_arn() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let r = db
        .create_run(&run(
            "c1",
            4,
            vec![exec("a", "dev", &[]), exec("b", "dev", &[])],
        ))
        .await
        .unwrap();
    db.claim_ready(r.run_id, 10).await.unwrap();
    db.attach_execution_arn("a", "arn:a").await.unwrap();
    assert!(db.stale_claims(3600).await.unwrap().is_empty());
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let stale: Vec<String> = db
        .stale_claims(1)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.execution_id)
        .collect();
    assert_eq!(stale, ["b"]);
    let running: Vec<String> = db
        .running_with_arn(10)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.execution_id)
        .collect();
    assert_eq!(running, ["a"]);
    t.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn votes_change_until_one_caller_decides() {
    let t = TestDb::new().await;
    let db = t.metadb(12).await;
    let r = db
        .create_run(&run(
            "c1",
            4,
            vec![exec("a", "dev", &[]), exec("w", "dev", &["a"])],
        ))
        .await
        .unwrap();
    // Not running yet: "w" waits.
    db.claim_ready(r.run_id, 10).await.unwrap();
    assert_eq!(
        db.cast_vote("w", "a@example.com", Vote::Approve)
            .await
            .unwrap(),
        VoteOutcome::Closed {
            status: ExecutionStatus::Waiting,
            decision: None
        }
    );
    assert_eq!(
        db.cast_vote("a", "mallory@example.com", Vote::Approve)
            .await
            .unwrap(),
        VoteOutcome::NotAVoter
    );
    assert_eq!(
        db.cast_vote("nope", "a@example.com", Vote::Approve)
            .await
            .unwrap(),
        VoteOutcome::UnknownExecution
    );
    let VoteOutcome::Recorded(tally) = db
        .cast_vote("a", "a@example.com", Vote::Approve)
        .await
        .unwrap()
    else {
        panic!("vote not recorded")
    };
    assert_eq!(tally.approval_voters, ["a@example.com"]);
    assert_eq!(tally.reached(), None);
    assert_eq!(db.decide("a").await.unwrap(), None);
    // A voter changes their mind: one row per voter.
    let VoteOutcome::Recorded(tally) = db
        .cast_vote("a", "a@example.com", Vote::Reject)
        .await
        .unwrap()
    else {
        panic!("vote not recorded")
    };
    assert!(tally.approval_voters.is_empty());
    assert_eq!(tally.rejection_voters, ["a@example.com"]);
    db.cast_vote("a", "a@example.com", Vote::Approve)
        .await
        .unwrap();
    db.cast_vote("a", "b@example.com", Vote::Approve)
        .await
        .unwrap();
    assert_eq!(count(&db, "votes").await, 2);
    // Ten concurrent deciders: exactly one gets the decision.
    let mut tasks = Vec::new();
    for _ in 0..10 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move { db.decide("a").await.unwrap() }));
    }
    let mut decisions = Vec::new();
    for task in tasks {
        decisions.extend(task.await.unwrap());
    }
    assert_eq!(decisions, [Vote::Approve]);
    // After the decision, votes are closed.
    assert_eq!(
        db.cast_vote("a", "c@example.com", Vote::Reject)
            .await
            .unwrap(),
        VoteOutcome::Closed {
            status: ExecutionStatus::Running,
            decision: Some(Vote::Approve)
        }
    );
    let a = db.execution("a").await.unwrap().unwrap();
    assert_eq!(a.approval_voters, ["a@example.com", "b@example.com"]);
    assert_eq!(a.decision, Some(Vote::Approve));
    assert_eq!(
        a.sfn_input().approval_voters,
        ["a@example.com", "b@example.com"]
    );
    t.drop_db().await;
}

#[tokio::test]
async fn bad_input_is_refused_and_writes_nothing() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let err = db
        .create_run(&run("c1", 2, vec![exec("a", "dev", &["ghost"])]))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "execution \"a\": wait_for: \"ghost\" is not an execution of this run"
    );
    assert_eq!(count(&db, "runs").await, 0);
    // The database refuses what validation cannot see: an execution id already
    // used by another run. The whole run is rolled back.
    db.create_run(&run("c1", 2, vec![exec("a", "dev", &[])]))
        .await
        .unwrap();
    let err = db
        .create_run(&run(
            "c2",
            2,
            vec![exec("b", "dev", &[]), exec("a", "dev", &[])],
        ))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("executions_execution_id_key"),
        "{err}"
    );
    assert_eq!(count(&db, "runs").await, 1);
    assert_eq!(count(&db, "executions").await, 1);
    assert!(db.execution("b").await.unwrap().is_none());
    t.drop_db().await;
}

#[tokio::test]
async fn accounts_are_upserted() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let accounts = live_ci_core::account::Accounts::from_json(
        "accounts.json",
        r#"[{"name":"dev","path":"dev","dependencies":[],"voters":["a@example.com"],
            "min_approval_count":1,"min_rejection_count":1,
            "plan_role_arn":"arn:plan","apply_role_arn":"arn:apply"}]"#,
    )
    .unwrap();
    db.upsert_accounts(accounts.all()).await.unwrap();
    db.upsert_accounts(accounts.all()).await.unwrap();
    assert_eq!(count(&db, "accounts").await, 1);
    t.drop_db().await;
}
