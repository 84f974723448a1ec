//! Which of the receiver's commit statuses may fail a delivery: the `Merge
//! Lock` status is the protection and must; the pending `live-ci: plan` and
//! `live-ci: create-deploy-stack` statuses are advisory and switchable. GitHub's
//! REST API is wiremock with the exact requests asserted; GitHub refuses a
//! status with its real "Validation Failed" 422 answer.
#![allow(clippy::unwrap_used)] // test set-up panics by design

use live_ci_core::task::TaskKind;
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::receiver::{
    FORK_HEAD, MERGE, OPEN_HEAD, expect_status, files, fixture, harness, launched,
    no_other_github_calls, requests_summary, signed,
};

/// GitHub refuses the status of `context` on `sha`, once per delivery
/// (a 422 is not retried), `times` times in all.
async fn refuse_status(server: &MockServer, sha: &str, context: &str, times: u64) {
    Mock::given(method("POST"))
        .and(path(format!(
            "/repos/acme/infrastructure-live/statuses/{sha}"
        )))
        .and(body_partial_json(json!({"context": context})))
        .respond_with(ResponseTemplate::new(422).set_body_json(json!({
            "message": "Validation Failed",
            "errors": [{"resource": "Status", "code": "custom",
                        "message": "This SHA and context has reached the maximum number of statuses."}],
            "documentation_url": "https://docs.github.com/rest/commits/statuses#create-a-commit-status"
        })))
        .expect(times)
        .mount(server)
        .await;
}

