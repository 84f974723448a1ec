//! The sweep's trunk check against a real PostgreSQL metadb and the real GitHub
//! adapter on a local HTTP mock of the REST API (exact requests asserted); the
//! ECS launch is recorded (ECS itself cannot run here; the e2e runs the local
//! cloud's). A trunk head no run and no no-op merge has is launched once per
//! cool-down, with the merged pull request that produced it; a known head is
//! left alone, and a head no merged pull request produced (a direct push) is
//! not deployed unless `deploy_direct_pushes`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use live_ci_testkit::pg as support;

use std::collections::BTreeMap;
use std::time::Duration;

use crate::ports::{Fakes, Wired};
use live_ci_core::port::ParamStore;
use live_ci_core::port::{ExecutionDescription, RunStore, WorkflowEngine};
use live_ci_core::task::{TaskKind, TaskSpec, env};
use live_ci_core::webhook::FilePattern;
use live_ci_github::{Credentials, GitHubClient, GitHubConfig, Job, RetryPolicy};
use live_ci_metadb::PgMetadb;
use live_ci_trigger_sf::{HandlerConfig, Input, TrunkLaunch, TrunkSweep};
use serde_json::json;
use support::{TestDb, exec, run};
use wiremock::matchers::{body_json, header, method, path, query_param};
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

type Handler = Wired<PgMetadb, NoEngine, Params, GitHubClient, GitHubClient, Launcher>;

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

/// GitHub lists `pulls` for commit `sha` (`GET /commits/{sha}/pulls`).
async fn pulls_of(server: &MockServer, sha: &str, pulls: serde_json::Value) {
    Mock::given(method("GET"))
        .and(path(format!("/repos/acme/live/commits/{sha}/pulls")))
        .and(query_param("per_page", "100"))
        .and(header("authorization", "Bearer ghs_secret"))
        .respond_with(ResponseTemplate::new(200).set_body_json(pulls))
        .mount(server)
        .await;
}

/// GitHub's answer for a merge commit: the pull request it merged (as the
/// API lists it, trimmed), plus an older one that merely contains the commit.
fn merged_pr(number: u64, merge_commit: &str) -> serde_json::Value {
    json!([
        {
            "number": 7, "state": "closed", "merged_at": "2026-11-01T10:00:00Z",
            "merge_commit_sha": "2222222222222222222222222222222222222222",
            "head": {"ref": "old", "sha": "3333333333333333333333333333333333333333"},
            "base": {"ref": "main", "sha": "4444444444444444444444444444444444444444"}
        },
        {
            "number": number, "state": "closed", "merged_at": "2026-11-26T05:00:00Z",
            "merge_commit_sha": merge_commit,
            "head": {"ref": "feature/x", "sha": "5555555555555555555555555555555555555555"},
            "base": {"ref": "main", "sha": "6666666666666666666666666666666666666666"}
        }
    ])
}

async fn handler(t: &TestDb, server: &MockServer, cooldown_secs: u32) -> Handler {
    handler_with(t, server, cooldown_secs, false).await
}

async fn handler_with(
    t: &TestDb,
    server: &MockServer,
    cooldown_secs: u32,
    deploy_direct_pushes: bool,
) -> Handler {
    let config = HandlerConfig::new(LOCK, FilePattern::new(FilePattern::DEFAULT).unwrap());
    let params = Params::default();
    params.put(LOCK, "none").await.unwrap();
    Wired::new(
        config,
        Fakes::new(t.metadb(2).await, NoEngine, params, github(server)).with_trunk_sweep(
            TrunkSweep {
                head: github(server),
                launcher: Launcher::default(),
                cooldown_secs,
                deploy_direct_pushes,
            },
        ),
    )
}

/// "METHOD path" of every request GitHub saw.
async fn requests(server: &MockServer) -> Vec<String> {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| format!("{} {}", r.method, r.url.path()))
        .collect()
}

fn launched(h: &Handler) -> Vec<TaskSpec> {
    h.launcher.as_ref().unwrap().started()
}

/// The exact task a sweep launch starts: create-deploy-stack for the head
/// with the pull request `merged_pr` lists for it, a token per attempt.
fn sweep_task(commit: &str, attempt: u32) -> TaskSpec {
    let mut task = direct_push_task(commit, attempt);
    task.env.extend([
        (env::PR_NUMBER.to_string(), "42".to_string()),
        (env::BASE_REF.to_string(), "main".to_string()),
        (
            env::BASE_SHA.to_string(),
            "6666666666666666666666666666666666666666".to_string(),
        ),
        (env::HEAD_REF.to_string(), "feature/x".to_string()),
        (
            env::HEAD_SHA.to_string(),
            "5555555555555555555555555555555555555555".to_string(),
        ),
    ]);
    task
}

