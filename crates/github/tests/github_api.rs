//! The GitHub adapter against a local HTTP mock of the REST API, asserting the
//! exact requests it makes.
#![allow(clippy::unwrap_used)] // test set-up panics by design

use std::time::Duration;

use live_ci_core::status::{CommitStatus, PullRequest, StatusState};

use live_ci_core::port::{BranchHead, CommitPullRequest};

use live_ci_core::port::GitHost;
use live_ci_core::port::PullRequestAuthority;
use live_ci_core::webhook::{PullRequestHead, RepoPermission};
use live_ci_github::{Credentials, GitHubClient, GitHubConfig, GitHubError, Job, RetryPolicy};
use serde_json::{Value, json};
use wiremock::matchers::{body_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

/// pr-plan's client: its permissions cover every call but a collaborator's
/// permission (the receiver's).
fn client(server: &MockServer, prefix: &str) -> GitHubClient {
    client_for(server, prefix, Job::PrPlan)
}

fn client_for(server: &MockServer, prefix: &str, job: Job) -> GitHubClient {
    GitHubClient::new(GitHubConfig {
        api_base: format!("{}{prefix}", server.uri()),
        repository: "acme/live".into(),
        credentials: Credentials::Token("ghs_secret".into()),
        job,
        retry: RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_secs(2),
        },
    })
    .unwrap()
}

#[tokio::test]
async fn commit_status_is_one_exact_post_on_enterprise_base() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/v3/repos/acme/live/statuses/abc123"))
        .and(header("authorization", "Bearer ghs_secret"))
        .and(header("accept", "application/vnd.github+json"))
        .and(header("x-github-api-version", "2022-11-28"))
        .and(body_json(json!({
            "state": "pending",
            "context": "live-ci/merge-lock",
            "description": "locked by PR #7",
            "target_url": "https://logs.example.com/stream"
        })))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({"id": 1})))
        .expect(1)
        .mount(&server)
        .await;
    let status = CommitStatus::new(
        "abc123",
        StatusState::Pending,
        "live-ci/merge-lock",
        "locked by PR #7",
    )
    .with_target_url("https://logs.example.com/stream");
    client(&server, "/api/v3/")
        .set_status(&status)
        .await
        .unwrap();
}

#[tokio::test]
async fn server_errors_and_secondary_rate_limits_are_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/repos/acme/live/statuses/s1"))
        .respond_with(ResponseTemplate::new(502))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/repos/acme/live/statuses/s1"))
        .respond_with(
            ResponseTemplate::new(403)
                .insert_header("retry-after", "0")
                .set_body_json(json!({"message": "You have exceeded a secondary rate limit"})),
        )
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/repos/acme/live/statuses/s1"))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({})))
        .expect(1)
        .mount(&server)
        .await;
    let s = CommitStatus::new("s1", StatusState::Success, "c", "ok");
    client(&server, "").set_status(&s).await.unwrap();
}

#[tokio::test]
async fn persistent_failures_give_up_and_client_errors_are_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/repos/acme/live/statuses/s2"))
        .respond_with(ResponseTemplate::new(503))
        .expect(3) // max_attempts
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/repos/acme/live/statuses/s3"))
        .respond_with(
            ResponseTemplate::new(422)
                .set_body_json(json!({"message": "No commit found for SHA: s3"})),
        )
        .expect(1)
        .mount(&server)
        .await;
    let c = client(&server, "");
    let err = c
        .set_status(&CommitStatus::new("s2", StatusState::Error, "c", "x"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, GitHubError::Status { status: 503, .. }),
        "{err}"
    );
    let err = c
        .set_status(&CommitStatus::new("s3", StatusState::Error, "c", "x"))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "POST /repos/acme/live/statuses/s3: github answered 422: No commit found for SHA: s3"
    );
}