fn warnings(body: &Value) -> Vec<String> {
    body["warnings"]
        .as_array()
        .map(|w| w.iter().map(|s| s.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_refused_pending_status_is_a_warning_and_the_task_still_starts() {
    let h = harness("none", "{}").await;
    files(&h.server, &["dev/us-east-1/worker/terragrunt.hcl"]).await;
    expect_status(
        &h.server,
        OPEN_HEAD,
        json!({"state": "success", "context": "Merge Lock", "description": "unlocked: free to merge"}),
    )
    .await;
    refuse_status(&h.server, OPEN_HEAD, "live-ci: plan", 1).await;
    refuse_status(&h.server, MERGE, "live-ci: create-deploy-stack", 1).await;
    no_other_github_calls(&h.server).await;

    let plan = h
        .receiver
        .handle(&signed(
            "pull_request",
            "d-open",
            fixture("pull_request_opened.json"),
        ))
        .await;
    assert_eq!(plan.status, 200, "{}", plan.body);
    assert_eq!(plan.body["started"], "pr-plan");
    let w = warnings(&plan.body);
    assert_eq!(w.len(), 1, "{}", plan.body);
    assert!(
        w[0].starts_with("status \"live-ci: plan\": ") && w[0].contains("422"),
        "{w:?}"
    );

    let deploy = h
        .receiver
        .handle(&signed(
            "pull_request",
            "d-merge",
            fixture("pull_request_closed_merged.json"),
        ))
        .await;
    assert_eq!(deploy.status, 200, "{}", deploy.body);
    assert_eq!(deploy.body["started"], "create-deploy-stack");
    let w = warnings(&deploy.body);
    assert_eq!(w.len(), 1, "{}", deploy.body);
    assert!(
        w[0].starts_with("status \"live-ci: create-deploy-stack\": "),
        "{w:?}"
    );

    let kinds: Vec<TaskKind> = launched(&h).iter().map(|s| s.kind).collect();
    assert_eq!(kinds, [TaskKind::PrPlan, TaskKind::CreateDeployStack]);
    h.server.verify().await;
}

#[tokio::test]
async fn a_refused_not_planned_status_is_a_warning_too() {
    let h = harness("none", "{}").await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/infrastructure-live/pulls/43/files"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!([{"filename": "dev/us-east-1/artifacts/terragrunt.hcl"}])),
        )
        .mount(&h.server)
        .await;
    expect_status(
        &h.server,
        FORK_HEAD,
        json!({"state": "success", "context": "Merge Lock", "description": "unlocked: free to merge"}),
    )
    .await;
    refuse_status(&h.server, FORK_HEAD, "live-ci: plan", 1).await;
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
    assert!(r.body["not_planned"].is_string(), "{}", r.body);
    assert_eq!(warnings(&r.body).len(), 1, "{}", r.body);
    assert!(launched(&h).is_empty());
    h.server.verify().await;
}

#[tokio::test]
async fn a_refused_merge_lock_status_fails_the_delivery_and_starts_nothing() {
    let h = harness("7", "{}").await;
    files(&h.server, &["dev/us-east-1/worker/terragrunt.hcl"]).await;
    Mock::given(method("POST"))
        .and(path(format!(
            "/repos/acme/infrastructure-live/statuses/{OPEN_HEAD}"
        )))
        .and(body_partial_json(json!({"context": "Merge Lock"})))
        .respond_with(ResponseTemplate::new(422).set_body_json(json!({
            "message": "Validation Failed",
            "documentation_url": "https://docs.github.com/rest/commits/statuses#create-a-commit-status"
        })))
        .up_to_n_times(1)
        .expect(1)
        .mount(&h.server)
        .await;
    let req = signed(
        "pull_request",
        "d-lock",
        fixture("pull_request_opened.json"),
    );
    let r = h.receiver.handle(&req).await;
    assert_eq!(r.status, 500, "{}", r.body);
    let error = r.body["error"].as_str().unwrap();
    assert!(error.contains("github") && error.contains("422"), "{error}");
    assert!(
        launched(&h).is_empty(),
        "a task started without the lock shown"
    );
    let posted: Vec<String> = requests_summary(&h.server.received_requests().await.unwrap())
        .into_iter()
        .filter(|r| r.starts_with("POST"))
        .collect();
    assert_eq!(posted.len(), 1, "only the lock was tried: {posted:?}");

    // GitHub's redelivery (same delivery id) posts the lock and plans.
    expect_status(
        &h.server,
        OPEN_HEAD,
        json!({"state": "pending", "context": "Merge Lock",
               "description": "locked by PR #7 while it deploys; merge after it finishes"}),
    )
    .await;
    expect_status(
        &h.server,
        OPEN_HEAD,
        json!({"state": "pending", "context": "live-ci: plan",
               "description": "planning the affected units", "target_url": "https://logs.example.com/t1"}),
    )
    .await;
    let again = h.receiver.handle(&req).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(launched(&h).len(), 1);
    h.server.verify().await;
}

#[tokio::test]
async fn a_refused_not_applicable_lock_status_fails_the_delivery() {
    let h = harness("none", "{}").await;
    files(&h.server, &["README.md"]).await;
    Mock::given(method("POST"))
        .and(path(format!(
            "/repos/acme/infrastructure-live/statuses/{OPEN_HEAD}"
        )))
        .and(body_partial_json(json!({
            "state": "success", "context": "Merge Lock",
            "description": "no infrastructure file changed: not locked"
        })))
        .respond_with(
            ResponseTemplate::new(422).set_body_json(json!({"message": "Validation Failed"})),
        )
        .expect(1)
        .mount(&h.server)
        .await;
    no_other_github_calls(&h.server).await;
    let r = h
        .receiver
        .handle(&signed(
            "pull_request",
            "d-readme",
            fixture("pull_request_opened.json"),
        ))
        .await;
    assert_eq!(r.status, 500, "{}", r.body);
    assert!(launched(&h).is_empty());
    h.server.verify().await;
}

#[tokio::test]
async fn a_switched_off_check_posts_nothing() {
    let h = harness("none", r#"{"PrPlan": false, "CreateDeployStack": false}"#).await;
    files(&h.server, &["dev/us-east-1/worker/terragrunt.hcl"]).await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/infrastructure-live/pulls/43/files"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!([{"filename": "dev/us-east-1/artifacts/terragrunt.hcl"}])),
        )
        .mount(&h.server)
        .await;
    // The lock is always posted: on the trusted head and on the fork's head.
    for sha in [OPEN_HEAD, FORK_HEAD] {
        expect_status(
            &h.server,
            sha,
            json!({"state": "success", "context": "Merge Lock", "description": "unlocked: free to merge"}),
        )
        .await;
    }
    no_other_github_calls(&h.server).await;
    for (delivery, payload, answer) in [
        ("d-open", "pull_request_opened.json", "started"),
        ("d-fork", "pull_request_opened_fork.json", "not_planned"),
        ("d-merge", "pull_request_closed_merged.json", "started"),
    ] {
        let r = h
            .receiver
            .handle(&signed("pull_request", delivery, fixture(payload)))
            .await;
        assert_eq!(r.status, 200, "{delivery}: {}", r.body);
        assert!(r.body[answer].is_string(), "{delivery}: {}", r.body);
        assert!(r.body.get("warnings").is_none(), "{delivery}: {}", r.body);
    }
    let posted: Vec<String> = requests_summary(&h.server.received_requests().await.unwrap())
        .into_iter()
        .filter(|r| r.starts_with("POST"))
        .collect();
    assert_eq!(
        posted,
        [
            format!("POST /repos/acme/infrastructure-live/statuses/{OPEN_HEAD}"),
            format!("POST /repos/acme/infrastructure-live/statuses/{FORK_HEAD}"),
        ]
    );
    assert_eq!(
        launched(&h).len(),
        2,
        "the pr-plan and create-deploy-stack tasks"
    );
    h.server.verify().await;
}
