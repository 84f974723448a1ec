//! The receiver handler end to end in process: real GitHub webhook payloads
//! (tests/fixtures/github), signed; GitHub's REST API served by wiremock with the
//! exact requests asserted; the parameter store and task launcher as recording fakes.
#![allow(clippy::unwrap_used)] // test set-up panics by design

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use live_ci_core::task::{TaskKind, TaskSpec};
use live_ci_core::webhook::{FilePattern, TrustPolicy, sign};
use live_ci_github::{Credentials, GitHubClient, GitHubConfig, Job, RetryPolicy};
use live_ci_receiver::{
    Config, ConfigError, HandlerConfig, Receiver, SECRET_RETRY, SECRET_TTL, WebhookRequest,
};
use live_ci_testkit::params::MemoryParams as Params;
use live_ci_testkit::tasks::RecordingLauncher as Launcher;

use crate::ports::{Fakes, RecordingInvoker};
use serde_json::{Value, json};
use wiremock::matchers::{body_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

pub(crate) const SECRET: &str = "test-webhook-secret-0123456789abcdef";
pub(crate) const FORK_HEAD: &str = "e4d1a9c07b3f25d8e6a1c4b9f0d7e2a5c8b3f161";
pub(crate) const OPEN_HEAD: &str = "16b7537a0e4f8c2d9b3a61e5f70c48d2a9be31c4";
const SYNC_HEAD: &str = "9c2f41e88a07d3b6e15c0f2a7d94b83e6c1f05d2";
pub(crate) const MERGE: &str = "6cb93bbc4422b29f88bf7c85311e1b0657191c39";

fn param_store(lock: &str, statuses: &str) -> Params {
    Params::with([
        ("/live-ci/webhook-secret", SECRET),
        ("/live-ci/merge-lock", lock),
        ("/live-ci/commit-status-config", statuses),
    ])
}

pub(crate) fn handler_config() -> HandlerConfig {
    HandlerConfig {
        repository: "acme/infrastructure-live".into(),
        trunk_branch: "main".into(),
        file_pattern: FilePattern::new(FilePattern::DEFAULT).unwrap(),
        webhook_secret_param: "/live-ci/webhook-secret".into(),
        merge_lock_param: "/live-ci/merge-lock".into(),
        commit_status_config_param: "/live-ci/commit-status-config".into(),
        max_body_bytes: 64 * 1024,
        trust: TrustPolicy::default(),
        secret_ttl: SECRET_TTL,
        secret_retry: SECRET_RETRY,
    }
}

pub(crate) struct Harness {
    pub(crate) server: MockServer,
    pub(crate) receiver: Receiver<Fakes>,
    /// The receiver's parameters (tests change the secret behind it).
    pub(crate) params: Arc<Params>,
    /// The receiver's launcher (tests inspect what was started).
    pub(crate) launcher: Arc<Launcher>,
}

pub(crate) async fn harness(lock: &str, statuses: &str) -> Harness {
    harness_with(param_store(lock, statuses), handler_config()).await
}

async fn harness_with(params: Params, config: HandlerConfig) -> Harness {
    harness_launching(params, config, Launcher::with_logs()).await
}

async fn harness_launching(params: Params, config: HandlerConfig, launcher: Launcher) -> Harness {
    harness_voting(params, config, launcher, None).await
}

/// A receiver handing vote comments to `votes` (the invoker and
/// approval_response's name) when given.
async fn harness_voting(
    params: Params,
    config: HandlerConfig,
    launcher: Launcher,
    votes: Option<(Arc<RecordingInvoker>, String)>,
) -> Harness {
    let server = MockServer::start().await;
    let github = GitHubClient::new(GitHubConfig {
        api_base: server.uri(),
        repository: "acme/infrastructure-live".into(),
        credentials: Credentials::Token("ghs_token".into()),
        job: Job::Receiver,
        retry: RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_secs(1),
        },
    })
    .unwrap();
    let params = Arc::new(params);
    let launcher = Arc::new(launcher);
    let mut fakes = Fakes::new(params.clone(), github, launcher.clone());
    fakes.votes = votes;
    let receiver = Receiver::new(config, fakes).await.unwrap();
    Harness {
        server,
        receiver,
        params,
        launcher,
    }
}

pub(crate) fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/../../tests/fixtures/github/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn request(
    event: &str,
    delivery: &str,
    body: Vec<u8>,
    signature: Option<String>,
) -> WebhookRequest {
    let mut headers = BTreeMap::from([
        ("x-github-event".to_string(), event.to_string()),
        ("x-github-delivery".to_string(), delivery.to_string()),
        ("content-type".to_string(), "application/json".to_string()),
    ]);
    if let Some(sig) = signature {
        headers.insert("x-hub-signature-256".into(), sig);
    }
    WebhookRequest {
        method: "POST".into(),
        headers,
        body,
    }
}

pub(crate) fn signed(event: &str, delivery: &str, body: Vec<u8>) -> WebhookRequest {
    let sig = sign(SECRET.as_bytes(), &body);
    request(event, delivery, body, Some(sig))
}

