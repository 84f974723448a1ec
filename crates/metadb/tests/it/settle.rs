//! `settle` and `claim_next` (migration 0010's functions): a status change in
//! one call against a real PostgreSQL, and the run lock that keeps concurrent
//! settles of one run within its free slots. The same checks run through the
//! local cloud's Data API in `data_api_local`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::sync::Arc;

use live_ci_core::deploy::{
    ExecutionStatus, FinishOutcome, NewExecution, Outcome, RunProgress, RunStatus, Settled,
    StatusChange,
};
use live_ci_core::port::{ExecutionStore, RunStore};
use live_ci_testkit::pg::{TestDb, exec, run};

fn arn(name: &str) -> String {
    format!("arn:aws:states:us-east-1:000000000000:execution:deploy:{name}")
}

fn change<'a>(name: &'a str, arn: &'a str, ended: Option<Outcome>) -> StatusChange<'a> {
    StatusChange {
        execution_id: name,
        execution_arn: arn,
        ended: ended.map(|o| {
            let reason = (o == Outcome::Failed).then_some("plan failed");
            (o, reason)
        }),
    }
}

fn progress(waiting: u64, running: u64, succeeded: u64, failed: u64, aborted: u64) -> RunProgress {
    RunProgress {
        waiting,
        running,
        succeeded,
        failed,
        aborted,
    }
}

