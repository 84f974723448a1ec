//! Delivery ids de-duplicated across containers (issue 27, item 6): two
//! receivers (two containers' handlers) over one real PostgreSQL metadb
//! (scripts/pg.sh). Given the same `X-GitHub-Delivery`, one acts and the other
//! answers 200 "duplicate" and changes nothing — no GitHub call, no task —
//! whether they come one after the other or at once; a delivery that failed is
//! released, so GitHub's redelivery to another container is acted on. GitHub
//! is wiremock with every call asserted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use live_ci_testkit::pg as support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use live_ci_core::webhook::{FilePattern, TrustPolicy, sign};
use live_ci_github::{Credentials, GitHubClient, GitHubConfig, Job, RetryPolicy};
use live_ci_metadb::PgMetadb;
use live_ci_receiver::{
    HandlerConfig, MetadbDeliveries, NoLockCheck, Receiver, SECRET_RETRY, SECRET_TTL,
    WebhookRequest,
};
use live_ci_testkit::params::MemoryParams as Params;
use live_ci_testkit::tasks::RecordingLauncher as Launcher;
use serde_json::json;
use support::TestDb;

use crate::ports::Fakes;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const SECRET: &str = "test-webhook-secret-0123456789abcdef";
const MERGE: &str = "6cb93bbc4422b29f88bf7c85311e1b0657191c39";

/// One container: its receiver, and a handle to the tasks it started.
pub(crate) struct Container<M = PgMetadb> {
    pub(crate) receiver: Receiver<Fakes<Params, NoLockCheck, MetadbDeliveries<M>>>,
    pub(crate) launcher: Arc<Launcher>,
}

impl<M: live_ci_core::port::DeliveryLog> Container<M> {
    pub(crate) async fn handle(&self, req: &WebhookRequest) -> live_ci_receiver::WebhookResponse {
        self.receiver.handle(req).await
    }
}

/// One container's receiver: its own parameter cache, launcher and
/// in-container memory; the metadb and GitHub are shared.
async fn container(server: &MockServer, metadb: PgMetadb) -> Container {
    container_on(server, metadb).await
}

/// [`container`] on any metadb (the Data API's too: `aurora.rs`).
pub(crate) async fn container_on<M: live_ci_core::port::DeliveryLog>(
    server: &MockServer,
    metadb: M,
) -> Container<M> {
    let params = Params::with([
        ("/live-ci/webhook-secret", SECRET),
        ("/live-ci/merge-lock", "none"),
        (
            "/live-ci/commit-status-config",
            r#"{"CreateDeployStack": false}"#,
        ),
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
        merge_lock_param: "/live-ci/merge-lock".into(),
        commit_status_config_param: "/live-ci/commit-status-config".into(),
        max_body_bytes: 64 * 1024,
        trust: TrustPolicy::default(),
        secret_ttl: SECRET_TTL,
        secret_retry: SECRET_RETRY,
    };
    let launcher = Arc::new(Launcher::with_logs());
    let ports = Fakes {
        params: Arc::new(params),
        github,
        launcher: launcher.clone(),
        lock: None,
        deliveries: Some(MetadbDeliveries(metadb)),
        votes: None,
    };
    let receiver = Receiver::new(config, ports).await.unwrap();
    Container { receiver, launcher }
}

pub(crate) fn merged(delivery: &str) -> WebhookRequest {
    let body = std::fs::read(format!(
        "{}/../../tests/fixtures/github/pull_request_closed_merged.json",
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

/// The one files read the acting receiver makes; anything else fails the
/// request (599) and shows in the answer.
pub(crate) async fn github_expects_one_merge_deploy(server: &MockServer) {
    Mock::given(method("GET"))
        .and(path("/repos/acme/infrastructure-live/pulls/42/files"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!([{"filename": "dev/us-east-1/worker/terragrunt.hcl", "status": "modified"}]),
        ))
        .expect(1)
        .mount(server)
        .await;
    Mock::given(wiremock::matchers::any())
        .respond_with(ResponseTemplate::new(599))
        .expect(0)
        .mount(server)
        .await;
}

fn started(r: &Container) -> usize {
    r.launcher.started().len()
}

#[tokio::test]
async fn a_redelivery_to_another_container_is_a_duplicate_and_changes_nothing() {
    let t = TestDb::new().await;
    let server = MockServer::start().await;
    github_expects_one_merge_deploy(&server).await;
    let a = container(&server, t.metadb(1).await).await;
    let b = container(&server, t.metadb(1).await).await;

    let first = a.handle(&merged("d-cross")).await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(
        first.body["started"], "create-deploy-stack",
        "{}",
        first.body
    );
    assert_eq!(started(&a), 1);

    let again = b.handle(&merged("d-cross")).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.body["duplicate"], true, "{}", again.body);
    assert_eq!(
        again.body["ignored"],
        "delivery \"d-cross\" was already handled"
    );
    assert_eq!(started(&b), 0, "the second container started a task");
    // The exact GitHub calls (one files read) are verified when `server` drops.
    let spec = &a.launcher.started()[0];
    assert_eq!(spec.env["LIVE_CI_COMMIT"], MERGE);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_delivery_to_two_containers_at_once_is_acted_on_once() {
    let t = TestDb::new().await;
    let server = MockServer::start().await;
    github_expects_one_merge_deploy(&server).await;
    let a = container(&server, t.metadb(1).await).await;
    let b = container(&server, t.metadb(1).await).await;
    let req = merged("d-race");
    let (ra, rb) = tokio::join!(a.handle(&req), b.handle(&req));
    assert_eq!(
        (ra.status, rb.status),
        (200, 200),
        "{} {}",
        ra.body,
        rb.body
    );
    assert_eq!(started(&a) + started(&b), 1, "{} {}", ra.body, rb.body);
    let duplicates = [&ra, &rb]
        .iter()
        .filter(|r| r.body["duplicate"] == true)
        .count();
    assert_eq!(duplicates, 1, "{} {}", ra.body, rb.body);
}

#[tokio::test]
async fn a_failed_delivery_is_released_and_its_redelivery_to_another_container_acts() {
    let t = TestDb::new().await;
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/infrastructure-live/pulls/42/files"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    let a = container(&server, t.metadb(1).await).await;
    let b = container(&server, t.metadb(1).await).await;
    let failed = a.handle(&merged("d-failed")).await;
    assert_eq!(failed.status, 500, "{}", failed.body);
    assert_eq!(started(&a), 0);

    github_expects_one_merge_deploy(&server).await;
    let redelivered = b.handle(&merged("d-failed")).await;
    assert_eq!(redelivered.status, 200, "{}", redelivered.body);
    assert_eq!(redelivered.body["started"], "create-deploy-stack");
    assert_eq!(started(&b), 1);
    // And once handled, the first container refuses it too.
    let third = a.handle(&merged("d-failed")).await;
    assert_eq!(third.body["duplicate"], true, "{}", third.body);
    assert_eq!(started(&a), 0);
}
