//! Twenty merges racing on a 500-unit repository (`crates/synth`, its real
//! dependency edges): twenty `create_run` calls at once over a shared pool,
//! each merge one commit newer on the trunk, while a driver does what
//! trigger_sf does (claim up to `max_parallel`, record each unit as succeeded
//! at once, finish the run, which starts the queued run newest on the trunk and
//! supersedes the older queued ones). Units take no time here, so the figures
//! are the metadb's own cost of the queue. Prints how long the merges took to
//! be recorded, the time from the last merge to the start of its run (the run
//! of the newest trunk commit, which deploys every merge queued before it), and
//! the hand-over time between runs.
//!
//! `bash scripts/pg.sh with cargo run --release -p live-ci-metadb --example bench_queue`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use live_ci_testkit::pg as support;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use live_ci_core::deploy::{NewExecution, NewRun, Outcome, RunId, RunStatus};
use live_ci_core::port::{ExecutionStore, RunStore};
use live_ci_metadb::{PgMetadb, Sql};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const UNITS: usize = 500;
const MERGES: usize = 20;
const MAX_PARALLEL: u32 = 50;

/// One merge's run: every unit of the synthetic repo, waiting for its
/// dependencies, in the account its top directory names.
fn merge_run(n: usize, repo: &live_ci_synth::SynthRepo) -> NewRun {
    let id = |dir: &str| format!("m{n}-{}", dir.replace('/', "-"));
    let executions: Vec<NewExecution> = repo
        .units
        .iter()
        .map(|u| {
            let account = u.dir.split('/').next().unwrap_or("root");
            let mut e = support::exec(&id(&u.dir), account, &[]);
            e.wait_for = u.dependencies.iter().map(|d| id(d)).collect();
            e
        })
        .collect();
    let mut run = support::run(&format!("merge-{n:02}"), MAX_PARALLEL, executions);
    run.pr_id = 100 + n as u64;
    run
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    let t = support::TestDb::new().await;
    let db: Arc<PgMetadb> = Arc::new(t.metadb(8).await);
    let repo = live_ci_synth::generate_repo(UNITS, 7);
    // Built oldest first: `support::run` numbers the trunk positions in order.
    let runs: Vec<NewRun> = (0..MERGES).map(|n| merge_run(n, &repo)).collect();
    let newest_seq = runs.iter().map(|r| r.trunk_seq).max().unwrap();
    let edges: usize = runs[0].executions.iter().map(|e| e.wait_for.len()).sum();
    println!(
        "{MERGES} merges racing, each a run of {} units ({edges} dependency edges), max_parallel {MAX_PARALLEL}",
        runs[0].executions.len()
    );

    let t0 = Instant::now();
    let recorded_count = Arc::new(AtomicUsize::new(0));
    let mut merges = Vec::new();
    for run in runs {
        let db = db.clone();
        let count = recorded_count.clone();
        merges.push(tokio::spawn(async move {
            let created = db.create_run(&run).await.unwrap();
            count.fetch_add(1, Ordering::SeqCst);
            (created, run.trunk_seq, t0.elapsed())
        }));
    }
    // The driver: trigger_sf's loop with instant units, until every merge is
    // recorded and no run holds the lock (finish_run hands the lock over in
    // the same transaction, so a free lock then means nothing is queued).
    let driver_db = db.clone();
    let driver = tokio::spawn(async move {
        let mut started_at: HashMap<RunId, Duration> = HashMap::new();
        let mut handovers = Vec::new();
        let mut units = 0usize;
        loop {
            let Some(run_id) = driver_db.merge_lock().await.unwrap().run_id else {
                if recorded_count.load(Ordering::SeqCst) == MERGES
                    && driver_db.merge_lock().await.unwrap().run_id.is_none()
                {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
                continue;
            };
            started_at.entry(run_id).or_insert_with(|| t0.elapsed());
            let claimed = driver_db.claim_ready(run_id, MAX_PARALLEL).await.unwrap();
            for e in &claimed {
                driver_db
                    .record_finished(&e.execution_id, Outcome::Succeeded, None)
                    .await
                    .unwrap();
            }
            units += claimed.len();
            if claimed.is_empty() && driver_db.run_progress(run_id).await.unwrap().is_done() {
                let before = Instant::now();
                let finish = driver_db.finish_run(run_id).await.unwrap();
                if finish.finished.is_some()
                    && let Some(next) = finish.next_run
                {
                    started_at.insert(next, t0.elapsed());
                    handovers.push(ms(before.elapsed()));
                }
            }
        }
        (started_at, handovers, units, t0.elapsed())
    });
    let mut recorded = Vec::new();
    for m in merges {
        recorded.push(m.await.unwrap());
    }
    let (started_at, mut handovers, units, all_done) = driver.await.unwrap();

    let last_recorded = recorded.iter().map(|(_, _, at)| *at).max().unwrap();
    let (newest, newest_at) = recorded
        .iter()
        .find(|(_, seq, _)| *seq == newest_seq)
        .map(|(c, _, at)| (c.run_id, *at))
        .unwrap();
    let mut deployed = Vec::new();
    let mut superseded = 0;
    for (c, _, _) in &recorded {
        let r = db.run(c.run_id).await.unwrap().unwrap();
        match r.status {
            RunStatus::Succeeded => deployed.push((started_at[&r.run_id], r.trunk_seq)),
            RunStatus::Superseded => superseded += 1,
            other => panic!("run {} ended {other:?}", r.run_id),
        }
    }
    let start = started_at[&newest];
    println!(
        "all {MERGES} merges recorded after {:.0} ms (first {:.0} ms); {} runs deployed, {superseded} superseded",
        ms(last_recorded),
        ms(recorded.iter().map(|(_, _, at)| *at).min().unwrap()),
        deployed.len()
    );
    println!(
        "last merge (newest on the trunk, run {newest}, recorded at {:.0} ms) → start of its run: {:.0} ms \
         ({:.0} ms after the last of the {MERGES} merges was recorded; {} runs of {UNITS} units ran before it)",
        ms(newest_at),
        ms(start.saturating_sub(newest_at)),
        ms(start.saturating_sub(last_recorded)),
        deployed.iter().filter(|(s, _)| *s < start).count()
    );
    handovers.sort_by(f64::total_cmp);
    println!(
        "run hand-over (finish_run + start the next): median {:.2} ms, max {:.2} ms",
        handovers
            .get(handovers.len() / 2)
            .copied()
            .unwrap_or_default(),
        handovers.last().copied().unwrap_or_default()
    );
    println!(
        "{units} units claimed and recorded in {:.0} ms ({:.2} ms per unit)",
        ms(all_done),
        ms(all_done) / units as f64
    );
    // Trunk order: the runs that deployed started oldest commit first, and the
    // newest commit was deployed.
    deployed.sort();
    assert!(deployed.windows(2).all(|w| w[0].1 < w[1].1), "{deployed:?}");
    assert_eq!(deployed.last().map(|d| d.1), Some(newest_seq));
    db.sql().execute("SELECT 1", &[]).await.unwrap();
    t.drop_db().await;
}
