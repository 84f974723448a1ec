//! Times trigger-sf's status changes against the metadb through the local
//! cloud's RDS Data API (`scripts/localstack.sh`, `scripts/pg.sh`), with a
//! Step Functions stand-in that starts at once: a 31-unit binary tree
//! (`max_parallel` 16) runs to its end, one SUCCEEDED event at a time. Prints
//! the Data API calls and the milliseconds per status change (p50, p95, max),
//! and the run's total.
//!
//! `bash scripts/pg.sh with cargo run --release -p live-ci-trigger-sf --example bench_status_change`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::time::Instant;

use live_ci_core::port::{ExecutionDescription, RunStore, WorkflowEngine};
use live_ci_core::webhook::FilePattern;
use live_ci_metadb::{DataApi, Store};
use live_ci_testkit::git_host::RecordingGitHost;
use live_ci_testkit::params::{FakeError, MemoryParams};
use live_ci_testkit::pg::{exec, run};
use live_ci_testkit::round_trips::Counting;
use live_ci_trigger_sf::{HandlerConfig, Input, StatusChangeDetail};

#[path = "../tests/it/ports.rs"]
mod ports;
use ports::{Fakes, Wired};

const ARN_PREFIX: &str = "arn:aws:states:us-east-1:000000000000:execution:deploy:";

/// Starts succeed at once with a made-up ARN.
struct InstantEngine;

impl WorkflowEngine for InstantEngine {
    type Error = FakeError;

    async fn start_execution(&self, name: &str, _input: &str) -> Result<String, FakeError> {
        Ok(format!("{ARN_PREFIX}{name}"))
    }

    async fn describe_execution(&self, arn: &str) -> Result<ExecutionDescription, FakeError> {
        Err(FakeError(format!("not described here: {arn}")))
    }

    async fn stop_execution(&self, arn: &str, _e: &str, _c: &str) -> Result<(), FakeError> {
        Err(FakeError(format!("not stopped here: {arn}")))
    }
}

fn succeeded(name: &str) -> Input {
    Input::StatusChange(StatusChangeDetail {
        execution_arn: format!("{ARN_PREFIX}{name}"),
        state_machine_arn: "arn:aws:states:us-east-1:000000000000:stateMachine:deploy".into(),
        name: name.into(),
        status: "SUCCEEDED".into(),
        error: None,
        cause: None,
        output: None,
    })
}

fn summary(label: &str, mut ms: Vec<f64>, calls: &[usize]) {
    ms.sort_by(f64::total_cmp);
    let at = |q: usize| ms[(ms.len() * q / 100).min(ms.len() - 1)];
    let total_calls: usize = calls.iter().sum();
    println!(
        "{label:<34} n {:>3}  calls/change {:>5.2}  ms p50 {:>6.1}  p95 {:>6.1}  max {:>6.1}",
        ms.len(),
        total_calls as f64 / calls.len() as f64,
        at(50),
        at(95),
        ms[ms.len() - 1]
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let endpoint = live_ci_testkit::localstack_endpoint().unwrap();
    live_ci_testkit::pg::server_url();
    let id = live_ci_testkit::unique("bench-status-change");
    let cluster = live_ci_testkit::data_api::create_cluster(
        &endpoint,
        &id,
        &id.replace('-', "_"),
        "liveci_master",
    )
    .await
    .unwrap();
    let client = aws_sdk_rdsdata::Client::new(&live_ci_testkit::aws::sdk_config_for(&endpoint));
    let data_api = DataApi::new(
        client,
        &cluster.cluster_arn,
        &cluster.secret_arn,
        &cluster.database,
    );
    Store::new(data_api.clone()).migrate().await.unwrap();
    let sql = Counting::new(data_api);
    let handler = Wired::new(
        HandlerConfig::new(
            "/live-ci/merge-lock",
            FilePattern::new(FilePattern::DEFAULT).unwrap(),
        ),
        Fakes::new(
            Store::new(sql.clone()),
            InstantEngine,
            MemoryParams::default(),
            RecordingGitHost::with_open(vec![], &[]),
        ),
    );

    // A binary tree: unit i waits for unit (i - 1) / 2.
    let names: Vec<String> = (0..31).map(|i| format!("bench-u{i:02}")).collect();
    let units = (0..31)
        .map(|i| {
            let parent: Vec<&str> = if i == 0 {
                vec![]
            } else {
                vec![names[(i - 1) / 2].as_str()]
            };
            exec(&names[i], "dev", &parent)
        })
        .collect();
    let created = handler
        .metadb
        .create_run(&run(&id, 16, units))
        .await
        .unwrap();

    let whole = Instant::now();
    sql.take();
    let t0 = Instant::now();
    let report = handler.handle(&Input::Run(created.run_id)).await.unwrap();
    let first = (t0.elapsed().as_secs_f64() * 1000.0, sql.take().len());
    let mut running: VecDeque<String> = report.started.into();
    let (mut freeing, mut freeing_calls) = (Vec::new(), Vec::new());
    let (mut leaf, mut leaf_calls) = (Vec::new(), Vec::new());
    let mut last = None;
    while let Some(name) = running.pop_front() {
        let t0 = Instant::now();
        let report = handler.handle(&succeeded(&name)).await.unwrap();
        let ms = t0.elapsed().as_secs_f64() * 1000.0;
        let calls = sql.take().len();
        if !report.finished.is_empty() {
            last = Some((ms, calls));
        } else if report.started.is_empty() {
            leaf.push(ms);
            leaf_calls.push(calls);
        } else {
            freeing.push(ms);
            freeing_calls.push(calls);
        }
        running.extend(report.started);
    }
    let total = whole.elapsed().as_secs_f64() * 1000.0;
    println!("31 units, max_parallel 16, through the local cloud's Data API");
    println!(
        "{:<34} calls {:>2}  ms {:>6.1}",
        "the run's first claim", first.1, first.0
    );
    summary("a success starting 2 dependents", freeing, &freeing_calls);
    summary("a success starting nothing", leaf, &leaf_calls);
    let (ms, calls) = last.expect("the run finished");
    println!(
        "{:<34} calls {:>2}  ms {:>6.1}",
        "the last execution of the run", calls, ms
    );
    println!("the whole run: {total:.0} ms");
}
