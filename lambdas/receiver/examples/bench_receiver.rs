//! Handler latency for a signed `synchronize` delivery, in process: signature,
//! de-duplication, parsing, routing, the lock and the task start, with the
//! network calls answered by in-memory ports (the goal excludes the network).
//! Run: `cargo run --release -p live-ci-receiver --example bench_receiver`.

use std::collections::BTreeMap;
use std::time::Instant;

use live_ci_core::port::GitHost;
use live_ci_core::port::ParamStore;
use live_ci_core::port::PullRequestAuthority;
use live_ci_core::port::TaskLauncher;
use live_ci_core::status::{CommitStatus, PullRequest};
use live_ci_core::task::{StartedTask, TaskSpec};
use live_ci_core::webhook::{FilePattern, PullRequestHead, RepoPermission, TrustPolicy, sign};
use live_ci_receiver::{
    HandlerConfig, NoDeliveryLog, NoLockCheck, NoVotes, Receiver, ReceiverPorts, SECRET_RETRY,
    SECRET_TTL, WebhookRequest,
};

const SECRET: &str = "bench-webhook-secret-of-32-bytes-or-more";

#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

struct Mem;

impl ParamStore for Mem {
    type Error = Never;
    async fn get(&self, name: &str) -> Result<String, Never> {
        Ok(match name {
            "secret" => SECRET.into(),
            "lock" => "none".into(),
            _ => "{}".into(),
        })
    }
    async fn put(&self, _: &str, _: &str) -> Result<(), Never> {
        Ok(())
    }
}

struct Host;

impl GitHost for Host {
    type Error = Never;
    async fn set_status(&self, _: &CommitStatus) -> Result<(), Never> {
        Ok(())
    }
    async fn pull_request_files(&self, _: u64) -> Result<Vec<String>, Never> {
        Ok(vec![
            "README.md".into(),
            "dev/us-east-1/app/terragrunt.hcl".into(),
        ])
    }
    async fn open_pull_requests(&self, _: &str) -> Result<Vec<PullRequest>, Never> {
        Ok(vec![])
    }
    async fn upsert_comment(&self, _: u64, _: &str, _: &str) -> Result<(), Never> {
        Ok(())
    }
    async fn bot_comment(&self, _: u64, _: &str) -> Result<Option<String>, Never> {
        Ok(None)
    }
}

// The synchronize fixture is a trusted author's branch: no permission look-ups.
impl PullRequestAuthority for Host {
    type Error = Never;
    async fn bot_login(&self) -> Result<String, Never> {
        Ok("live-ci-bot".into())
    }
    async fn permission(&self, _: &str) -> Result<RepoPermission, Never> {
        Ok(RepoPermission::None)
    }
    async fn pull_request(&self, number: u64) -> Result<PullRequestHead, Never> {
        Ok(PullRequestHead {
            number,
            open: true,
            head_sha: String::new(),
            head_ref: String::new(),
            base_ref: String::new(),
        })
    }
}

struct Tasks;

impl TaskLauncher for Tasks {
    type Error = Never;
    async fn start(&self, _: &TaskSpec) -> Result<StartedTask, Never> {
        Ok(StartedTask {
            task_arn: "arn:aws:ecs:eu-west-1:1:task/c/t".into(),
            logs_url: None,
        })
    }
}

/// The in-memory ports; the optional ones (lock row, deliveries log, votes) off.
struct Ports;

impl ReceiverPorts for Ports {
    type Params = Mem;
    type GitHub = Host;
    type Launcher = Tasks;
    type Lock = NoLockCheck;
    type Deliveries = NoDeliveryLog;
    type Votes = NoVotes;

    fn params(&self) -> &Mem {
        &Mem
    }

    fn github(&self) -> &Host {
        &Host
    }

    fn launcher(&self) -> &Tasks {
        &Tasks
    }

    fn lock_truth(&self) -> Option<&NoLockCheck> {
        None
    }

    fn deliveries(&self) -> Option<&NoDeliveryLog> {
        None
    }

    fn votes(&self) -> Option<(&NoVotes, &str)> {
        None
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let body = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/github/pull_request_synchronize.json"
    ))?;
    let config = HandlerConfig {
        repository: "acme/infrastructure-live".into(),
        trunk_branch: "main".into(),
        file_pattern: FilePattern::new(FilePattern::DEFAULT)?,
        webhook_secret_param: "secret".into(),
        merge_lock_param: "lock".into(),
        commit_status_config_param: "statuses".into(),
        max_body_bytes: 5 * 1024 * 1024,
        trust: TrustPolicy::default(),
        secret_ttl: SECRET_TTL,
        secret_retry: SECRET_RETRY,
    };
    let receiver = Receiver::new(config, Ports).await?;
    let sig = sign(SECRET.as_bytes(), &body);
    let n = 20_000;
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        // A fresh delivery id each time: every request does the full work.
        let req = WebhookRequest {
            method: "POST".into(),
            headers: BTreeMap::from([
                ("x-github-event".into(), "pull_request".into()),
                ("x-github-delivery".into(), format!("bench-{i}")),
                ("x-hub-signature-256".into(), sig.clone()),
            ]),
            body: body.clone(),
        };
        let t = Instant::now();
        let resp = receiver.handle(&req).await;
        times.push(t.elapsed().as_secs_f64() * 1e6);
        anyhow::ensure!(
            resp.status == 200,
            "unexpected {}: {}",
            resp.status,
            resp.body
        );
    }
    times.sort_by(f64::total_cmp);
    let pct = |p: f64| times[((times.len() as f64 * p) as usize).min(times.len() - 1)];
    println!(
        "receiver, signed synchronize ({} bytes), {n} deliveries: p50 {:.0} µs  p99 {:.0} µs  max {:.0} µs  (goal p99 < 5,000 µs)",
        body.len(),
        pct(0.50),
        pct(0.99),
        times[times.len() - 1]
    );
    Ok(())
}

impl live_ci_core::port::Classify for Never {
    fn kind(&self) -> live_ci_core::port::ErrorKind {
        live_ci_core::port::ErrorKind::Permanent
    }
}
