//! Pacing per account (migration 0017): the claim never has more than an
//! account's `max_parallel` of a run's executions running in that account,
//! and the run's own cap still holds, against a real PostgreSQL with
//! concurrent claimers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use live_ci_core::deploy::{NewExecution, NewRun, Outcome, Settled, StatusChange};
use live_ci_core::port::{ExecutionStore, RunStore};
use live_ci_metadb::{Param, PgMetadb, Sql};
use live_ci_testkit::pg::{TestDb, exec, run};

const RUN_CAP: u32 = 5;

/// Caps: production 1, staging 2, dev none (the run's).
fn cap_of(account: &str) -> Option<u32> {
    match account {
        "production" => Some(1),
        "staging" => Some(2),
        _ => None,
    }
}

/// `per_account` independent units in each account, production's first in
/// priority, so an unpaced claim would fill the run's slots with them.
fn paced_run(prefix: &str, per_account: usize) -> NewRun {
    let mut executions: Vec<NewExecution> = Vec::new();
    for (account, priority) in [("production", 3.0), ("staging", 2.0), ("dev", 1.0)] {
        for i in 0..per_account {
            let mut e = exec(&format!("{prefix}-{account}-{i}"), account, &[]);
            e.priority = priority;
            e.account_max_parallel = cap_of(account);
            executions.push(e);
        }
    }
    run(&format!("{prefix}-commit"), RUN_CAP, executions)
}

/// The run's running executions by account, read in one statement.
async fn running_by_account(db: &PgMetadb, run_id: i64) -> BTreeMap<String, u32> {
    let rows = db
        .sql()
        .query(
            "SELECT coalesce(json_object_agg(account_name, n), '{}')::text FROM (
                 SELECT account_name, count(*) AS n FROM executions
                 WHERE run_id = :run_id AND status = 'running' GROUP BY account_name) s",
            &[("run_id", Param::Int(run_id))],
        )
        .await
        .unwrap();
    serde_json::from_str(&rows[0]).unwrap()
}

/// Panics when a sample breaks a cap; returns it for the maxima.
fn check(sample: &BTreeMap<String, u32>, when: &str) {
    let total: u32 = sample.values().sum();
    assert!(
        total <= RUN_CAP,
        "{total} running in the run (cap {RUN_CAP}) {when}: {sample:?}"
    );
    for (account, n) in sample {
        if let Some(cap) = cap_of(account) {
            assert!(
                *n <= cap,
                "{n} running in account {account:?} (cap {cap}) {when}: {sample:?}"
            );
        }
    }
}

#[tokio::test]
async fn one_claim_fills_each_account_up_to_its_cap() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let created = db.create_run(&paced_run("p1", 4)).await.unwrap();
    let claimed = db.claim_next(created.run_id, 100).await.unwrap();
    let accounts: Vec<&str> = claimed
        .claimed
        .iter()
        .map(|e| e.account_name.as_str())
        .collect();
    // Highest priority first: one of production, two of staging, then dev
    // fills the run's remaining slots.
    assert_eq!(accounts, ["production", "staging", "staging", "dev", "dev"]);
    assert_eq!(claimed.progress.running, 5);
    // The paced path builds the same record as every other read.
    let first = &claimed.claimed[0];
    assert_eq!(
        db.execution(&first.execution_id).await.unwrap().as_ref(),
        Some(first)
    );
    // Nothing more while they run; a finished production unit frees its slot
    // for the next production unit only.
    assert!(
        db.claim_next(created.run_id, 100)
            .await
            .unwrap()
            .claimed
            .is_empty()
    );
    let arn = format!(
        "arn:aws:states:us-east-1:000000000000:execution:deploy:{}",
        first.execution_id
    );
    let settled = db
        .settle(
            &StatusChange {
                execution_id: &first.execution_id,
                execution_arn: &arn,
                ended: Some((Outcome::Succeeded, None)),
            },
            100,
        )
        .await
        .unwrap();
    let Settled::Advanced { next, .. } = settled else {
        panic!("not advanced: {settled:?}")
    };
    let next: Vec<&str> = next
        .claimed
        .iter()
        .map(|e| e.account_name.as_str())
        .collect();
    assert_eq!(next, ["production"]);
    t.drop_db().await;
}