#[tokio::test]
async fn changed_files_follow_every_page_including_renames() {
    let server = MockServer::start().await;
    let page = |n: usize, files: &[&str]| -> Value {
        Value::Array(
            files
                .iter()
                .map(|f| json!({"filename": f, "status": "modified", "sha": format!("{n}")}))
                .collect(),
        )
    };
    let base = server.uri();
    Mock::given(method("GET"))
        .and(path("/repos/acme/live/pulls/9/files"))
        .and(query_param("per_page", "100"))
        .and(|r: &Request| !r.url.query().unwrap_or("").contains("page=2") && !r.url.query().unwrap_or("").contains("page=3"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header(
                    "link",
                    format!(
                        "<{base}/repos/acme/live/pulls/9/files?per_page=100&page=2>; rel=\"next\", <{base}/repos/acme/live/pulls/9/files?per_page=100&page=3>; rel=\"last\""
                    ),
                )
                .set_body_json(page(1, &["a/terragrunt.hcl", "b/main.tf"])),
        )
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/live/pulls/9/files"))
        .and(query_param("page", "2"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header(
                    "link",
                    format!("<{base}/repos/acme/live/pulls/9/files?per_page=100&page=3>; rel=\"next\""),
                )
                .set_body_json(json!([{"filename": "c/new.hcl", "previous_filename": "c/old.hcl", "status": "renamed"}])),
        )
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/live/pulls/9/files"))
        .and(query_param("page", "3"))
        .respond_with(ResponseTemplate::new(200).set_body_json(page(3, &["z.yaml"])))
        .expect(1)
        .mount(&server)
        .await;
    let files = client(&server, "").pull_request_files(9).await.unwrap();
    assert_eq!(
        files,
        [
            "a/terragrunt.hcl",
            "b/main.tf",
            "c/new.hcl",
            "c/old.hcl",
            "z.yaml"
        ]
    );
}

#[tokio::test]
async fn pagination_never_follows_a_link_to_another_host() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/live/pulls/1/files"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header(
                    "link",
                    "<https://evil.example.com/steal?page=2>; rel=\"next\"",
                )
                .set_body_json(json!([{"filename": "x.tf"}])),
        )
        .expect(1)
        .mount(&server)
        .await;
    assert_eq!(
        client(&server, "").pull_request_files(1).await.unwrap(),
        ["x.tf"]
    );
}

#[tokio::test]
async fn open_pull_requests_against_the_trunk() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/live/pulls"))
        .and(query_param("state", "open"))
        .and(query_param("base", "release/2026"))
        .and(query_param("per_page", "100"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([
            {"number": 4, "head": {"sha": "h4", "ref": "feat"}, "base": {"sha": "b", "ref": "release/2026"}, "title": "x"},
            {"number": 5, "head": {"sha": "h5", "ref": "fix"}, "base": {"sha": "b", "ref": "release/2026"}}
        ])))
        .expect(1)
        .mount(&server)
        .await;
    let prs = client(&server, "")
        .open_pull_requests("release/2026")
        .await
        .unwrap();
    assert_eq!(
        prs,
        [
            PullRequest {
                number: 4,
                head_sha: "h4".into(),
                base_ref: "release/2026".into()
            },
            PullRequest {
                number: 5,
                head_sha: "h5".into(),
                base_ref: "release/2026".into()
            },
        ]
    );
}

/// `GET /user` answering `login`, expected `times` times.
async fn whoami(server: &MockServer, login: &str, times: u64) {
    Mock::given(method("GET"))
        .and(path("/user"))
        .and(header("authorization", "Bearer ghs_secret"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"login": login, "id": 1, "type": "User"})),
        )
        .expect(times)
        .mount(server)
        .await;
}

