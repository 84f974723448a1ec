//! The receiver's Merge Lock answer against a real PostgreSQL metadb
//! (scripts/pg.sh): a "locked" parameter that the metadb's lock row does not
//! back (a mirror write lost after the run finished) is answered "unlocked" at
//! once, not after the next sweep; a lock the row holds stays locked. GitHub is
//! wiremock with the exact statuses asserted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use live_ci_testkit::pg as support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use live_ci_core::port::RunStore;
use live_ci_core::webhook::{FilePattern, TrustPolicy, sign};
use live_ci_github::{Credentials, GitHubClient, GitHubConfig, Job, RetryPolicy};
use live_ci_metadb::PgMetadb;
use live_ci_receiver::{
    HandlerConfig, MetadbLock, Receiver, SECRET_RETRY, SECRET_TTL, WebhookRequest,
};
use live_ci_testkit::params::MemoryParams as Params;
use live_ci_testkit::tasks::RecordingLauncher as Launcher;
use serde_json::{Value, json};
use support::{TestDb, exec, run};

use crate::ports::Fakes;
use wiremock::matchers::{body_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const SECRET: &str = "test-webhook-secret-0123456789abcdef";
const SYNC_HEAD: &str = "9c2f41e88a07d3b6e15c0f2a7d94b83e6c1f05d2";
const LOCK: &str = "/live-ci/merge-lock";

type Checked = Receiver<Fakes<Params, MetadbLock<PgMetadb>>>;

/// A receiver whose lock parameter says `mirrored`, checked against `metadb`.
async fn receiver(server: &MockServer, mirrored: &str, metadb: PgMetadb) -> Checked {
    let params = Params::with([
        ("/live-ci/webhook-secret", SECRET),
        (LOCK, mirrored),
        ("/live-ci/commit-status-config", r#"{"PrPlan": false}"#),
    ]);
    let github = GitHubClient::new(GitHubConfig {
        api_base: server.uri(),
        repository: "acme/infrastructure-live".into(),
        credentials: Credentials::Token("ghs_token".into()),
        job: Job::Receiver,
        retry: RetryPolicy {
            max_attempts: 1,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(1),
        },
    })
    .unwrap();
    let config = HandlerConfig {
        repository: "acme/infrastructure-live".into(),
        trunk_branch: "main".into(),
        file_pattern: FilePattern::new(FilePattern::DEFAULT).unwrap(),
        webhook_secret_param: "/live-ci/webhook-secret".into(),
        merge_lock_param: LOCK.into(),
        commit_status_config_param: "/live-ci/commit-status-config".into(),
        max_body_bytes: 64 * 1024,
        trust: TrustPolicy::default(),
        secret_ttl: SECRET_TTL,
        secret_retry: SECRET_RETRY,
    };
    let ports = Fakes {
        params: Arc::new(params),
        github,
        launcher: Arc::new(Launcher::default()),
        lock: Some(MetadbLock(metadb)),
        deliveries: None,
        votes: None,
    };
    Receiver::new(config, ports).await.unwrap()
}

/// The synchronize fixture's pull request #42 touches a unit; its head gets
/// exactly one Merge Lock status: `expected`.
async fn expect_lock_status(server: &MockServer, expected: Value) {
    Mock::given(method("GET"))
        .and(path("/repos/acme/infrastructure-live/pulls/42/files"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!([{"filename": "dev/us-east-1/worker/terragrunt.hcl", "status": "modified"}]),
        ))
        .mount(server)
        .await;
    Mock::given(method("POST"))
        .and(path(format!(
            "/repos/acme/infrastructure-live/statuses/{SYNC_HEAD}"
        )))
        .and(body_json(expected))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({})))
        .expect(1)
        .mount(server)
        .await;
}

fn synchronize(delivery: &str) -> WebhookRequest {
    let body = std::fs::read(format!(
        "{}/../../tests/fixtures/github/pull_request_synchronize.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let sig = sign(SECRET.as_bytes(), &body);
    WebhookRequest {
        method: "POST".into(),
        headers: BTreeMap::from([
            ("x-github-event".to_string(), "pull_request".to_string()),
            ("x-github-delivery".to_string(), delivery.to_string()),
            ("x-hub-signature-256".to_string(), sig),
        ]),
        body,
    }
}

#[tokio::test]
async fn a_stale_locked_parameter_is_answered_unlocked_when_no_run_is_running() {
    let t = TestDb::new().await;
    let server = MockServer::start().await;
    // Run #1 finished and freed the row; the parameter write that followed was lost.
    let r = receiver(&server, "7", t.metadb(2).await).await;
    assert_eq!(r_lock(&t).await, None);
    expect_lock_status(
        &server,
        json!({"state": "success", "context": "Merge Lock", "description": "unlocked: free to merge"}),
    )
    .await;
    let resp = r.handle(&synchronize("d-stale")).await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.body["merge_lock"], "none");
    server.verify().await;
    t.drop_db().await;
}

#[tokio::test]
async fn a_lock_the_metadb_holds_stays_locked_by_its_pull_request() {
    let t = TestDb::new().await;
    let server = MockServer::start().await;
    let metadb = t.metadb(2).await;
    let mut deploy = run("c9", 4, vec![exec("c9-a", "dev", &[])]);
    deploy.pr_id = 9;
    assert!(metadb.create_run(&deploy).await.unwrap().started);
    // The parameter lags behind the hand-over to PR #9's run.
    let r = receiver(&server, "7", metadb).await;
    expect_lock_status(
        &server,
        json!({"state": "pending", "context": "Merge Lock",
               "description": "locked by PR #9 while it deploys; merge after it finishes"}),
    )
    .await;
    let resp = r.handle(&synchronize("d-held")).await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.body["merge_lock"], "9");
    server.verify().await;
    t.drop_db().await;
}

async fn r_lock(t: &TestDb) -> Option<i64> {
    PgMetadb::connect(&t.url, 1)
        .unwrap()
        .merge_lock()
        .await
        .unwrap()
        .run_id
}
