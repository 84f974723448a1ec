//! Times the approval path against the metadb through the local cloud's RDS
//! Data API (`scripts/localstack.sh`, `scripts/pg.sh`), with LocalStack's KMS
//! as the task-token cipher and a Step Functions stand-in that answers at
//! once: for each of 20 executions (two voters, two approvals needed),
//! approval-request mails both, one voter opens the page (GET) and approves
//! (POST, no decision), the other approves (POST, decides and sends). Prints
//! the Data API calls and the milliseconds per step (p50, p95, max); for the
//! deciding POST also up to SendTaskSuccess.
//!
//! `bash scripts/pg.sh with cargo run --release -p live-ci-e2e --example bench_vote`
//! (here, not in approval-response: it mails through approval_request, and
//! Lambdas do not dev-depend on each other).

#![allow(clippy::unwrap_used, clippy::expect_used)]

// The tests' bundles of ports: the requester's and the responder's.
#[path = "../../../lambdas/approval-response/tests/it/ports.rs"]
mod ports;
#[path = "../../../lambdas/approval-request/tests/fakes/mod.rs"]
mod requester_fakes;

use crate::requester_fakes::Fakes as RequesterFakes;
use std::sync::Mutex;
use std::time::Instant;

use live_ci_approval_request::{ApprovalRequester, RequestSettings};
use live_ci_approval_response::PageRequest;
use live_ci_core::port::{ExecutionStore, RunStore, TaskTokens, TokenDelivery};
use live_ci_metadb::{DataApi, Store};
use live_ci_testkit::approval::{
    FakeError, RecordingMailer, cipher, key, now, request_for, text_link, token_of,
};
use live_ci_testkit::pg::{exec, run};
use live_ci_testkit::round_trips::Counting;

const UNITS: usize = 20;
const VOTERS: [&str; 2] = ["alice@example.com", "bob@example.com"];

/// Answers every SendTaskSuccess at once and notes when it came and after
/// how many metadb calls.
struct InstantTokens {
    sql: Counting<DataApi>,
    sent: Mutex<Vec<(Instant, usize)>>,
}

impl TaskTokens for InstantTokens {
    type Error = FakeError;

    async fn send_success(&self, _: &str, _: &str) -> Result<TokenDelivery, FakeError> {
        let calls = self.sql.take();
        self.sent
            .lock()
            .unwrap()
            .push((Instant::now(), calls.len()));
        Ok(TokenDelivery::Delivered)
    }

    async fn send_failure(&self, t: &str, _: &str, _: &str) -> Result<TokenDelivery, FakeError> {
        Err(FakeError(format!("not failed here: {t}")))
    }

    async fn heartbeat(&self, t: &str) -> Result<TokenDelivery, FakeError> {
        Err(FakeError(format!("no heartbeat here: {t}")))
    }
}

fn summary(label: &str, mut ms: Vec<f64>, calls: &[usize]) {
    ms.sort_by(f64::total_cmp);
    let at = |q: usize| ms[(ms.len() * q / 100).min(ms.len() - 1)];
    let total_calls: usize = calls.iter().sum();
    println!(
        "{label:<38} n {:>3}  calls {:>5.2}  ms p50 {:>6.1}  p95 {:>6.1}  max {:>6.1}",
        ms.len(),
        total_calls as f64 / calls.len() as f64,
        at(50),
        at(95),
        ms[ms.len() - 1]
    );
}

fn page(method: &str, token: &str) -> PageRequest {
    if method == "GET" {
        return PageRequest {
            method: "GET".into(),
            query: format!("t={token}"),
            ..Default::default()
        };
    }
    PageRequest {
        method: "POST".into(),
        query: String::new(),
        headers: [(
            "content-type".to_string(),
            "application/x-www-form-urlencoded".to_string(),
        )]
        .into(),
        body: format!("t={token}").into_bytes(),
    }
}