#[tokio::test]
async fn plan_comment_is_created_once_then_updated_in_place() {
    let marker = "<!-- live-ci:plan -->";
    // First push: no comment carries the marker yet → one POST.
    let server = MockServer::start().await;
    whoami(&server, "live-ci-bot", 1).await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/live/issues/3/comments"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!([{"id": 10, "body": "lgtm", "user": {"login": "octo-lead"}}])),
        )
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/repos/acme/live/issues/3/comments"))
        .and(body_json(
            json!({"body": format!("{marker}\n| unit | add |")}),
        ))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({"id": 11})))
        .expect(1)
        .mount(&server)
        .await;
    client(&server, "")
        .upsert_comment(3, marker, "| unit | add |")
        .await
        .unwrap();

    // Next push: the marked comment exists → PATCH it, no new comment.
    let server = MockServer::start().await;
    whoami(&server, "live-ci-bot", 1).await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/live/issues/3/comments"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([
            {"id": 10, "body": "lgtm", "user": {"login": "octo-lead"}},
            {"id": 11, "body": format!("{marker}\nold table"), "user": {"login": "Live-CI-Bot"}}
        ])))
        .mount(&server)
        .await;
    Mock::given(method("PATCH"))
        .and(path("/repos/acme/live/issues/comments/11"))
        .and(body_json(json!({"body": format!("{marker}\nnew table")})))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"id": 11})))
        .expect(2)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(201))
        .expect(0)
        .mount(&server)
        .await;
    let github = client(&server, "");
    github.upsert_comment(3, marker, "new table").await.unwrap();
    // the identity is looked up once per client, clones included
    github
        .clone()
        .upsert_comment(3, marker, "new table")
        .await
        .unwrap();
}

/// Anyone can write the marker into a comment of theirs: the summary is looked
/// up among the bot's own comments only, so someone else's marked comment
/// (even the first one) is never edited under the bot's name.
#[tokio::test]
async fn only_the_bots_own_marked_comment_is_edited() {
    let marker = "<!-- live-ci:plan -->";
    let server = MockServer::start().await;
    whoami(&server, "live-ci-bot", 1).await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/live/issues/3/comments"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([
            {"id": 7, "body": format!("{marker}\n/live-ci plan"), "user": {"login": "mallory"}},
            {"id": 8, "body": format!("{marker}\nghost"), "user": null},
            {"id": 9, "body": format!("{marker}\nold table"), "user": {"login": "live-ci-bot"}}
        ])))
        .mount(&server)
        .await;
    Mock::given(method("PATCH"))
        .and(path("/repos/acme/live/issues/comments/9"))
        .and(body_json(json!({"body": format!("{marker}\nnew table")})))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"id": 9})))
        .expect(1)
        .mount(&server)
        .await;
    client(&server, "")
        .upsert_comment(3, marker, "new table")
        .await
        .unwrap();
    assert_eq!(
        requests(&server).await,
        [
            "GET /repos/acme/live/issues/3/comments?per_page=100",
            "GET /user",
            "PATCH /repos/acme/live/issues/comments/9",
        ]
    );

    // Only someone else's marked comment: a new one of the bot's own.
    let server = MockServer::start().await;
    whoami(&server, "live-ci-bot", 1).await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/live/issues/3/comments"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([
            {"id": 7, "body": format!("{marker}\n/live-ci plan"), "user": {"login": "mallory"}}
        ])))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/repos/acme/live/issues/3/comments"))
        .and(body_json(json!({"body": format!("{marker}\nnew table")})))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({"id": 12})))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("PATCH"))
        .respond_with(ResponseTemplate::new(200))
        .expect(0)
        .mount(&server)
        .await;
    client(&server, "")
        .upsert_comment(3, marker, "new table")
        .await
        .unwrap();

    // Who the bot is cannot be learnt: nothing is written.
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/live/issues/3/comments"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([
            {"id": 9, "body": format!("{marker}\nold table"), "user": {"login": "live-ci-bot"}}
        ])))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/user"))
        .respond_with(
            ResponseTemplate::new(401).set_body_json(json!({"message": "Bad credentials"})),
        )
        .mount(&server)
        .await;
    let err = client(&server, "")
        .upsert_comment(3, marker, "new table")
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(err, "GET /user: github answered 401: Bad credentials");
    assert_eq!(
        requests(&server).await,
        [
            "GET /repos/acme/live/issues/3/comments?per_page=100",
            "GET /user"
        ]
    );
}