/// What one status change does, case by case, on `db` (a fresh metadb).
pub(crate) async fn settle_finishes_claims_and_counts<M>(db: &M, prefix: &str)
where
    M: ExecutionStore + RunStore,
    <M as ExecutionStore>::Error: std::fmt::Debug,
    <M as RunStore>::Error: std::fmt::Debug,
{
    let id = |s: &str| format!("{prefix}-{s}");
    let (a, b, c, d, e) = (id("a"), id("b"), id("c"), id("d"), id("e"));
    let mut high = exec(&c, "dev", &[&a]);
    high.priority = 5.0;
    let created = db
        .create_run(&run(
            &format!("{prefix}-commit"),
            4,
            vec![
                exec(&a, "dev", &[]),
                exec(&b, "dev", &[&a]),
                high,
                exec(&d, "dev", &[&b]),
                exec(&e, "dev", &[&d]),
            ],
        ))
        .await
        .unwrap();
    assert!(created.started);
    let run_id = created.run_id;

    // A name no execution has: nothing to do.
    let unknown = db
        .settle(
            &change("elsewhere", &arn("elsewhere"), Some(Outcome::Succeeded)),
            10,
        )
        .await
        .unwrap();
    assert_eq!(unknown, Settled::Unknown);

    // A status that is not an end still claims: the run's first unit.
    let Settled::Advanced {
        execution,
        finish,
        next,
        ..
    } = db.settle(&change(&a, &arn(&a), None), 10).await.unwrap()
    else {
        panic!("not advanced")
    };
    assert_eq!(execution.status, ExecutionStatus::Waiting);
    assert_eq!(finish, None);
    let ids: Vec<&str> = next
        .claimed
        .iter()
        .map(|x| x.execution_id.as_str())
        .collect();
    assert_eq!(ids, [a.as_str()]);
    assert_eq!(next.progress, progress(4, 1, 0, 0, 0));
    assert!(
        db.attach_execution_arns(&[(a.clone(), arn(&a))])
            .await
            .unwrap()
            == [a.clone()]
    );

    // Another state machine's execution with the same name changes nothing.
    let foreign = db
        .settle(&change(&a, &arn("other"), Some(Outcome::Failed)), 10)
        .await
        .unwrap();
    assert!(matches!(&foreign, Settled::Foreign { execution } if execution.execution_id == a));
    assert_eq!(
        db.execution(&a).await.unwrap().unwrap().status,
        ExecutionStatus::Running
    );

    // a succeeds: b and c are claimed, highest priority first, with the
    // records a read gives.
    let Settled::Advanced {
        execution,
        finish,
        aborted_units,
        next,
    } = db
        .settle(&change(&a, &arn(&a), Some(Outcome::Succeeded)), 10)
        .await
        .unwrap()
    else {
        panic!("not advanced")
    };
    assert_eq!(execution.execution_id, a);
    assert_eq!(
        execution.status,
        ExecutionStatus::Running,
        "as read before the finish"
    );
    assert_eq!(finish, Some(FinishOutcome::Recorded { aborted: vec![] }));
    assert!(aborted_units.is_empty());
    let ids: Vec<&str> = next
        .claimed
        .iter()
        .map(|x| x.execution_id.as_str())
        .collect();
    assert_eq!(ids, [c.as_str(), b.as_str()]);
    assert_eq!(next.progress, progress(2, 2, 1, 0, 0));
    for claimed in &next.claimed {
        assert_eq!(
            Some(claimed),
            db.execution(&claimed.execution_id).await.unwrap().as_ref()
        );
    }
    let attached = db
        .attach_execution_arns(&[
            (b.clone(), arn(&b)),
            (c.clone(), arn(&c)),
            (a.clone(), arn(&a)),
        ])
        .await
        .unwrap();
    // a ended: its ARN is not attached again.
    assert_eq!(
        attached.iter().collect::<HashSet<_>>(),
        HashSet::from([&b, &c])
    );

    // A repeat records nothing and claims nothing.
    let Settled::Advanced { finish, next, .. } = db
        .settle(&change(&a, &arn(&a), Some(Outcome::Succeeded)), 10)
        .await
        .unwrap()
    else {
        panic!("not advanced")
    };
    assert_eq!(
        finish,
        Some(FinishOutcome::Unchanged {
            status: Some(ExecutionStatus::Succeeded)
        })
    );
    assert!(next.claimed.is_empty());
    assert_eq!(next.progress, progress(2, 2, 1, 0, 0));

    // b fails: d and e (transitively) are aborted, with what their statuses need.
    let Settled::Advanced {
        finish,
        aborted_units,
        next,
        ..
    } = db
        .settle(&change(&b, &arn(&b), Some(Outcome::Failed)), 10)
        .await
        .unwrap()
    else {
        panic!("not advanced")
    };
    assert_eq!(
        finish,
        Some(FinishOutcome::Recorded {
            aborted: vec![d.clone(), e.clone()]
        })
    );
    let units: Vec<(&str, &str, Option<&str>)> = aborted_units
        .iter()
        .map(|u| {
            (
                u.execution_id.as_str(),
                u.cfg_path.as_str(),
                u.status_reason.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        units,
        [
            (
                d.as_str(),
                format!("dev/{d}").as_str(),
                Some("ancestor failed")
            ),
            (
                e.as_str(),
                format!("dev/{e}").as_str(),
                Some("ancestor failed")
            ),
        ]
    );
    assert_eq!(next.progress, progress(0, 1, 1, 1, 2));
    let stored = db.execution(&b).await.unwrap().unwrap();
    assert_eq!(stored.status_reason.as_deref(), Some("plan failed"));

    // The last one ends the run's work; claim_next claims nothing more.
    db.settle(&change(&c, &arn(&c), Some(Outcome::Succeeded)), 10)
        .await
        .unwrap();
    let next = db.claim_next(run_id, 10).await.unwrap();
    assert!(next.claimed.is_empty());
    assert!(next.progress.is_done());
    assert_eq!(next.progress, progress(0, 0, 2, 1, 2));
}

/// `finishers` executions run, each in an account of its own (so no shared
/// counter row serializes their finishes), each with `max_parallel` waiting
/// dependents: every slot the run has is claimable by every finisher at once.
/// All finish concurrently. Whatever the interleaving, the run ends with
/// exactly `max_parallel` running, no execution claimed twice.
pub(crate) async fn concurrent_settles_claim_within_the_free_slots<M>(db: Arc<M>, prefix: &str)
where
    M: ExecutionStore + RunStore + 'static,
    <M as ExecutionStore>::Error: std::fmt::Debug,
    <M as RunStore>::Error: std::fmt::Debug,
{
    const FINISHERS: usize = 6;
    const MAX_PARALLEL: usize = 12;
    let mut executions: Vec<NewExecution> = Vec::new();
    for f in 0..FINISHERS {
        let account = format!("acc{f}");
        let x = format!("{prefix}-x{f}");
        let mut first = exec(&x, &account, &[]);
        first.priority = 10.0;
        executions.push(first);
        for d in 0..MAX_PARALLEL {
            executions.push(exec(&format!("{prefix}-x{f}-d{d}"), &account, &[&x]));
        }
    }
    let created = db
        .create_run(&run(
            &format!("{prefix}-commit"),
            MAX_PARALLEL as u32,
            executions,
        ))
        .await
        .unwrap();
    let run_id = created.run_id;
    let first = db.claim_next(run_id, 100).await.unwrap();
    assert_eq!(first.claimed.len(), FINISHERS, "only the x's are ready");

    let barrier = Arc::new(tokio::sync::Barrier::new(FINISHERS));
    let mut settles = Vec::new();
    for f in 0..FINISHERS {
        let (db, barrier) = (db.clone(), barrier.clone());
        let x = format!("{prefix}-x{f}");
        settles.push(tokio::spawn(async move {
            let x_arn = arn(&x);
            barrier.wait().await;
            let settled = db
                .settle(&change(&x, &x_arn, Some(Outcome::Succeeded)), 100)
                .await
                .unwrap();
            let Settled::Advanced { next, .. } = settled else {
                panic!("{x} not advanced: {settled:?}")
            };
            next.claimed
                .into_iter()
                .map(|e| e.execution_id)
                .collect::<Vec<_>>()
        }));
    }
    let mut claimed = Vec::new();
    for settle in settles {
        claimed.extend(settle.await.unwrap());
    }
    let unique: HashSet<&String> = claimed.iter().collect();
    assert_eq!(unique.len(), claimed.len(), "claimed twice: {claimed:?}");
    let running = db.run_progress(run_id).await.unwrap().running;
    assert_eq!(
        (claimed.len(), running),
        (MAX_PARALLEL, MAX_PARALLEL as u64),
        "claimed {} by {FINISHERS} concurrent settles, {running} running, max_parallel {MAX_PARALLEL}",
        claimed.len()
    );
}

/// A run's end in one call: the finish, the hand-over to the newest queued
/// run (superseding the older one), and the run, counts, covered runs and
/// merge lock its statuses need.
pub(crate) async fn end_run_hands_over_and_reports<M>(db: &M, prefix: &str)
where
    M: ExecutionStore + RunStore,
    <M as ExecutionStore>::Error: std::fmt::Debug,
    <M as RunStore>::Error: std::fmt::Debug,
{
    let only = |name: &str| {
        run(
            &format!("{prefix}-{name}"),
            2,
            vec![exec(&format!("{prefix}-{name}-u"), "dev", &[])],
        )
    };
    let finish_only = |name: &str| format!("{prefix}-{name}-u");
    let x = db.create_run(&only("x")).await.unwrap();
    assert!(x.started);
    let y = db.create_run(&only("y")).await.unwrap();
    let z = db.create_run(&only("z")).await.unwrap();
    assert!(!y.started && !z.started);

    // Not finishable while its unit waits: nothing changes.
    let end = db.end_run(x.run_id).await.unwrap();
    assert_eq!((end.finish.finished, end.finish.next_run), (None, None));
    assert_eq!(end.merge_lock.run_id, Some(x.run_id));

    let settle_unit = |unit: String| async move {
        db.settle(&change(&unit, &arn(&unit), None), 10)
            .await
            .unwrap();
        db.settle(&change(&unit, &arn(&unit), Some(Outcome::Succeeded)), 10)
            .await
            .unwrap()
    };
    settle_unit(finish_only("x")).await;
    let end = db.end_run(x.run_id).await.unwrap();
    assert_eq!(end.finish.finished, Some(RunStatus::Succeeded));
    assert_eq!(end.finish.next_run, Some(z.run_id), "the newest queued run");
    assert_eq!(
        end.run.as_ref().map(|r| r.commit_id.as_str()),
        Some(format!("{prefix}-x").as_str())
    );
    assert_eq!(end.progress, progress(0, 0, 1, 0, 0));
    assert!(end.superseded.is_empty());
    assert_eq!(end.merge_lock.run_id, Some(z.run_id));
    assert_eq!(
        end.merge_lock.commit_id.as_deref(),
        Some(format!("{prefix}-z").as_str())
    );

    settle_unit(finish_only("z")).await;
    let end = db.end_run(z.run_id).await.unwrap();
    assert_eq!(
        (end.finish.finished, end.finish.next_run),
        (Some(RunStatus::Succeeded), None)
    );
    let covered: Vec<i64> = end.superseded.iter().map(|r| r.run_id).collect();
    assert_eq!(covered, [y.run_id]);
    assert_eq!(end.merge_lock.run_id, None);
    assert_eq!(
        db.execution(&finish_only("y"))
            .await
            .unwrap()
            .unwrap()
            .status,
        ExecutionStatus::Aborted
    );
    // A repeat finds nothing to finish and still reports the run.
    let again = db.end_run(z.run_id).await.unwrap();
    assert_eq!(again.finish.finished, None);
    assert_eq!(again.run.map(|r| r.status), Some(RunStatus::Succeeded));
}

#[tokio::test]
async fn a_run_ends_and_hands_over_in_one_call() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    end_run_hands_over_and_reports(&db, "e1").await;
    t.drop_db().await;
}

#[tokio::test]
async fn a_status_change_is_settled_in_one_call() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    settle_finishes_claims_and_counts(&db, "s1").await;
    t.drop_db().await;
}

