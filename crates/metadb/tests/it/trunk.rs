//! Trunk order against a real PostgreSQL (scripts/pg.sh): queued runs start
//! newest on the trunk first whatever order they were created in, the older
//! queued runs are superseded (never started), and units whose deployment
//! failed stay pending.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use live_ci_testkit::pg as support;

use live_ci_core::deploy::{ExecutionStatus, NewRun, Outcome, RunStatus};
use live_ci_core::port::{ExecutionStore, RunStore};
use live_ci_metadb::{PgMetadb, Sql};
use support::{TestDb, exec, run};

fn at(commit: &str, trunk_seq: u64, executions: Vec<live_ci_core::deploy::NewExecution>) -> NewRun {
    NewRun {
        trunk_seq,
        ..run(commit, 4, executions)
    }
}

async fn status(db: &PgMetadb, run_id: i64) -> RunStatus {
    db.run(run_id).await.unwrap().unwrap().status
}

async fn finish_all(db: &PgMetadb, run_id: i64, outcome: Outcome) {
    loop {
        let claimed = db.claim_ready(run_id, 10).await.unwrap();
        if claimed.is_empty() {
            break;
        }
        for e in claimed {
            db.record_finished(&e.execution_id, outcome, None)
                .await
                .unwrap();
        }
    }
}

#[tokio::test]
async fn merges_created_in_reverse_order_start_in_trunk_order() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let running = db
        .create_run(&at("c10", 10, vec![exec("r10-a", "dev", &[])]))
        .await
        .unwrap();
    assert!(running.started);
    // The later merge (trunk position 12) finishes create-deploy-stack first,
    // then the earlier one (11): both queue behind the running run.
    let later = db
        .create_run(&at("c12", 12, vec![exec("r12-a", "dev", &[])]))
        .await
        .unwrap();
    let earlier = db
        .create_run(&at("c11", 11, vec![exec("r11-a", "dev", &[])]))
        .await
        .unwrap();
    assert!(!later.started && !earlier.started);
    assert!(later.run_id < earlier.run_id);

    finish_all(&db, running.run_id, Outcome::Succeeded).await;
    let f = db.finish_run(running.run_id).await.unwrap();
    // The newest on the trunk starts (its range covers c11's); c11 never runs.
    assert_eq!(f.next_run, Some(later.run_id));
    assert_eq!(status(&db, later.run_id).await, RunStatus::Running);
    let superseded = db.run(earlier.run_id).await.unwrap().unwrap();
    assert_eq!(superseded.status, RunStatus::Superseded);
    assert_eq!(superseded.superseded_by, Some(later.run_id));
    let e = db.execution("r11-a").await.unwrap().unwrap();
    assert_eq!(e.status, ExecutionStatus::Aborted);
    assert_eq!(
        e.status_reason.as_deref(),
        Some(format!("superseded by run #{}", later.run_id).as_str())
    );
    assert!(db.claim_ready(earlier.run_id, 10).await.unwrap().is_empty());
    let covered: Vec<String> = db
        .superseded_runs(later.run_id)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.commit_id)
        .collect();
    assert_eq!(covered, ["c11"]);
    assert!(db.superseded_runs(running.run_id).await.unwrap().is_empty());
    // What a new merge is placed against: newest on the trunk first, no superseded.
    let trunk: Vec<(String, u64)> = db
        .trunk_runs(10)
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.commit_id, r.trunk_seq))
        .collect();
    assert_eq!(trunk, [("c12".to_string(), 12), ("c10".to_string(), 10)]);
    t.drop_db().await;
}

/// An execution of a unit another run also deploys (ids are unique).
fn again(id: &str, cfg_path: &str) -> live_ci_core::deploy::NewExecution {
    live_ci_core::deploy::NewExecution {
        cfg_path: live_ci_core::path::RepoPath::new(cfg_path).unwrap(),
        ..exec(id, "prod", &[])
    }
}