/// "METHOD path?query" of every request the server saw, in order.
async fn requests(server: &MockServer) -> Vec<String> {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| match r.url.query() {
            Some(q) => format!("{} {}?{q}", r.method, r.url.path()),
            None => format!("{} {}", r.method, r.url.path()),
        })
        .collect()
}

#[tokio::test]
async fn a_commenters_permission_is_one_exact_get_and_a_stranger_has_none() {
    let server = MockServer::start().await;
    for (user, permission) in [
        ("octo-lead", "admin"),
        ("octo-dev", "write"),
        ("viewer", "read"),
    ] {
        Mock::given(method("GET"))
            .and(path(format!(
                "/api/v3/repos/acme/live/collaborators/{user}/permission"
            )))
            .and(header("authorization", "Bearer ghs_secret"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "permission": permission, "role_name": permission, "user": {"login": user}
            })))
            .expect(1)
            .mount(&server)
            .await;
    }
    // GitHub answers 404 "is not a user" for someone without any access.
    Mock::given(method("GET"))
        .and(path(
            "/api/v3/repos/acme/live/collaborators/drive-by-dev/permission",
        ))
        .respond_with(
            ResponseTemplate::new(404)
                .set_body_json(json!({"message": "drive-by-dev is not a user"})),
        )
        .expect(1)
        .mount(&server)
        .await;
    let c = client_for(&server, "/api/v3", Job::Receiver);
    assert_eq!(
        c.permission("octo-lead").await.unwrap(),
        RepoPermission::Admin
    );
    assert_eq!(
        c.permission("octo-dev").await.unwrap(),
        RepoPermission::Write
    );
    assert_eq!(c.permission("viewer").await.unwrap(), RepoPermission::Read);
    assert_eq!(
        c.permission("drive-by-dev").await.unwrap(),
        RepoPermission::None
    );
    // a login that would change the URL never reaches GitHub
    let err = c.permission("../../admin").await.unwrap_err();
    assert_eq!(err.to_string(), "invalid github login \"../../admin\"");
    assert_eq!(server.received_requests().await.unwrap().len(), 4);
}

#[tokio::test]
async fn a_pull_requests_current_head_and_failures_are_named() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/live/pulls/43"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "number": 43, "state": "open", "title": "fork change",
            "head": {"sha": "e4d1a9c", "ref": "patch-1", "repo": {"full_name": "eve/live"}},
            "base": {"sha": "b", "ref": "main", "repo": {"full_name": "acme/live"}}
        })))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/acme/live/pulls/44"))
        .respond_with(ResponseTemplate::new(404).set_body_json(json!({"message": "Not Found"})))
        .expect(1)
        .mount(&server)
        .await;
    let c = client(&server, "");
    assert_eq!(
        c.pull_request(43).await.unwrap(),
        PullRequestHead {
            number: 43,
            open: true,
            head_sha: "e4d1a9c".into(),
            head_ref: "patch-1".into(),
            base_ref: "main".into(),
        }
    );
    let err = c.pull_request(44).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "GET /repos/acme/live/pulls/44: github answered 404: Not Found"
    );
}

#[test]
fn bad_configuration_is_named() {
    let cfg = |base: &str, repo: &str| GitHubConfig {
        api_base: base.into(),
        repository: repo.into(),
        credentials: Credentials::Token("t".into()),
        job: Job::TerraRun,
        retry: RetryPolicy::default(),
    };
    let err = GitHubClient::new(cfg("https://api.github.com", "acme")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid repository \"acme\": expected \"owner/name\""
    );
    let err = GitHubClient::new(cfg("ftp://x", "a/b")).unwrap_err();
    assert!(err.to_string().contains("\"ftp://x\""), "{err}");
    // the token never appears in debug output
    assert!(!format!("{:?}", cfg("https://h", "a/b")).contains("\"t\""));
}