/// Several rounds, each on a fresh database: a lost race shows in any of them.
/// Without the run's row lock in `live_ci_claim` each settle counts the others'
/// finishers as running and claims their freed slots too (checked by removing
/// it: 14 and 35 claimed of 12 in two tries).
#[tokio::test(flavor = "multi_thread", worker_threads = 6)]
async fn concurrent_settles_of_one_run_never_claim_more_than_its_free_slots() {
    for round in 0..4 {
        let t = TestDb::new().await;
        let db = Arc::new(t.metadb(8).await);
        // Open the pool's connections first, so the settles start together.
        let warm: Vec<_> = (0..8)
            .map(|_| {
                let db = db.clone();
                tokio::spawn(async move { db.run_progress(0).await.unwrap() })
            })
            .collect();
        for w in warm {
            w.await.unwrap();
        }
        concurrent_settles_claim_within_the_free_slots(db, &format!("cs{round}")).await;
        t.drop_db().await;
    }
}

/// The sweep's repair runs the same abort as a failure's finish: a failed
/// execution whose dependents were left waiting (its finish lost mid-way)
/// gets them aborted, transitively, once.
#[tokio::test]
async fn abort_dependents_repairs_a_failure_whose_abort_was_lost() {
    use live_ci_metadb::Sql;

    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    db.create_run(&run(
        "ad1",
        4,
        vec![
            exec("ad-a", "dev", &[]),
            exec("ad-b", "dev", &["ad-a"]),
            exec("ad-c", "dev", &["ad-b"]),
            exec("ad-d", "dev", &[]),
        ],
    ))
    .await
    .unwrap();
    db.sql()
        .execute(
            "UPDATE executions SET status = 'failed' WHERE execution_id = 'ad-a'",
            &[],
        )
        .await
        .unwrap();
    let aborted = db.abort_dependents("ad-a").await.unwrap();
    assert_eq!(aborted, ["ad-b", "ad-c"]);
    assert_eq!(
        db.execution("ad-d").await.unwrap().unwrap().status,
        ExecutionStatus::Waiting
    );
    assert!(db.abort_dependents("ad-a").await.unwrap().is_empty());
    t.drop_db().await;
}
