//! The sweep's trunk check against a real PostgreSQL metadb and the real GitHub
//! adapter on a local HTTP mock of the REST API (exact requests asserted); the
//! ECS launch is recorded (ECS itself cannot run here; the e2e runs the local
//! cloud's). A trunk head no run and no no-op merge has is launched once per
//! cool-down; a known head is left alone.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use live_ci_testkit::pg as support;

use std::collections::BTreeMap;
use std::time::Duration;

use live_ci_core::port::ParamStore;
use live_ci_core::port::{ExecutionDescription, RunStore, WorkflowEngine};
use live_ci_core::status::NoGitHost;
use live_ci_core::task::{TaskKind, TaskSpec, env};
use live_ci_core::webhook::FilePattern;
use live_ci_github::{Credentials, GitHubClient, GitHubConfig, Job, RetryPolicy};
use live_ci_metadb::PgMetadb;
use live_ci_trigger_sf::{HandlerConfig, Input, TriggerSf, TrunkLaunch, TrunkSweep};
use serde_json::json;
use support::{TestDb, exec, run};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const LOCK: &str = "/live-ci/merge-lock";
const HEAD: &str = "6dcb09b5b57875f334f61aebed695e2e4193db5e";

use live_ci_testkit::params::{FakeError, MemoryParams as Params};
use live_ci_testkit::tasks::RecordingLauncher as Launcher;

/// No execution is running in these tests: Step Functions is never called.
#[derive(Debug)]
struct NoEngine;

impl WorkflowEngine for NoEngine {
    type Error = FakeError;

    async fn start_execution(&self, name: &str, _input: &str) -> Result<String, FakeError> {
        Err(FakeError(format!("unexpected start of {name:?}")))
    }

    async fn stop_execution(&self, arn: &str, _e: &str, _c: &str) -> Result<(), FakeError> {
        Err(FakeError(format!("unexpected stop of {arn:?}")))
    }

    async fn describe_execution(&self, arn: &str) -> Result<ExecutionDescription, FakeError> {
        Err(FakeError(format!("unexpected describe of {arn:?}")))
    }
}

type Handler = TriggerSf<PgMetadb, NoEngine, Params, NoGitHost, GitHubClient, Launcher>;

fn github(server: &MockServer) -> GitHubClient {
    GitHubClient::new(GitHubConfig {
        api_base: server.uri(),
        repository: "acme/live".into(),
        credentials: Credentials::Token("ghs_secret".into()),
        job: Job::TriggerSf,
        retry: RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(20),
        },
    })
    .unwrap()
}

/// The trunk `main` points at `sha`, asked `times` times.
async fn trunk_at(server: &MockServer, sha: &str, times: u64) {
    server.reset().await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/live/branches/main"))
        .and(header("authorization", "Bearer ghs_secret"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "name": "main",
            "commit": {"sha": sha, "commit": {"message": "Merge pull request #42"}},
            "protected": true
        })))
        .expect(times)
        .mount(server)
        .await;
}

async fn handler(t: &TestDb, server: &MockServer, cooldown_secs: u32) -> Handler {
    let config = HandlerConfig::new(LOCK, FilePattern::new(FilePattern::DEFAULT).unwrap());
    let params = Params::default();
    params.put(LOCK, "none").await.unwrap();
    TriggerSf::new(config, t.metadb(2).await, NoEngine, params, NoGitHost).with_trunk_sweep(
        TrunkSweep {
            head: github(server),
            launcher: Launcher::default(),
            cooldown_secs,
        },
    )
}

fn launched(h: &Handler) -> Vec<TaskSpec> {
    h.launcher().unwrap().started()
}

/// The exact task a sweep launch starts: create-deploy-stack for the head,
/// no pull request, a token per attempt.
fn sweep_task(commit: &str, attempt: u32) -> TaskSpec {
    let trigger = format!("sweep-{commit}-{attempt}");
    TaskSpec {
        kind: TaskKind::CreateDeployStack,
        env: BTreeMap::from([
            (env::COMMIT.to_string(), commit.to_string()),
            (env::DELIVERY_ID.to_string(), trigger.clone()),
        ]),
        client_token: trigger,
    }
}

#[tokio::test]
async fn an_unknown_head_launches_create_deploy_stack_once_per_cool_down() {
    let t = TestDb::new().await;
    let server = MockServer::start().await;
    trunk_at(&server, HEAD, 2).await;
    let h = handler(&t, &server, 900).await;

    let r = h.handle(&Input::Sweep).await.unwrap();
    assert_eq!(
        r.trunk_launch,
        Some(TrunkLaunch {
            commit: HEAD.into(),
            attempt: 1,
            task_arn: Launcher::task_arn(1),
        })
    );
    assert_eq!(launched(&h), [sweep_task(HEAD, 1)]);

    // The next period, create-deploy-stack still cloning: not launched twice.
    let r = h.handle(&Input::Sweep).await.unwrap();
    assert_eq!(r.trunk_launch, None, "{r:?}");
    assert_eq!(launched(&h).len(), 1);
    server.verify().await;
    t.drop_db().await;
}

#[tokio::test]
async fn after_the_cool_down_an_unknown_head_is_launched_again() {
    let t = TestDb::new().await;
    let server = MockServer::start().await;
    trunk_at(&server, HEAD, 2).await;
    // A launch that never became a run or a no-op (the task died) is retried.
    let h = handler(&t, &server, 0).await;
    h.handle(&Input::Sweep).await.unwrap();
    let r = h.handle(&Input::Sweep).await.unwrap();
    assert_eq!(r.trunk_launch.map(|l| l.attempt), Some(2));
    assert_eq!(launched(&h), [sweep_task(HEAD, 1), sweep_task(HEAD, 2)]);
    server.verify().await;
    t.drop_db().await;
}

#[tokio::test]
async fn a_head_with_a_run_or_a_no_op_merge_launches_nothing() {
    let t = TestDb::new().await;
    let server = MockServer::start().await;
    let h = handler(&t, &server, 0).await;
    // The head's merge became a run (any status: this one holds the lock).
    h.metadb()
        .create_run(&run(HEAD, 4, vec![exec("h-a", "dev", &[])]))
        .await
        .unwrap();
    trunk_at(&server, HEAD, 1).await;
    let r = h.handle(&Input::Sweep).await.unwrap();
    assert_eq!(r.trunk_launch, None, "{r:?}");
    server.verify().await;

    // A merge create-deploy-stack found nothing to deploy for.
    let quiet = "1111111111111111111111111111111111111111";
    h.metadb().record_no_op_merge(quiet).await.unwrap();
    trunk_at(&server, quiet, 1).await;
    let r = h.handle(&Input::Sweep).await.unwrap();
    assert_eq!(r.trunk_launch, None, "{r:?}");
    server.verify().await;
    assert!(launched(&h).is_empty());
    t.drop_db().await;
}

#[tokio::test]
async fn github_failing_is_a_warning_and_the_rest_of_the_sweep_runs() {
    let t = TestDb::new().await;
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/live/branches/main"))
        .respond_with(ResponseTemplate::new(502))
        .expect(2)
        .mount(&server)
        .await;
    let h = handler(&t, &server, 900).await;
    // A lock parameter out of step is still repaired.
    h.params().put(LOCK, "42").await.unwrap();
    let r = h.handle(&Input::Sweep).await.unwrap();
    assert_eq!(r.trunk_launch, None);
    assert_eq!(r.lock_repaired.as_deref(), Some("none"));
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("trunk head of \"main\"") && w.contains("502")),
        "{r:?}"
    );
    assert!(launched(&h).is_empty());
    t.drop_db().await;
}