#[tokio::test]
async fn the_trunk_head_is_one_exact_branch_get() {
    let server = MockServer::start().await;
    // GitHub's "Get a branch" answer, trimmed to what matters plus a neighbour.
    Mock::given(method("GET"))
        .and(path("/repos/acme/live/branches/release/2026"))
        .and(header("authorization", "Bearer ghs_secret"))
        .and(header("accept", "application/vnd.github+json"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "name": "release/2026",
            "commit": {
                "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
                "commit": {"message": "Merge pull request #7 from acme/x"}
            },
            "protected": true
        })))
        .expect(1)
        .mount(&server)
        .await;
    let github = client(&server, "");
    assert_eq!(
        github.branch_head("release/2026").await.unwrap(),
        "6dcb09b5b57875f334f61aebed695e2e4193db5e"
    );
    // A name that could change the request is refused before any call.
    for bad in ["../pulls", "main?x=1", "", "a b", "/main"] {
        let err = github.branch_head(bad).await.unwrap_err();
        assert!(
            matches!(&err, GitHubError::Branch(b) if b == bad),
            "{bad:?}: {err}"
        );
    }
    // A missing branch is GitHub's 404, named.
    let err = github.branch_head("gone").await.unwrap_err().to_string();
    assert!(
        err.contains("branches/gone") && err.contains("404"),
        "{err}"
    );
}

#[tokio::test]
async fn a_commits_pull_requests_are_one_exact_get_and_the_sha_is_checked() {
    let server = MockServer::start().await;
    let sha = "6dcb09b5b57875f334f61aebed695e2e4193db5e";
    Mock::given(method("GET"))
        .and(path(format!("/repos/acme/live/commits/{sha}/pulls")))
        .and(query_param("per_page", "100"))
        .and(header("authorization", "Bearer ghs_secret"))
        .and(header("accept", "application/vnd.github+json"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([{
            "number": 42, "state": "closed", "title": "x",
            "merged_at": "2026-11-26T05:00:00Z", "merge_commit_sha": sha,
            "head": {"ref": "feature/x", "sha": "5555555555555555555555555555555555555555", "repo": null},
            "base": {"ref": "main", "sha": "6666666666666666666666666666666666666666"}
        }, {
            "number": 43, "state": "open", "merged_at": null, "merge_commit_sha": null,
            "head": {"ref": "wip", "sha": sha},
            "base": {"ref": "main", "sha": "6666666666666666666666666666666666666666"}
        }])))
        .expect(1)
        .mount(&server)
        .await;
    let github = client(&server, "");
    let pulls = github.commit_pull_requests(sha).await.unwrap();
    assert_eq!(
        pulls,
        [
            CommitPullRequest {
                number: 42,
                merged_at: Some("2026-11-26T05:00:00Z".into()),
                merge_commit_sha: Some(sha.into()),
                base_ref: "main".into(),
                base_sha: "6666666666666666666666666666666666666666".into(),
                head_ref: "feature/x".into(),
                head_sha: "5555555555555555555555555555555555555555".into(),
            },
            CommitPullRequest {
                number: 43,
                merged_at: None,
                merge_commit_sha: None,
                base_ref: "main".into(),
                base_sha: "6666666666666666666666666666666666666666".into(),
                head_ref: "wip".into(),
                head_sha: sha.into(),
            },
        ]
    );
    // Anything but a full commit id is refused before any call.
    for bad in ["6dcb09b", "../pulls", "", &format!("{sha}/x")] {
        let err = github.commit_pull_requests(bad).await.unwrap_err();
        assert!(
            matches!(&err, GitHubError::Commit(b) if b == bad),
            "{bad:?}: {err}"
        );
    }
    server.verify().await;
}
