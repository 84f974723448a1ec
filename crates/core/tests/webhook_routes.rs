//! Routing of GitHub's deliveries, over the stored payload fixtures.
#![allow(clippy::unwrap_used)] // test set-up panics by design

use live_ci_core::webhook::{Route, WebhookError, route, sign, verify_signature};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../../tests/fixtures/github/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

const REPO: Option<&str> = Some("acme/infrastructure-live");

#[test]
fn opened_and_synchronize_plan_the_head_commit() {
    let r = route(
        "pull_request",
        &fixture("pull_request_opened.json"),
        "main",
        REPO,
    )
    .unwrap();
    assert_eq!(
        r,
        Route::PlanPullRequest {
            number: 42,
            head_sha: "16b7537a0e4f8c2d9b3a61e5f70c48d2a9be31c4".into(),
            head_ref: "feature/bigger-vpc".into(),
            base_ref: "main".into(),
            html_url: "https://github.com/acme/infrastructure-live/pull/42".into(),
        }
    );
    // a new push plans the new head commit, not the old one
    let r = route(
        "pull_request",
        &fixture("pull_request_synchronize.json"),
        "main",
        REPO,
    )
    .unwrap();
    let Route::PlanPullRequest { head_sha, .. } = r else {
        panic!("{r:?}")
    };
    assert_eq!(head_sha, "9c2f41e88a07d3b6e15c0f2a7d94b83e6c1f05d2");
}

#[test]
fn merged_pull_request_deploys_the_merge_commit() {
    let r = route(
        "pull_request",
        &fixture("pull_request_closed_merged.json"),
        "main",
        REPO,
    )
    .unwrap();
    assert_eq!(
        r,
        Route::DeployMerge {
            number: 42,
            merge_commit_sha: "6cb93bbc4422b29f88bf7c85311e1b0657191c39".into(),
            base_ref: "main".into(),
            base_sha: "1e7bc7d6f5b4a39281706f2c4b1ea9d3c8e05a17".into(),
            head_ref: "feature/bigger-vpc".into(),
            head_sha: "9c2f41e88a07d3b6e15c0f2a7d94b83e6c1f05d2".into(),
            html_url: "https://github.com/acme/infrastructure-live/pull/42".into(),
        }
    );
}

#[test]
fn everything_else_is_ignored_with_a_reason() {
    let ignored =
        |event: &str, file: &str, trunk: &str| match route(event, &fixture(file), trunk, REPO)
            .unwrap()
        {
            Route::Ignore(reason) => reason,
            other => panic!("{file}: {other:?}"),
        };
    assert_eq!(
        ignored("pull_request", "pull_request_closed_unmerged.json", "main"),
        "pull request #42 was closed without merging"
    );
    assert_eq!(
        ignored("pull_request", "pull_request_other_base.json", "main"),
        "pull request #42 targets \"release/2026-q4\", not the trunk \"main\""
    );
    assert!(ignored("pull_request", "pull_request_draft.json", "main").contains("draft"));
    assert_eq!(
        ignored("push", "push.json", "main"),
        "event \"push\" is not handled"
    );
    // the trunk is configurable
    assert!(
        ignored("pull_request", "pull_request_opened.json", "master")
            .contains("not the trunk \"master\"")
    );
    assert_eq!(
        route("ping", &fixture("ping.json"), "main", REPO).unwrap(),
        Route::Ping
    );
    let other_repo = route(
        "pull_request",
        &fixture("pull_request_opened.json"),
        "main",
        Some("acme/other"),
    )
    .unwrap();
    assert!(matches!(other_repo, Route::Ignore(r) if r.contains("\"acme/infrastructure-live\"")));
}

#[test]
fn malformed_payloads_are_errors() {
    let err = route("pull_request", b"{\"action\": \"opened\"}", "main", REPO).unwrap_err();
    assert!(matches!(err, WebhookError::MalformedPayload { .. }));
    assert!(err.to_string().contains("missing field"), "{err}");
    let mut merged: serde_json::Value =
        serde_json::from_slice(&fixture("pull_request_closed_merged.json")).unwrap();
    merged["pull_request"]["merge_commit_sha"] = serde_json::Value::Null;
    let err = route(
        "pull_request",
        &serde_json::to_vec(&merged).unwrap(),
        "main",
        REPO,
    )
    .unwrap_err();
    assert!(err.to_string().contains("no merge_commit_sha"), "{err}");
}

#[test]
fn fixture_signatures_round_trip() {
    let body = fixture("pull_request_synchronize.json");
    let header = sign(b"webhook-secret", &body);
    assert_eq!(
        verify_signature(b"webhook-secret", &body, Some(&header)),
        Ok(())
    );
}