/// The `units` merge lock scope's input: the units of running and queued
/// runs, and none of a finished or superseded run's.
#[tokio::test]
async fn busy_units_are_those_of_running_and_queued_runs() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    assert!(db.busy_units().await.unwrap().is_empty());
    let running = db
        .create_run(&at(
            "c20",
            20,
            vec![exec("vpc", "prod", &[]), exec("app", "prod", &["vpc"])],
        ))
        .await
        .unwrap();
    let older = db
        .create_run(&at("c21", 21, vec![exec("db", "dev", &[])]))
        .await
        .unwrap();
    db.create_run(&at(
        "c22",
        22,
        vec![
            again("c22-dev-app", "dev/app"),
            again("c22-app", "prod/app"),
        ],
    ))
    .await
    .unwrap();
    assert!(running.started && !older.started);
    assert_eq!(
        db.busy_units().await.unwrap(),
        ["dev/app", "dev/db", "prod/app", "prod/vpc"]
    );
    finish_all(&db, running.run_id, Outcome::Succeeded).await;
    db.finish_run(running.run_id).await.unwrap();
    // c22 runs now; c21 is superseded and c20 finished: neither counts.
    assert_eq!(db.busy_units().await.unwrap(), ["dev/app", "prod/app"]);
    t.drop_db().await;
}

#[tokio::test]
async fn a_queued_run_older_than_a_started_one_never_starts() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    // The newer merge took the free lock before the older one was written.
    let newer = db
        .create_run(&at("c21", 21, vec![exec("n-a", "dev", &[])]))
        .await
        .unwrap();
    let older = db
        .create_run(&at("c20", 20, vec![exec("o-a", "dev", &[])]))
        .await
        .unwrap();
    assert!(newer.started && !older.started);
    finish_all(&db, newer.run_id, Outcome::Succeeded).await;
    let f = db.finish_run(newer.run_id).await.unwrap();
    assert_eq!(f.next_run, None);
    let r = db.run(older.run_id).await.unwrap().unwrap();
    assert_eq!(
        (r.status, r.superseded_by),
        (RunStatus::Superseded, Some(newer.run_id))
    );
    assert_eq!(db.merge_lock().await.unwrap().run_id, None);
    // An older merge arriving while nothing runs is superseded at once too.
    let late = db
        .create_run(&at("c19", 19, vec![exec("l-a", "dev", &[])]))
        .await
        .unwrap();
    assert!(late.created && !late.started);
    assert_eq!(status(&db, late.run_id).await, RunStatus::Superseded);
    // Oldest on the trunk first.
    let covered: Vec<String> = db
        .superseded_runs(newer.run_id)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.commit_id)
        .collect();
    assert_eq!(covered, ["c19", "c20"]);
    t.drop_db().await;
}

#[tokio::test]
async fn failed_units_stay_pending_until_applied() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let first = db
        .create_run(&at(
            "c30",
            30,
            vec![
                exec("a", "dev", &[]),
                exec("b", "dev", &["a"]),
                exec("c", "dev", &[]),
            ],
        ))
        .await
        .unwrap();
    // While the run is going, nothing is pending.
    assert!(db.pending_units().await.unwrap().is_empty());
    let claimed = db.claim_ready(first.run_id, 10).await.unwrap();
    for e in claimed {
        let outcome = if e.execution_id == "a" {
            Outcome::Failed
        } else {
            Outcome::Succeeded
        };
        db.record_finished(&e.execution_id, outcome, None)
            .await
            .unwrap();
    }
    db.finish_run(first.run_id).await.unwrap();
    let pending: Vec<(String, ExecutionStatus)> = db
        .pending_units()
        .await
        .unwrap()
        .into_iter()
        .map(|p| (p.cfg_path.to_string(), p.last_status))
        .collect();
    // The failed unit and its aborted dependent; not the one that succeeded.
    assert_eq!(
        pending,
        [
            ("dev/a".to_string(), ExecutionStatus::Failed),
            ("dev/b".to_string(), ExecutionStatus::Aborted)
        ]
    );
    // A later run that applies them clears them.
    let second = db
        .create_run(&at(
            "c31",
            31,
            vec![exec("a2", "dev", &[]), exec("b2", "dev", &["a2"])],
        ))
        .await
        .unwrap();
    assert!(second.started);
    // exec() names paths after the execution id: map them onto the same units.
    db.sql()
        .execute(
            "UPDATE executions SET cfg_path = 'dev/' || left(execution_id, 1) WHERE run_id = :r",
            &[("r", live_ci_metadb::Param::Int(second.run_id))],
        )
        .await
        .unwrap();
    finish_all(&db, second.run_id, Outcome::Succeeded).await;
    db.finish_run(second.run_id).await.unwrap();
    assert!(db.pending_units().await.unwrap().is_empty());
    t.drop_db().await;
}