pub(crate) async fn files(server: &MockServer, files: &[&str]) {
    let body: Vec<Value> = files
        .iter()
        .map(|f| json!({"filename": f, "status": "modified"}))
        .collect();
    Mock::given(method("GET"))
        .and(path("/repos/acme/infrastructure-live/pulls/42/files"))
        .respond_with(ResponseTemplate::new(200).set_body_json(body))
        .mount(server)
        .await;
}

pub(crate) async fn expect_status(server: &MockServer, sha: &str, body: Value) {
    Mock::given(method("POST"))
        .and(path(format!(
            "/repos/acme/infrastructure-live/statuses/{sha}"
        )))
        .and(body_json(body))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({})))
        .expect(1)
        .mount(server)
        .await;
}

pub(crate) async fn no_other_github_calls(server: &MockServer) {
    Mock::given(wiremock::matchers::any())
        .respond_with(ResponseTemplate::new(599))
        .expect(0)
        .mount(server)
        .await;
}

pub(crate) fn launched(h: &Harness) -> Vec<TaskSpec> {
    h.launcher.started()
}

#[tokio::test]
async fn opened_pull_request_posts_the_lock_and_starts_one_plan_of_the_head_commit() {
    let h = harness("none", "{}").await;
    files(
        &h.server,
        &["shared/us-east-1/network/vpc/main.tf", "README.md"],
    )
    .await;
    expect_status(
        &h.server,
        OPEN_HEAD,
        json!({
            "state": "success", "context": "Merge Lock", "description": "unlocked: free to merge"
        }),
    )
    .await;
    expect_status(&h.server, OPEN_HEAD, json!({
        "state": "pending", "context": "live-ci: plan", "description": "planning the affected units",
        "target_url": "https://logs.example.com/t1"
    })).await;
    let resp = h
        .receiver
        .handle(&signed(
            "pull_request",
            "d-open",
            fixture("pull_request_opened.json"),
        ))
        .await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.body["started"], "pr-plan");
    assert_eq!(resp.body["commit"], OPEN_HEAD);
    let specs = launched(&h);
    assert_eq!(specs.len(), 1);
    assert_eq!(specs[0].kind, TaskKind::PrPlan);
    assert_eq!(specs[0].client_token, "d-open");
    assert_eq!(
        specs[0].env,
        BTreeMap::from([
            ("LIVE_CI_BASE_REF".into(), "main".into()),
            ("LIVE_CI_COMMIT".into(), OPEN_HEAD.into()),
            ("LIVE_CI_DELIVERY_ID".into(), "d-open".into()),
            ("LIVE_CI_HEAD_REF".into(), "feature/bigger-vpc".into()),
            ("LIVE_CI_HEAD_TRUSTED".into(), "true".into()),
            ("LIVE_CI_PR_NUMBER".into(), "42".into()),
        ])
    );
}

#[tokio::test]
async fn a_new_push_plans_the_new_commit_and_shows_a_held_lock() {
    let h = harness("7", r#"{"PrPlan": false}"#).await;
    files(&h.server, &["dev/us-east-1/worker/terragrunt.hcl"]).await;
    expect_status(
        &h.server,
        SYNC_HEAD,
        json!({
            "state": "pending", "context": "Merge Lock",
            "description": "locked by PR #7 while it deploys; merge after it finishes"
        }),
    )
    .await;
    // PrPlan statuses are switched off: no second status call.
    let resp = h
        .receiver
        .handle(&signed(
            "pull_request",
            "d-sync",
            fixture("pull_request_synchronize.json"),
        ))
        .await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.body["merge_lock"], "7");
    assert_eq!(launched(&h)[0].env["LIVE_CI_COMMIT"], SYNC_HEAD);
}

#[tokio::test]
async fn merged_pull_request_starts_create_deploy_stack_queued_behind_the_lock() {
    let h = harness("7", "{}").await;
    files(&h.server, &["shared/us-east-1/network/vpc/terragrunt.hcl"]).await;
    expect_status(
        &h.server,
        MERGE,
        json!({
            "state": "pending", "context": "live-ci: create-deploy-stack",
            "description": "queued behind PR #7; finding the affected units",
            "target_url": "https://logs.example.com/t1"
        }),
    )
    .await;
    let resp = h
        .receiver
        .handle(&signed(
            "pull_request",
            "d-merge",
            fixture("pull_request_closed_merged.json"),
        ))
        .await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.body["queued_behind"], 7);
    let spec = &launched(&h)[0];
    assert_eq!(spec.kind, TaskKind::CreateDeployStack);
    assert_eq!(spec.env["LIVE_CI_COMMIT"], MERGE);
    assert_eq!(
        spec.env["LIVE_CI_BASE_SHA"],
        "1e7bc7d6f5b4a39281706f2c4b1ea9d3c8e05a17"
    );
    assert_eq!(spec.env["LIVE_CI_HEAD_SHA"], SYNC_HEAD);
}

