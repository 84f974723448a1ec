//! The GitHub fake answers the project's own GitHub client the way GitHub
//! does, and keeps what it wrote.
#![allow(clippy::unwrap_used)]

use live_ci_core::status::{CommitStatus, StatusState};

use live_ci_core::port::{BranchHead, GitHost, merge_that_produced};
use live_ci_github::{AppCredentials, Credentials, GitHubClient, GitHubConfig, Job, RetryPolicy};
use live_ci_testkit::github::{FakeGitHub, FakePullRequest, MergedPull};

#[tokio::test]
async fn statuses_files_pull_requests_and_comments_round_trip() {
    let fake = FakeGitHub::start("acme/live").await;
    fake.add_pull_request(FakePullRequest {
        number: 42,
        head_sha: "abc".into(),
        base: "main".into(),
        files: vec!["dev/vpc/terragrunt.hcl".into()],
        open: true,
    });
    let client = GitHubClient::new(GitHubConfig {
        api_base: fake.url(),
        repository: "acme/live".into(),
        credentials: Credentials::Token("t".into()),
        job: Job::PrPlan,
        retry: RetryPolicy::default(),
    })
    .unwrap();

    let status = CommitStatus::new("abc", StatusState::Pending, "live-ci: x", "planning")
        .with_target_url("https://logs/1");
    client.set_status(&status).await.unwrap();
    let latest = fake.latest_statuses("abc");
    assert_eq!(latest["live-ci: x"].state, "pending");
    assert_eq!(
        latest["live-ci: x"].target_url.as_deref(),
        Some("https://logs/1")
    );

    assert_eq!(
        client.pull_request_files(42).await.unwrap(),
        ["dev/vpc/terragrunt.hcl"]
    );
    assert!(client.pull_request_files(7).await.is_err());
    let open = client.open_pull_requests("main").await.unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].head_sha, "abc");
    fake.close_pull_request(42);
    assert!(client.open_pull_requests("main").await.unwrap().is_empty());

    // someone else's comment carrying the marker is left alone
    let planted = fake.add_comment(42, "mallory", "<!-- m -->\n/live-ci plan");
    client
        .upsert_comment(42, "<!-- m -->", "one")
        .await
        .unwrap();
    client
        .upsert_comment(42, "<!-- m -->", "two")
        .await
        .unwrap();
    let comments = fake.comments(42);
    assert_eq!(comments.len(), 2, "updated, not duplicated");
    assert_eq!(
        (
            comments[0].id,
            comments[0].login.as_str(),
            comments[0].body.as_str()
        ),
        (planted, "mallory", "<!-- m -->\n/live-ci plan")
    );
    assert_eq!(comments[1].login, FakeGitHub::BOT_LOGIN);
    assert!(comments[1].body.ends_with("two"), "{comments:?}");

    // the merged pull request of a merge commit; none for a direct push
    let merge = "6dcb09b5b57875f334f61aebed695e2e4193db5e";
    fake.add_merged_pull_request(MergedPull {
        number: 42,
        merge_commit_sha: merge.into(),
        base_ref: "main".into(),
        base_sha: "b".into(),
        head_ref: "feature".into(),
        head_sha: "abc".into(),
    });
    let pulls = client.commit_pull_requests(merge).await.unwrap();
    assert_eq!(
        merge_that_produced(merge, &pulls).map(|p| p.number),
        Some(42)
    );
    let pushed = "1111111111111111111111111111111111111111";
    assert!(
        client
            .commit_pull_requests(pushed)
            .await
            .unwrap()
            .is_empty()
    );

    let requests = fake.requests().await;
    assert!(
        requests
            .iter()
            .all(|r| r.headers.get("authorization").is_some())
    );
}

/// A GitHub App's client gets its installation token from the fake, which
/// records the exchange; what it then writes carries that token.
#[tokio::test]
async fn a_github_app_gets_an_installation_token_and_uses_it() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("test-only-app-key.pem");
    let made = std::process::Command::new("openssl")
        .args(["genrsa", "-traditional", "-out"])
        .arg(&key)
        .arg("2048")
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let fake = FakeGitHub::start("acme/live").await;
    let client = GitHubClient::new(GitHubConfig {
        api_base: fake.url(),
        repository: "acme/live".into(),
        credentials: Credentials::App(AppCredentials {
            app_id: 12,
            installation_id: 34,
            private_key_pem: std::fs::read_to_string(&key).unwrap(),
        }),
        job: Job::TerraRun,
        retry: RetryPolicy::default(),
    })
    .unwrap();
    let status = CommitStatus::new("abc", StatusState::Success, "live-ci: x", "done");
    client.set_status(&status).await.unwrap();
    client.set_status(&status).await.unwrap();
    let tokens = fake.app_tokens();
    assert_eq!(tokens.len(), 1, "one exchange, then the cached token");
    assert_eq!(tokens[0].installation_id, "34");
    assert_eq!(
        tokens[0].request,
        serde_json::json!({
            "repositories": ["live"],
            "permissions": {"contents": "read", "statuses": "write"},
        })
    );
    let bearers: Vec<String> = fake
        .requests()
        .await
        .iter()
        .filter(|r| r.url.path().starts_with("/repos/"))
        .map(|r| r.headers["authorization"].to_str().unwrap().to_owned())
        .collect();
    assert_eq!(bearers, vec![format!("Bearer {}", tokens[0].token); 2]);
    assert_eq!(fake.statuses().len(), 2);
}