fn ms_since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1000.0
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let endpoint = live_ci_testkit::localstack_endpoint().unwrap();
    live_ci_testkit::pg::server_url();
    let id = live_ci_testkit::unique("bench-vote");
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
    let plain = Store::new(data_api.clone());
    plain.migrate().await.unwrap();
    let names: Vec<String> = (0..UNITS).map(|i| format!("bench-vote-u{i:02}")).collect();
    let units = names
        .iter()
        .map(|n| {
            let mut e = exec(n, "dev", &[]);
            e.voters = VOTERS.iter().map(|v| v.to_string()).collect();
            e.min_approval_count = 2;
            e.min_rejection_count = 2;
            e
        })
        .collect();
    let created = plain
        .create_run(&run(&id, UNITS as u32, units))
        .await
        .unwrap();
    assert_eq!(
        plain
            .claim_ready(created.run_id, UNITS as u32)
            .await
            .unwrap()
            .len(),
        UNITS
    );
    let arns: Vec<(String, String)> = names
        .iter()
        .map(|n| {
            (
                n.clone(),
                format!("arn:aws:states:us-east-1:000000000000:execution:deploy:{n}"),
            )
        })
        .collect();
    plain.attach_execution_arns(&arns).await.unwrap();

    let sql = Counting::new(data_api);
    let fakes = RequesterFakes::new(
        Store::new(sql.clone()),
        RecordingMailer::default(),
        cipher().await,
        live_ci_testkit::approval::RecordingFailures::default(),
    );
    let requester = ApprovalRequester::new(
        RequestSettings {
            approval_url: "https://approve.example.com".into(),
            from_address: "live-ci@example.com".into(),
            approval_timeout_secs: 3600,
            repository: "acme/live".into(),
            github_web_url: "https://github.com".into(),
        },
        key(),
        fakes.clone(),
    );
    let responder = crate::ports::responder(
        key(),
        Store::new(sql.clone()),
        InstantTokens {
            sql: sql.clone(),
            sent: Mutex::default(),
        },
        cipher().await,
    );
    let now_ms = i64::try_from(now()).unwrap() * 1000;
    let (mut req_ms, mut req_calls) = (Vec::new(), Vec::new());
    let (mut get_ms, mut get_calls) = (Vec::new(), Vec::new());
    let (mut first_ms, mut first_calls) = (Vec::new(), Vec::new());
    let (mut send_ms, mut send_calls) = (Vec::new(), Vec::new());
    let (mut decide_ms, mut decide_calls) = (Vec::new(), Vec::new());
    for name in &names {
        let record = plain.execution(name).await.unwrap().unwrap();
        sql.take();
        let t0 = Instant::now();
        requester
            .handle(&request_for(&record, &format!("token-{name}")), now())
            .await
            .unwrap();
        req_ms.push(ms_since(t0));
        req_calls.push(sql.take().len());
        let mails: Vec<_> = fakes
            .mailer
            .sent()
            .into_iter()
            .filter(|m| m.text.contains(name.as_str()))
            .collect();
        let link = |voter: &str| {
            let mail = mails.iter().find(|m| m.to == voter).unwrap();
            token_of(&text_link(mail, "Approve"))
        };

        let t0 = Instant::now();
        assert_eq!(
            responder
                .handle(&page("GET", &link(VOTERS[0])), now_ms)
                .await
                .status,
            200
        );
        get_ms.push(ms_since(t0));
        get_calls.push(sql.take().len());

        let t0 = Instant::now();
        assert_eq!(
            responder
                .handle(&page("POST", &link(VOTERS[0])), now_ms)
                .await
                .status,
            200
        );
        first_ms.push(ms_since(t0));
        first_calls.push(sql.take().len());

        let t0 = Instant::now();
        let resp = responder
            .handle(&page("POST", &link(VOTERS[1])), now_ms)
            .await;
        assert_eq!(resp.status, 200, "{}", resp.body);
        decide_ms.push(ms_since(t0));
        let (at, before) = *responder.tokens.sent.lock().unwrap().last().unwrap();
        send_ms.push(at.duration_since(t0).as_secs_f64() * 1000.0);
        send_calls.push(before);
        decide_calls.push(before + sql.take().len());
    }
    println!(
        "{UNITS} executions, two voters, two approvals needed, through the local cloud's Data API"
    );
    summary("approval-request (two voters)", req_ms, &req_calls);
    summary("GET (confirmation page)", get_ms, &get_calls);
    summary("POST, no decision", first_ms, &first_calls);
    summary("POST, decides: until SendTaskSuccess", send_ms, &send_calls);
    summary("POST, decides: in all", decide_ms, &decide_calls);
}