#[tokio::test]
async fn the_same_delivery_twice_starts_one_task() {
    let h = harness("none", r#"{"PrPlan": false}"#).await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/infrastructure-live/pulls/42/files"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([{"filename": "a.hcl"}])))
        .expect(1)
        .mount(&h.server)
        .await;
    expect_status(
        &h.server,
        MERGE,
        json!({
            "state": "pending", "context": "live-ci: create-deploy-stack",
            "description": "finding the affected units", "target_url": "https://logs.example.com/t1"
        }),
    )
    .await;
    let req = signed(
        "pull_request",
        "d-dup",
        fixture("pull_request_closed_merged.json"),
    );
    assert_eq!(h.receiver.handle(&req).await.status, 200);
    let again = h.receiver.handle(&req).await;
    assert_eq!(again.status, 200);
    assert_eq!(
        again.body["ignored"],
        "delivery \"d-dup\" was already handled"
    );
    assert_eq!(launched(&h).len(), 1);
}

#[tokio::test]
async fn unsigned_wrongly_signed_malformed_and_oversized_bodies_do_nothing() {
    let h = harness("none", "{}").await;
    no_other_github_calls(&h.server).await;
    let body = fixture("pull_request_opened.json");
    let r = h
        .receiver
        .handle(&request("pull_request", "d1", body.clone(), None))
        .await;
    assert_eq!(
        (r.status, r.body["error"].as_str().unwrap()),
        (401, "missing X-Hub-Signature-256 header")
    );
    let wrong = sign(b"not-the-secret", &body);
    let r = h
        .receiver
        .handle(&request("pull_request", "d2", body.clone(), Some(wrong)))
        .await;
    assert_eq!(
        (r.status, r.body["error"].as_str().unwrap()),
        (401, "signature does not match the body")
    );
    // signed for the original body, sent with one byte changed
    let sig = sign(SECRET.as_bytes(), &body);
    let mut tampered = body.clone();
    tampered[10] ^= 1;
    assert_eq!(
        h.receiver
            .handle(&request("pull_request", "d3", tampered, Some(sig)))
            .await
            .status,
        401
    );
    let r = h
        .receiver
        .handle(&signed("pull_request", "d4", b"{\"action\": ".to_vec()))
        .await;
    assert_eq!(r.status, 400);
    assert!(
        r.body["error"]
            .as_str()
            .unwrap()
            .starts_with("malformed \"pull_request\" payload")
    );
    let r = h
        .receiver
        .handle(&signed("pull_request", "d5", vec![b' '; 64 * 1024 + 1]))
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.body["error"],
        "body of 65537 bytes exceeds the 65536-byte limit"
    );
    let mut no_delivery = signed("pull_request", "", body.clone());
    no_delivery.headers.remove("x-github-delivery");
    assert_eq!(h.receiver.handle(&no_delivery).await.status, 400);
    let mut get = signed("pull_request", "d6", body);
    get.method = "GET".into();
    assert_eq!(h.receiver.handle(&get).await.status, 405);
    assert!(launched(&h).is_empty());
}

#[tokio::test]
async fn ping_and_ignored_events_answer_200_with_the_reason() {
    let h = harness("none", "{}").await;
    no_other_github_calls(&h.server).await;
    let r = h
        .receiver
        .handle(&signed("ping", "p1", fixture("ping.json")))
        .await;
    assert_eq!((r.status, r.body.clone()), (200, json!({"pong": true})));
    for (event, file, reason) in [
        ("push", "push.json", "event \"push\" is not handled"),
        (
            "pull_request",
            "pull_request_closed_unmerged.json",
            "pull request #42 was closed without merging",
        ),
        (
            "pull_request",
            "pull_request_other_base.json",
            "pull request #42 targets \"release/2026-q4\", not the trunk \"main\"",
        ),
    ] {
        let r = h.receiver.handle(&signed(event, file, fixture(file))).await;
        assert_eq!(
            (r.status, r.body["ignored"].as_str().unwrap()),
            (200, reason),
            "{file}"
        );
    }
    assert!(launched(&h).is_empty());
}

/// It still gets a successful "Merge Lock" status (even while the lock is
/// held: it never deploys), so the status can be a required check.
#[tokio::test]
async fn pull_request_without_matching_files_is_ignored() {
    let h = harness("7", "{}").await;
    files(&h.server, &["README.md", "docs/runbook.md"]).await;
    expect_status(
        &h.server,
        OPEN_HEAD,
        json!({
            "state": "success", "context": "Merge Lock",
            "description": "no infrastructure file changed: not locked"
        }),
    )
    .await;
    no_other_github_calls(&h.server).await;
    let r = h
        .receiver
        .handle(&signed(
            "pull_request",
            "d-docs",
            fixture("pull_request_opened.json"),
        ))
        .await;
    assert_eq!(r.status, 200);
    assert!(
        r.body["ignored"]
            .as_str()
            .unwrap()
            .contains("changes no file matching")
    );
    assert!(launched(&h).is_empty());
}