/// A direct push deployed under `deploy_direct_pushes`: no pull request.
fn direct_push_task(commit: &str, attempt: u32) -> TaskSpec {
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
    pulls_of(&server, HEAD, merged_pr(42, HEAD)).await;
    let h = handler(&t, &server, 900).await;

    let r = h.handle(&Input::Sweep).await.unwrap();
    assert_eq!(
        r.trunk_launch,
        Some(TrunkLaunch {
            commit: HEAD.into(),
            pull_request: Some(42),
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
    assert_eq!(
        requests(&server).await,
        [
            "GET /repos/acme/live/branches/main",
            &format!("GET /repos/acme/live/commits/{HEAD}/pulls"),
            "GET /repos/acme/live/branches/main",
        ]
    );
    t.drop_db().await;
}

/// A trunk head no merged pull request produced (pushed straight to the
/// trunk, or a pull request's commit pushed there before its merge) is not
/// deployed: its commit gets a failing `live-ci: deploy` status saying why.
#[tokio::test]
async fn a_direct_push_is_not_deployed_and_its_commit_says_why() {
    let t = TestDb::new().await;
    let server = MockServer::start().await;
    trunk_at(&server, HEAD, 1).await;
    // GitHub lists the open pull request whose test merge is not the head,
    // and one that contains the commit but was merged as another.
    pulls_of(
        &server,
        HEAD,
        json!([
            {"number": 9, "state": "open", "merged_at": null, "merge_commit_sha": HEAD,
             "head": {"ref": "wip", "sha": HEAD}, "base": {"ref": "main", "sha": "1"}},
            {"number": 8, "state": "closed", "merged_at": "2026-11-26T05:00:00Z",
             "merge_commit_sha": "7777777777777777777777777777777777777777",
             "head": {"ref": "y", "sha": HEAD}, "base": {"ref": "main", "sha": "1"}}
        ]),
    )
    .await;
    Mock::given(method("POST"))
        .and(path(format!("/repos/acme/live/statuses/{HEAD}")))
        .and(body_json(json!({
            "state": "failure",
            "context": "live-ci: deploy",
            "description": "not deployed: pushed to main directly, not merged from a pull request (deploy_direct_pushes is off)",
        })))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({})))
        .expect(1)
        .mount(&server)
        .await;
    let h = handler(&t, &server, 900).await;
    let r = h.handle(&Input::Sweep).await.unwrap();
    assert_eq!(r.trunk_launch, None, "{r:?}");
    assert_eq!(r.direct_push.as_deref(), Some(HEAD));
    assert!(launched(&h).is_empty());
    server.verify().await;
    assert_eq!(
        requests(&server).await,
        [
            "GET /repos/acme/live/branches/main",
            &format!("GET /repos/acme/live/commits/{HEAD}/pulls"),
            &format!("POST /repos/acme/live/statuses/{HEAD}"),
        ]
    );

    // With deploy_direct_pushes the same head is deployed, as PR 0.
    let server = MockServer::start().await;
    trunk_at(&server, HEAD, 1).await;
    pulls_of(&server, HEAD, json!([])).await;
    let h = handler_with(&t, &server, 0, true).await;
    let r = h.handle(&Input::Sweep).await.unwrap();
    let launch = r.trunk_launch.expect("launched");
    assert_eq!((launch.commit.as_str(), launch.pull_request), (HEAD, None));
    assert_eq!(r.direct_push, None);
    assert_eq!(launched(&h), [direct_push_task(HEAD, 2)]);
    t.drop_db().await;
}

#[tokio::test]
async fn after_the_cool_down_an_unknown_head_is_launched_again() {
    let t = TestDb::new().await;
    let server = MockServer::start().await;
    trunk_at(&server, HEAD, 2).await;
    pulls_of(&server, HEAD, merged_pr(42, HEAD)).await;
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
    h.metadb
        .create_run(&run(HEAD, 4, vec![exec("h-a", "dev", &[])]))
        .await
        .unwrap();
    trunk_at(&server, HEAD, 1).await;
    let r = h.handle(&Input::Sweep).await.unwrap();
    assert_eq!(r.trunk_launch, None, "{r:?}");
    server.verify().await;

    // A merge create-deploy-stack found nothing to deploy for.
    let quiet = "1111111111111111111111111111111111111111";
    h.metadb.record_no_op_merge(quiet).await.unwrap();
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
    h.params.put(LOCK, "42").await.unwrap();
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

/// The drift schedule's `{"drift": true}` (issue 32 item 4) starts the drift
/// task through the sweep's launcher, named by the schedule's tick, and
/// nothing else: GitHub is not asked, no run is written, the merge lock (row
/// and parameter) is untouched — a drift launch never takes it. A second
/// delivery of the same tick carries the same idempotency token. Without a
/// launcher the input is refused by name, not dropped.
#[tokio::test]
async fn a_drift_tick_launches_the_drift_task_and_never_the_lock() {
    let t = TestDb::new().await;
    let server = MockServer::start().await;
    let h = handler(&t, &server, 900).await;
    let lock_before = h.metadb.merge_lock().await.unwrap();
    let tick = "2026-11-27T09:00:00Z";

    let r = h
        .handle(&Input::Drift {
            tick: Some(tick.into()),
        })
        .await
        .unwrap();
    let task_arn = r.drift_launch.clone().unwrap();
    assert!(!task_arn.is_empty());
    assert_eq!(r.trunk_launch, None);
    h.handle(&Input::Drift {
        tick: Some(tick.into()),
    })
    .await
    .unwrap();
    let drift = TaskSpec {
        kind: TaskKind::Drift,
        env: BTreeMap::from([(env::DELIVERY_ID.to_string(), format!("drift-{tick}"))]),
        client_token: "drift-2026-11-27T090000Z".into(),
    };
    assert_eq!(launched(&h), [drift.clone(), drift]);
    assert!(requests(&server).await.is_empty(), "github is not asked");
    assert_eq!(h.metadb.merge_lock().await.unwrap(), lock_before);
    assert_eq!(h.params.get(LOCK).await.unwrap(), "none");
    assert!(h.metadb.busy_units().await.unwrap().is_empty());

    // No launcher configured: refused, naming what is missing.
    let config = HandlerConfig::new(LOCK, FilePattern::new(FilePattern::DEFAULT).unwrap());
    let bare = Wired::new(
        config,
        Fakes::new(
            t.metadb(1).await,
            NoEngine,
            Params::default(),
            github(&server),
        ),
    );
    let err = bare
        .handle(&Input::Drift { tick: None })
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("DRIFT_TASK_DEFINITION_ARN"), "{err}");
}