/// Eight claimers settle one run concurrently (claim, then finish what they
/// hold one by one, each finish claiming again), sampling the running set
/// after every claim and finish: never more than production's 1, staging's 2
/// or the run's 5, and every unit runs exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn eight_concurrent_claimers_never_exceed_an_accounts_cap() {
    const CLAIMERS: usize = 8;
    const PER_ACCOUNT: usize = 8;
    let t = TestDb::new().await;
    let db = Arc::new(t.metadb(CLAIMERS + 2).await);
    let created = db.create_run(&paced_run("p8", PER_ACCOUNT)).await.unwrap();
    let run_id = created.run_id;
    let claimed_all: Arc<Mutex<Vec<String>>> = Arc::default();
    let maxima: Arc<Mutex<BTreeMap<String, u32>>> = Arc::default();
    let barrier = Arc::new(tokio::sync::Barrier::new(CLAIMERS));
    let mut workers = Vec::new();
    for w in 0..CLAIMERS {
        let (db, claimed_all, maxima, barrier) = (
            db.clone(),
            claimed_all.clone(),
            maxima.clone(),
            barrier.clone(),
        );
        workers.push(tokio::spawn(async move {
            let sample = |when: String| {
                let (db, maxima) = (db.clone(), maxima.clone());
                async move {
                    let s = running_by_account(&db, run_id).await;
                    check(&s, &when);
                    let mut m = maxima.lock().unwrap();
                    for (a, n) in &s {
                        let e = m.entry(a.clone()).or_insert(0);
                        *e = (*e).max(*n);
                    }
                    let total = s.values().sum();
                    let e = m.entry("(run)".into()).or_insert(0);
                    *e = (*e).max(total);
                }
            };
            barrier.wait().await;
            let mut held: Vec<String> = Vec::new();
            loop {
                if held.is_empty() {
                    let next = db.claim_next(run_id, 2).await.unwrap();
                    held.extend(next.claimed.iter().map(|e| e.execution_id.clone()));
                    claimed_all.lock().unwrap().extend(held.iter().cloned());
                    sample(format!("after claimer {w}'s claim")).await;
                    if held.is_empty() {
                        let p = next.progress;
                        if p.waiting == 0 && p.running == 0 {
                            return;
                        }
                        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                    }
                    continue;
                }
                let id = held.remove(0);
                let arn = format!("arn:aws:states:us-east-1:000000000000:execution:deploy:{id}");
                let settled = db
                    .settle(
                        &StatusChange {
                            execution_id: &id,
                            execution_arn: &arn,
                            ended: Some((Outcome::Succeeded, None)),
                        },
                        2,
                    )
                    .await
                    .unwrap();
                let Settled::Advanced { next, .. } = settled else {
                    panic!("{id} not advanced: {settled:?}")
                };
                let more: Vec<String> = next
                    .claimed
                    .iter()
                    .map(|e| e.execution_id.clone())
                    .collect();
                claimed_all.lock().unwrap().extend(more.iter().cloned());
                held.extend(more);
                sample(format!("after claimer {w} finished {id}")).await;
            }
        }));
    }
    for w in workers {
        w.await.unwrap();
    }
    let claimed = claimed_all.lock().unwrap().clone();
    let unique: HashSet<&String> = claimed.iter().collect();
    assert_eq!(unique.len(), claimed.len(), "claimed twice: {claimed:?}");
    assert_eq!(claimed.len(), 3 * PER_ACCOUNT, "every unit runs once");
    let progress = db.run_progress(run_id).await.unwrap();
    assert_eq!(
        (progress.succeeded, progress.waiting, progress.running),
        (3 * PER_ACCOUNT as u64, 0, 0)
    );
    let maxima = maxima.lock().unwrap().clone();
    println!("most running at once: {maxima:?}");
    assert_eq!(maxima.get("production"), Some(&1));
    t.drop_db().await;
}

/// An operator's retry keeps the retried run's caps.
#[tokio::test]
async fn a_retry_keeps_the_account_caps() {
    use live_ci_core::port::RunControl;
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let created = db.create_run(&paced_run("pr", 3)).await.unwrap();
    // Every unit fails, so the retry has them all to run again.
    loop {
        let next = db.claim_next(created.run_id, 100).await.unwrap();
        if next.claimed.is_empty() {
            break;
        }
        for e in next.claimed {
            db.record_finished(&e.execution_id, Outcome::Failed, Some("boom"))
                .await
                .unwrap();
        }
    }
    db.end_run(created.run_id).await.unwrap();
    let retry = db.retry_run(created.run_id).await.unwrap().unwrap();
    assert!(retry.started);
    let claimed = db.claim_next(retry.run_id, 100).await.unwrap();
    let accounts: Vec<&str> = claimed
        .claimed
        .iter()
        .map(|e| e.account_name.as_str())
        .collect();
    assert_eq!(accounts, ["production", "staging", "staging", "dev", "dev"]);
    t.drop_db().await;
}