#[tokio::test]
async fn github_outage_is_a_500_and_the_delivery_can_be_redelivered() {
    let h = harness("none", r#"{"PrPlan": false}"#).await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/infrastructure-live/pulls/42/files"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(2)
        .mount(&h.server)
        .await;
    let req = signed(
        "pull_request",
        "d-retry",
        fixture("pull_request_opened.json"),
    );
    let r = h.receiver.handle(&req).await;
    assert_eq!(r.status, 500);
    assert!(
        r.body["error"]
            .as_str()
            .unwrap()
            .contains("github answered 503"),
        "{}",
        r.body
    );
    assert!(launched(&h).is_empty());
    // GitHub is back: the redelivery is handled, not refused as a duplicate.
    files(&h.server, &["a/terragrunt.hcl"]).await;
    expect_status(
        &h.server,
        OPEN_HEAD,
        json!({
            "state": "success", "context": "Merge Lock", "description": "unlocked: free to merge"
        }),
    )
    .await;
    let r = h.receiver.handle(&req).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(launched(&h).len(), 1);
}

#[tokio::test]
async fn refreshing_the_lock_updates_every_open_pull_request_with_matching_files() {
    let h = harness("42", "{}").await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/infrastructure-live/pulls"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([
            {"number": 43, "head": {"sha": "h43", "ref": "a"}, "base": {"sha": "b", "ref": "main"}},
            {"number": 44, "head": {"sha": "h44", "ref": "b"}, "base": {"sha": "b", "ref": "main"}}
        ])))
        .mount(&h.server)
        .await;
    for (n, f) in [(43, "dev/app/terragrunt.hcl"), (44, "README.md")] {
        Mock::given(method("GET"))
            .and(path(format!(
                "/repos/acme/infrastructure-live/pulls/{n}/files"
            )))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([{"filename": f}])))
            .mount(&h.server)
            .await;
    }
    expect_status(
        &h.server,
        "h43",
        json!({
            "state": "pending", "context": "Merge Lock",
            "description": "locked by PR #42 while it deploys; merge after it finishes"
        }),
    )
    .await;
    assert_eq!(h.receiver.refresh_merge_lock().await.unwrap(), [43]);
}

#[test]
fn configuration_names_the_missing_or_bad_variable() {
    let base: HashMap<&str, &str> = HashMap::from([
        ("REPO_FULL_NAME", "acme/infrastructure-live"),
        ("GITHUB_WEBHOOK_SECRET_SSM_KEY", "/s"),
        ("GITHUB_TOKEN_SSM_KEY", "/t"),
        ("MERGE_LOCK_SSM_KEY", "/l"),
        ("COMMIT_STATUS_CONFIG_SSM_KEY", "/c"),
        ("ECS_CLUSTER_ARN", "arn:c"),
        ("AWS_REGION", "eu-west-1"),
        ("ECS_SUBNET_IDS", "subnet-a, subnet-b"),
        ("ECS_SECURITY_GROUP_IDS", "sg-1"),
        ("PR_PLAN_TASK_DEFINITION_ARN", "pp:1"),
        ("PR_PLAN_CONTAINER_NAME", "task"),
        ("PR_PLAN_LOG_GROUP", "/g"),
        ("PR_PLAN_LOG_STREAM_PREFIX", "pr-plan"),
        ("CREATE_DEPLOY_STACK_TASK_DEFINITION_ARN", "cds:1"),
        ("CREATE_DEPLOY_STACK_CONTAINER_NAME", "task"),
        ("CREATE_DEPLOY_STACK_LOG_GROUP", "/g"),
        ("CREATE_DEPLOY_STACK_LOG_STREAM_PREFIX", "cds"),
        (
            "METADB_CLUSTER_ARN",
            "arn:aws:rds:eu-west-1:1:cluster:metadb",
        ),
        (
            "METADB_SECRET_ARN",
            "arn:aws:secretsmanager:eu-west-1:1:secret:metadb",
        ),
        ("METADB_NAME", "live_ci"),
    ]);
    let with = |k: &'static str, v: Option<&'static str>| {
        let mut m = base.clone();
        match v {
            Some(v) => m.insert(k, v),
            None => m.remove(k),
        };
        Config::from_lookup(move |key| m.get(key).map(|v| v.to_string()))
    };
    let ok = Config::from_lookup(|k| base.get(k).map(|v| v.to_string())).unwrap();
    assert_eq!(ok.handler.trunk_branch, "main");
    assert_eq!(ok.ecs.subnets, ["subnet-a", "subnet-b"]);
    assert_eq!(
        with("ECS_CLUSTER_ARN", None).unwrap_err().problems,
        [ConfigError::Missing("ECS_CLUSTER_ARN")]
    );
    // The lock row is read through the Data API, like the other Lambdas.
    assert!(matches!(
        ok.metadb,
        live_ci_receiver::MetadbConfig::DataApi { .. }
    ));
    assert_eq!(
        with("METADB_SECRET_ARN", None).unwrap_err().problems,
        [ConfigError::Missing("METADB_SECRET_ARN")]
    );
    let err = with("FILE_PATH_PATTERN", Some("("))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("environment variable FILE_PATH_PATTERN=\"(\""),
        "{err}"
    );
    let err = with("ECS_ASSIGN_PUBLIC_IP", Some("yes"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "environment variable ECS_ASSIGN_PUBLIC_IP=\"yes\": expected true or false"
    );
}

/// How often the webhook secret was read.
fn secret_reads(params: &Params) -> usize {
    params.reads_of("/live-ci/webhook-secret")
}

pub(crate) fn requests_summary(requests: &[wiremock::Request]) -> Vec<String> {
    requests
        .iter()
        .map(|r| format!("{} {}", r.method, r.url.path()))
        .collect()
}

