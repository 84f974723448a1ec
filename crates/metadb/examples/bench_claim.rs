//! Times the claim on a run with 10,000 waiting executions (realistic DAG: ~40%
//! of units with 1–5 dependencies, four accounts in a chain), against the
//! PostgreSQL from `scripts/pg.sh` (or `LIVE_CI_PG_URL`). Each sample claims up
//! to `max_parallel` units and then releases them, so every sample sees 10,000
//! waiting rows. Prints the median and p95 in ms, for the claim statement
//! (`live_ci_claim`: lock the run, claim, count) inside a transaction rolled
//! back, and for `claim_ready` (the same statement, committed on its own).
//!
//! `cargo run --release -p live-ci-metadb --example bench_claim`
//!
//! `BENCH_ACCOUNT_CAP=n` caps account "shared" (the first of the chain, the
//! one with ready units from the start) at n running at once, so the claim
//! takes its paced path (migration 0017).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use live_ci_testkit::pg as support;

use std::time::Instant;

use live_ci_core::deploy::Outcome;
use live_ci_core::port::{ExecutionStore, RunStore};
use live_ci_metadb::sql::statements::CLAIM;
use live_ci_metadb::{Param, Sql, SqlTx};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const UNITS: usize = 10_000;
const SAMPLES: usize = 200;
const MAX_PARALLEL: u32 = 50;

fn summary(label: &str, mut ms: Vec<f64>) {
    ms.sort_by(f64::total_cmp);
    let median = ms[ms.len() / 2];
    let p95 = ms[(ms.len() * 95) / 100];
    println!("{label:<58} median {median:>6.2} ms   p95 {p95:>6.2} ms");
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let t = support::TestDb::new().await;
    let db = t.metadb(2).await;
    let mut run = support::random_run(
        "bench",
        UNITS,
        &["shared", "network", "dev", "prod"],
        MAX_PARALLEL,
        7,
    );
    if let Some(cap) = std::env::var("BENCH_ACCOUNT_CAP")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        println!("account \"shared\" capped at {cap}");
        for e in run
            .executions
            .iter_mut()
            .filter(|e| e.account_name == "shared")
        {
            e.account_max_parallel = Some(cap);
        }
    }
    let edges: usize = run.executions.iter().map(|e| e.wait_for.len()).sum();
    let started = Instant::now();
    let created = db.create_run(&run).await.unwrap();
    println!(
        "created a run of {UNITS} executions ({edges} dependency edges) in {:.0} ms",
        started.elapsed().as_secs_f64() * 1000.0
    );
    db.sql().execute("ANALYZE", &[]).await.unwrap();
    let run_id = created.run_id;

    for phase in ["all 10,000 waiting", "after 2,000 succeeded"] {
        if phase.starts_with("after") {
            let mut done = 0;
            while done < 2000 {
                let claimed = db.claim_ready(run_id, MAX_PARALLEL).await.unwrap();
                for e in claimed {
                    db.record_finished(&e.execution_id, Outcome::Succeeded, None)
                        .await
                        .unwrap();
                    done += 1;
                }
            }
            db.sql().execute("ANALYZE", &[]).await.unwrap();
        }
        let mut statement_ms = Vec::with_capacity(SAMPLES);
        let mut claim_ms = Vec::with_capacity(SAMPLES);
        let mut claimed_n = 0;
        for _ in 0..SAMPLES {
            // The statement, rolled back.
            let mut tx = db.sql().begin().await.unwrap();
            let t0 = Instant::now();
            let rows = tx
                .query(
                    CLAIM,
                    &[
                        ("run_id", Param::Int(run_id)),
                        ("limit", Param::Int(i64::from(MAX_PARALLEL))),
                    ],
                )
                .await
                .unwrap();
            statement_ms.push(t0.elapsed().as_secs_f64() * 1000.0);
            assert!(!rows.is_empty());
            tx.rollback().await.unwrap();
            // The port's claim, then put the units back.
            let t0 = Instant::now();
            let claimed = db.claim_ready(run_id, MAX_PARALLEL).await.unwrap();
            claim_ms.push(t0.elapsed().as_secs_f64() * 1000.0);
            claimed_n = claimed.len();
            for e in claimed {
                assert!(db.release_claim(&e.execution_id).await.unwrap());
            }
        }
        if std::env::var_os("BENCH_EXPLAIN").is_some() {
            // The plan of one claim, rolled back (BENCH_EXPLAIN=1).
            let mut tx = db.sql().begin().await.unwrap();
            let explain = format!("EXPLAIN (ANALYZE, BUFFERS) {CLAIM}");
            let plan = tx
                .query(
                    &explain,
                    &[
                        ("run_id", Param::Int(run_id)),
                        ("limit", Param::Int(i64::from(MAX_PARALLEL))),
                    ],
                )
                .await
                .unwrap();
            println!("{}", plan.join("\n"));
            tx.rollback().await.unwrap();
        }
        let waiting = db.run_progress(run_id).await.unwrap().waiting;
        println!("{phase}: {waiting} waiting, {claimed_n} claimed per call, {SAMPLES} samples");
        summary(
            "  CLAIM statement (live_ci_claim, rolled back)",
            statement_ms,
        );
        summary("  claim_ready (one statement)", claim_ms);
    }
    t.drop_db().await;
}