#[tokio::test]
async fn a_fork_pull_request_is_not_planned_and_its_status_says_how_to_get_a_plan() {
    let h = harness("none", "{}").await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/infrastructure-live/pulls/43/files"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!([{"filename": "dev/us-east-1/artifacts/terragrunt.hcl", "status": "added"}]),
        ))
        .expect(1)
        .mount(&h.server)
        .await;
    expect_status(
        &h.server,
        FORK_HEAD,
        json!({"state": "success", "context": "Merge Lock", "description": "unlocked: free to merge"}),
    )
    .await;
    let reason = "not planned: a maintainer comments \"/live-ci plan\" to plan it \
                  (its head is in the fork drive-by-dev/infrastructure-live)";
    expect_status(
        &h.server,
        FORK_HEAD,
        json!({"state": "pending", "context": "live-ci: plan", "description": reason}),
    )
    .await;
    no_other_github_calls(&h.server).await;
    let r = h
        .receiver
        .handle(&signed(
            "pull_request",
            "d-fork",
            fixture("pull_request_opened_fork.json"),
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["not_planned"], reason);
    assert_eq!(r.body["commit"], FORK_HEAD);
    assert!(launched(&h).is_empty(), "a fork's code was run");
}

#[tokio::test]
async fn an_untrusted_authors_branch_is_not_planned_either() {
    let h = harness("none", "{}").await;
    files(&h.server, &["dev/us-east-1/worker/terragrunt.hcl"]).await;
    expect_status(
        &h.server,
        OPEN_HEAD,
        json!({"state": "success", "context": "Merge Lock", "description": "unlocked: free to merge"}),
    )
    .await;
    let reason = "not planned: a maintainer comments \"/live-ci plan\" to plan it \
                  (author association \"FIRST_TIME_CONTRIBUTOR\" is not trusted)";
    expect_status(
        &h.server,
        OPEN_HEAD,
        json!({"state": "pending", "context": "live-ci: plan", "description": reason}),
    )
    .await;
    let mut body: Value = serde_json::from_slice(&fixture("pull_request_opened.json")).unwrap();
    body["pull_request"]["author_association"] = "FIRST_TIME_CONTRIBUTOR".into();
    let r = h
        .receiver
        .handle(&signed(
            "pull_request",
            "d-first",
            serde_json::to_vec(&body).unwrap(),
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["not_planned"], reason);
    assert!(launched(&h).is_empty());
}

/// `GET /user`: the login live-ci's own comments are made by.
async fn bot_is(server: &MockServer, login: &str) {
    Mock::given(method("GET"))
        .and(path("/user"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"login": login, "type": "User"})),
        )
        .mount(server)
        .await;
}

/// The GitHub calls of a maintainer's `/live-ci plan` on fork PR #43.
async fn fork_pull_request_43(server: &MockServer, permission: &str, head: &str) {
    bot_is(server, "live-ci-bot").await;
    Mock::given(method("GET"))
        .and(path(
            "/repos/acme/infrastructure-live/collaborators/octo-lead/permission",
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({"permission": permission, "role_name": permission, "user": {"login": "octo-lead"}}),
        ))
        .expect(1)
        .mount(server)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/infrastructure-live/pulls/43"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "number": 43, "state": "open",
            "head": {"sha": head, "ref": "patch-1", "repo": {"full_name": "drive-by-dev/infrastructure-live"}},
            "base": {"sha": "1e7bc7d6f5b4a39281706f2c4b1ea9d3c8e05a17", "ref": "main"}
        })))
        .mount(server)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/infrastructure-live/pulls/43/files"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!([{"filename": "dev/us-east-1/artifacts/terragrunt.hcl"}])),
        )
        .mount(server)
        .await;
}

#[tokio::test]
async fn a_maintainers_plan_comment_plans_the_fork_head_after_checking_the_permission() {
    let h = harness("none", "{}").await;
    fork_pull_request_43(&h.server, "write", FORK_HEAD).await;
    expect_status(
        &h.server,
        FORK_HEAD,
        json!({"state": "success", "context": "Merge Lock", "description": "unlocked: free to merge"}),
    )
    .await;
    expect_status(
        &h.server,
        FORK_HEAD,
        json!({"state": "pending", "context": "live-ci: plan",
               "description": "planning the affected units", "target_url": "https://logs.example.com/t1"}),
    )
    .await;
    no_other_github_calls(&h.server).await;
    let r = h
        .receiver
        .handle(&signed(
            "issue_comment",
            "d-cmd",
            fixture("issue_comment_plan.json"),
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["started"], "pr-plan");
    assert_eq!(r.body["requested_by"], "octo-lead");
    assert_eq!(
        requests_summary(&h.server.received_requests().await.unwrap()),
        [
            "GET /user",
            "GET /repos/acme/infrastructure-live/collaborators/octo-lead/permission",
            "GET /repos/acme/infrastructure-live/pulls/43",
            "GET /repos/acme/infrastructure-live/pulls/43/files",
            &format!("POST /repos/acme/infrastructure-live/statuses/{FORK_HEAD}"),
            &format!("POST /repos/acme/infrastructure-live/statuses/{FORK_HEAD}"),
        ]
    );
    let specs = launched(&h);
    assert_eq!(specs.len(), 1);
    assert_eq!(specs[0].kind, TaskKind::PrPlan);
    assert_eq!(
        specs[0].env,
        BTreeMap::from([
            ("LIVE_CI_BASE_REF".into(), "main".into()),
            ("LIVE_CI_COMMIT".into(), FORK_HEAD.into()),
            ("LIVE_CI_DELIVERY_ID".into(), "d-cmd".into()),
            ("LIVE_CI_HEAD_REF".into(), "patch-1".into()),
            ("LIVE_CI_PR_NUMBER".into(), "43".into()),
        ])
    );
}

#[tokio::test]
async fn a_plan_comment_without_write_permission_or_for_a_moved_head_plans_nothing() {
    // A member with read access only: the permission look-up refuses, the pull
    // request is not even fetched.
    let h = harness("none", "{}").await;
    fork_pull_request_43(&h.server, "read", FORK_HEAD).await;
    let r = h
        .receiver
        .handle(&signed(
            "issue_comment",
            "d-read",
            fixture("issue_comment_plan.json"),
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["ignored"],
        "\"octo-lead\" has read permission on the repository; \"/live-ci plan\" needs write"
    );
    assert_eq!(
        requests_summary(&h.server.received_requests().await.unwrap()),
        [
            "GET /user",
            "GET /repos/acme/infrastructure-live/collaborators/octo-lead/permission"
        ]
    );
    assert!(launched(&h).is_empty());

    // The maintainer pinned the reviewed commit; the author pushed since.
    let h = harness("none", "{}").await;
    fork_pull_request_43(
        &h.server,
        "admin",
        "0badc0ffee0000000000000000000000deadbeef",
    )
    .await;
    let mut body: Value = serde_json::from_slice(&fixture("issue_comment_plan.json")).unwrap();
    body["comment"]["body"] = format!("/live-ci plan {FORK_HEAD}").into();
    let r = h
        .receiver
        .handle(&signed(
            "issue_comment",
            "d-pinned",
            serde_json::to_vec(&body).unwrap(),
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body["ignored"]
            .as_str()
            .unwrap()
            .contains(&format!("not the reviewed {FORK_HEAD}")),
        "{}",
        r.body
    );
    assert!(launched(&h).is_empty());

    // A prefix of the head is no pin at all: the comment is no command.
    let h = harness("none", "{}").await;
    bot_is(&h.server, "live-ci-bot").await;
    body["comment"]["body"] = format!("/live-ci plan {}", &FORK_HEAD[..12]).into();
    let r = h
        .receiver
        .handle(&signed(
            "issue_comment",
            "d-prefix",
            serde_json::to_vec(&body).unwrap(),
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["ignored"],
        "the comment on pull request #43 does not start with a \"/live-ci plan\" line"
    );
    assert_eq!(
        requests_summary(&h.server.received_requests().await.unwrap()),
        ["GET /user"]
    );
    assert!(launched(&h).is_empty());
}

/// live-ci's own comment (its token has write access) is never a command:
/// the receiver learns its login once and ignores it before any permission
/// look-up; a failing look-up of who the bot is answers 500 (redelivered).
#[tokio::test]
async fn the_bots_own_comment_plans_nothing() {
    let h = harness("none", "{}").await;
    bot_is(&h.server, "live-ci-bot").await;
    let mut body: Value = serde_json::from_slice(&fixture("issue_comment_plan.json")).unwrap();
    body["comment"]["user"]["login"] = "live-ci-bot".into();
    for delivery in ["d-bot-1", "d-bot-2"] {
        let r = h
            .receiver
            .handle(&signed(
                "issue_comment",
                delivery,
                serde_json::to_vec(&body).unwrap(),
            ))
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(
            r.body["ignored"],
            "the comment on pull request #43 is live-ci's own (\"live-ci-bot\")"
        );
    }
    // one look-up for the warm container, nothing else
    assert_eq!(
        requests_summary(&h.server.received_requests().await.unwrap()),
        ["GET /user"]
    );
    assert!(launched(&h).is_empty());

    let h = harness("none", "{}").await;
    Mock::given(method("GET"))
        .and(path("/user"))
        .respond_with(
            ResponseTemplate::new(401).set_body_json(json!({"message": "Bad credentials"})),
        )
        .mount(&h.server)
        .await;
    let r = h
        .receiver
        .handle(&signed(
            "issue_comment",
            "d-who",
            fixture("issue_comment_plan.json"),
        ))
        .await;
    assert_eq!(r.status, 500, "{}", r.body);
    assert!(
        r.body["error"]
            .as_str()
            .unwrap()
            .contains("GET /user: github answered 401"),
        "{}",
        r.body
    );
    assert!(launched(&h).is_empty());
}

/// Captures the receiver's log lines for one test (current-thread runtime).
#[derive(Clone, Default)]
struct LogLines(std::sync::Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogLines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl LogLines {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[tokio::test]
async fn a_placeholder_or_short_secret_refuses_every_delivery_with_503_naming_the_parameter() {
    let logs = LogLines::default();
    let writer = logs.clone();
    let _guard = tracing::subscriber::set_default(
        tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish(),
    );
    for (value, why) in [
        ("unset", "it holds a placeholder, not a secret"),
        (
            "short-secret",
            "it is 12 bytes long; at least 32 are required",
        ),
    ] {
        let params = param_store("none", "{}");
        params.set("/live-ci/webhook-secret", value);
        let h = harness_with(params, handler_config()).await;
        no_other_github_calls(&h.server).await;
        let body = fixture("pull_request_opened.json");
        // Signed with the placeholder itself (what a forger would try), with
        // another key, and not at all: the same 503, never 200 or 401.
        let forged = sign(value.as_bytes(), &body);
        let other = sign(b"guess", &body);
        for sig in [Some(forged), Some(other), None] {
            let r = h
                .receiver
                .handle(&request("pull_request", "d-x", body.clone(), sig))
                .await;
            assert_eq!(r.status, 503, "{value}: {}", r.body);
            assert_eq!(
                r.body["error"],
                format!(
                    "webhook secret parameter \"/live-ci/webhook-secret\" is not usable: {why}"
                )
            );
        }
        assert!(launched(&h).is_empty());
    }
    let text = logs.text();
    assert!(
        text.contains("parameter=/live-ci/webhook-secret")
            && text.contains("the webhook secret is unusable"),
        "{text}"
    );
    assert!(
        !text.contains("short-secret"),
        "the log shows the secret: {text}"
    );
}

#[tokio::test]
async fn a_secret_set_in_ssm_after_the_cold_start_takes_effect_without_one() {
    let params = param_store("none", r#"{"PrPlan": false}"#);
    params.set("/live-ci/webhook-secret", "unset");
    let mut config = handler_config();
    config.secret_retry = Duration::from_millis(40);
    let h = harness_with(params, config).await;
    no_other_github_calls(&h.server).await;
    let body = fixture("ping.json");
    let r = h.receiver.handle(&signed("ping", "p1", body.clone())).await;
    assert_eq!(r.status, 503);
    // The operator sets the secret in SSM; an unusable secret is kept only for
    // the retry interval (10 s in AWS), so GitHub's redelivery after it passes.
    h.params.set("/live-ci/webhook-secret", SECRET);
    let r = h.receiver.handle(&signed("ping", "p2", body.clone())).await;
    assert_eq!(r.status, 503, "re-read before the retry interval");
    tokio::time::sleep(Duration::from_millis(60)).await;
    let r = h.receiver.handle(&signed("ping", "p3", body)).await;
    assert_eq!((r.status, r.body.clone()), (200, json!({"pong": true})));
    assert_eq!(secret_reads(&h.params), 2);
}

#[tokio::test]
async fn a_rotated_secret_is_read_again_on_a_signature_failure_at_most_every_ten_seconds() {
    let h = harness("none", "{}").await;
    no_other_github_calls(&h.server).await;
    let body = fixture("ping.json");
    assert_eq!(secret_reads(&h.params), 1);
    let r = h.receiver.handle(&signed("ping", "p1", body.clone())).await;
    assert_eq!(r.status, 200);
    assert_eq!(secret_reads(&h.params), 1, "warm: no SSM call");
    // Rotated in SSM (and on GitHub): the first delivery signed with the new
    // secret fails against the cached one, which is then read again.
    let rotated = "rotated-webhook-secret-0123456789abcdef";
    h.params.set("/live-ci/webhook-secret", rotated);
    let sig = sign(rotated.as_bytes(), &body);
    let r = h
        .receiver
        .handle(&request("ping", "p2", body.clone(), Some(sig)))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(secret_reads(&h.params), 2);
    // The old secret is refused now, and forged deliveries do not each cost an
    // SSM read.
    for i in 0..5 {
        let r = h
            .receiver
            .handle(&signed("ping", &format!("f{i}"), body.clone()))
            .await;
        assert_eq!(r.status, 401);
    }
    assert_eq!(secret_reads(&h.params), 2);
}

#[tokio::test]
async fn the_secret_is_read_again_after_its_ttl() {
    let mut config = handler_config();
    config.secret_ttl = Duration::from_millis(50);
    let h = harness_with(param_store("none", "{}"), config).await;
    no_other_github_calls(&h.server).await;
    let body = fixture("ping.json");
    // Signature failures re-read the secret: use one up so only the TTL is left.
    let r = h
        .receiver
        .handle(&request(
            "ping",
            "f0",
            body.clone(),
            Some(sign(b"x", &body)),
        ))
        .await;
    assert_eq!(r.status, 401);
    assert_eq!(secret_reads(&h.params), 2);
    // Revoked in SSM: within the TTL the cached secret still answers…
    h.params.set(
        "/live-ci/webhook-secret",
        "new-webhook-secret-0123456789abcdef",
    );
    assert_eq!(
        h.receiver
            .handle(&signed("ping", "p1", body.clone()))
            .await
            .status,
        200
    );
    // …after it, the old secret is refused without any signature failure
    // having triggered the read.
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert_eq!(
        h.receiver
            .handle(&signed("ping", "p2", body.clone()))
            .await
            .status,
        401
    );
    assert_eq!(secret_reads(&h.params), 3);
}

#[tokio::test]
async fn a_task_that_cannot_start_fails_its_status_linking_the_service_page() {
    let refusal = "AccessDeniedException: no capacity for task definition live-ci-pr-plan:3";
    for (fixture_name, sha, context, delivery) in [
        (
            "pull_request_opened.json",
            OPEN_HEAD,
            "live-ci: plan",
            "d-open-refused",
        ),
        (
            "pull_request_closed_merged.json",
            MERGE,
            "live-ci: create-deploy-stack",
            "d-merge-refused",
        ),
    ] {
        let h = harness_launching(
            param_store("none", "{}"),
            handler_config(),
            Launcher::refusing(refusal),
        )
        .await;
        files(&h.server, &["shared/us-east-1/network/vpc/main.tf"]).await;
        if context == "live-ci: plan" {
            expect_status(
                &h.server,
                sha,
                json!({"state": "success", "context": "Merge Lock", "description": "unlocked: free to merge"}),
            )
            .await;
        }
        expect_status(
            &h.server,
            sha,
            json!({
                "state": "failure", "context": context,
                "description": format!("the task could not be started: task launcher: {refusal}"),
                "target_url": live_ci_testkit::tasks::SERVICE_URL,
            }),
        )
        .await;
        let resp = h
            .receiver
            .handle(&signed("pull_request", delivery, fixture(fixture_name)))
            .await;
        assert!(
            resp.status >= 500,
            "a task that did not start fails the delivery, so a redelivery retries: {} {}",
            resp.status,
            resp.body
        );
        assert!(
            resp.body.to_string().contains("no capacity"),
            "the answer says why: {}",
            resp.body
        );
        assert!(launched(&h).is_empty());
    }
}

/// Votes from GitHub are routed but not counted yet: a vote comment on a
/// merged pull request starts nothing and asks GitHub for nothing beyond the
/// bot's own login, and says so in the response.
#[tokio::test]
async fn a_vote_comment_is_not_counted_and_starts_nothing() {
    let h = harness("none", "{}").await;
    bot_is(&h.server, "live-ci-bot").await;
    no_other_github_calls(&h.server).await;
    let r = h
        .receiver
        .handle(&signed(
            "issue_comment",
            "d-vote",
            fixture("issue_comment_vote.json"),
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["ignored"],
        "\"octo-lead\"'s vote on \"dev/app\" (pull request #43) is not counted: votes from GitHub are not enabled"
    );
    assert_eq!(
        requests_summary(&h.server.received_requests().await.unwrap()),
        ["GET /user"]
    );
    assert!(launched(&h).is_empty());
}

const APPROVAL_RESPONSE: &str =
    "arn:aws:lambda:us-west-2:111111111111:function:live-ci-approval-response";

/// [`harness`] with votes from GitHub enabled: handed to `invoker` as
/// approval_response.
async fn voting_harness(invoker: &Arc<RecordingInvoker>) -> Harness {
    let votes = Some((invoker.clone(), APPROVAL_RESPONSE.to_string()));
    harness_voting(
        param_store("none", "{}"),
        handler_config(),
        Launcher::with_logs(),
        votes,
    )
    .await
}

/// With votes from GitHub enabled, a vote comment on a merged pull request
/// is handed to approval_response with exactly where the comment is (the
/// repository, the pull request, the comment id) and nothing else: no
/// login, no body, no vote. The receiver starts nothing and asks GitHub for
/// nothing beyond its own login; a refused invoke fails the delivery (500)
/// so GitHub's redelivery tries again.
#[tokio::test]
async fn a_vote_comment_is_handed_to_approval_response_with_only_its_place() {
    let invoker = Arc::new(RecordingInvoker::default());
    let h = voting_harness(&invoker).await;
    bot_is(&h.server, "live-ci-bot").await;
    no_other_github_calls(&h.server).await;
    let receiver = &h.receiver;
    let r = receiver
        .handle(&signed(
            "issue_comment",
            "d-vote-on",
            fixture("issue_comment_vote.json"),
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["vote"], "handed to approval_response");
    let calls = invoker.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0, APPROVAL_RESPONSE);
    let payload: Value = serde_json::from_str(&calls[0].1).unwrap();
    assert_eq!(
        payload,
        json!({"github_vote": {
            "repository": "acme/infrastructure-live",
            "pull_request": 43,
            "comment_id": 2501234567u64,
        }})
    );
    assert_eq!(
        requests_summary(&h.server.received_requests().await.unwrap()),
        ["GET /user"]
    );
    assert!(h.launcher.started().is_empty());

    let refusing = Arc::new(RecordingInvoker {
        refuse: true,
        ..Default::default()
    });
    let h = voting_harness(&refusing).await;
    bot_is(&h.server, "live-ci-bot").await;
    let receiver = &h.receiver;
    let r = receiver
        .handle(&signed(
            "issue_comment",
            "d-vote-refused",
            fixture("issue_comment_vote.json"),
        ))
        .await;
    assert_eq!(r.status, 500, "{}", r.body);
}

/// A vote refused by routing (here: on a pull request that is not merged)
/// invokes nothing even with votes enabled.
#[tokio::test]
async fn a_refused_vote_command_invokes_nothing() {
    let invoker = Arc::new(RecordingInvoker::default());
    let h = voting_harness(&invoker).await;
    bot_is(&h.server, "live-ci-bot").await;
    let receiver = &h.receiver;
    let mut body: Value = serde_json::from_slice(&fixture("issue_comment_vote.json")).unwrap();
    body["issue"]["pull_request"]["merged_at"] = Value::Null;
    let r = receiver
        .handle(&signed(
            "issue_comment",
            "d-vote-open",
            serde_json::to_vec(&body).unwrap(),
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(invoker.calls.lock().unwrap().is_empty());
}
