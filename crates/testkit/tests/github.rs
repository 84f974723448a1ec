//! The GitHub fake answers the project's own GitHub client the way GitHub
//! does, and keeps what it wrote.
#![allow(clippy::unwrap_used)]

use live_ci_core::status::{CommitStatus, StatusState};
use serde_json::{Value, json};

use live_ci_core::port::{BranchHead, GitHost, merge_that_produced};
use live_ci_github::{AppCredentials, Credentials, GitHubClient, GitHubConfig, Job, RetryPolicy};
use live_ci_testkit::github::{FakeApp, FakeGitHub, FakePullRequest, MergedPull};

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

/// A throwaway App key pair made by openssl for this test only.
struct Key {
    _dir: tempfile::TempDir,
    private: String,
    public: String,
}

fn key() -> Key {
    let dir = tempfile::tempdir().unwrap();
    let private = dir.path().join("test-only-app-key.pem");
    let public = dir.path().join("public.pem");
    for args in [
        vec![
            "genrsa",
            "-traditional",
            "-out",
            "test-only-app-key.pem",
            "2048",
        ],
        vec![
            "rsa",
            "-pubout",
            "-in",
            "test-only-app-key.pem",
            "-out",
            "public.pem",
        ],
    ] {
        let made = std::process::Command::new("openssl")
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(made.status.success(), "{made:?}");
    }
    Key {
        private: std::fs::read_to_string(private).unwrap(),
        public: std::fs::read_to_string(public).unwrap(),
        _dir: dir,
    }
}

fn app_client(fake: &FakeGitHub, key: &Key, job: Job) -> GitHubClient {
    GitHubClient::new(GitHubConfig {
        api_base: fake.url(),
        repository: "acme/live".into(),
        credentials: Credentials::App(AppCredentials {
            app_id: 12,
            installation_id: 34,
            private_key_pem: key.private.clone(),
        }),
        job,
        retry: RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        },
    })
    .unwrap()
}

async fn fake_with_app(key: &Key) -> FakeGitHub {
    let fake = FakeGitHub::start("acme/live").await;
    fake.trust_app(FakeApp {
        app_id: 12,
        installation_id: 34,
        public_key_pem: key.public.clone(),
    });
    fake
}

fn status() -> CommitStatus {
    CommitStatus::new("abc", StatusState::Success, "live-ci: x", "done")
}

/// The bearer of every request to the repository, in order.
async fn repo_bearers(fake: &FakeGitHub) -> Vec<String> {
    fake.requests()
        .await
        .iter()
        .filter(|r| r.url.path().starts_with("/repos/"))
        .map(|r| r.headers["authorization"].to_str().unwrap().to_owned())
        .collect()
}

/// A GitHub App's client gets its installation token from the fake, which
/// verifies its JWT and records the exchange; what it then writes carries
/// that token.
#[tokio::test]
async fn a_github_app_gets_an_installation_token_and_uses_it() {
    let key = key();
    let fake = fake_with_app(&key).await;
    let client = app_client(&fake, &key, Job::TerraRun);
    client.set_status(&status()).await.unwrap();
    client.set_status(&status()).await.unwrap();
    let tokens = fake.app_tokens();
    assert_eq!(tokens.len(), 1, "one exchange, then the cached token");
    assert_eq!(tokens[0].installation_id, "34");
    assert_eq!(
        tokens[0].request,
        serde_json::json!({
            "repositories": ["live"],
            "permissions": {"checks": "write", "contents": "read", "statuses": "write"},
        })
    );
    assert_eq!(
        repo_bearers(&fake).await,
        vec![format!("Bearer {}", tokens[0].token); 2]
    );
    assert_eq!(fake.statuses().len(), 2);
    assert!(fake.app_refusals().is_empty());
}

/// The fake verifies the JWT as GitHub does: a JWT signed by another key, one
/// naming another App, one living longer than ten minutes and one issued in
/// the future are each refused, and no token is handed out.
#[tokio::test]
async fn the_fake_refuses_a_jwt_github_would_refuse() {
    let key = key();
    let fake = fake_with_app(&key).await;
    // Signed by another key: the client's own error names the App and installation.
    let other = key_other();
    let err = app_client(&fake, &other, Job::TerraRun)
        .set_status(&status())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(
            "github app 12, installation 34: cannot get an installation token: \
             POST /app/installations/34/access_tokens: github answered 401: A JSON web token could not be decoded"
        ),
        "{err}"
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let sign = |iat: u64, exp: u64, iss: &str| {
        jsonwebtoken::encode(
            &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256),
            &serde_json::json!({"iat": iat, "exp": exp, "iss": iss}),
            &jsonwebtoken::EncodingKey::from_rsa_pem(key.private.as_bytes()).unwrap(),
        )
        .unwrap()
    };
    let http = reqwest::Client::new();
    let exchange = |jwt: String| {
        let http = http.clone();
        let url = format!("{}/app/installations/34/access_tokens", fake.url());
        async move {
            http.post(url)
                .bearer_auth(jwt)
                .json(&serde_json::json!({"repositories": ["live"], "permissions": {"statuses": "write"}}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(
        exchange(sign(now - 60, now + 540, "12")).await,
        201,
        "a good one"
    );
    assert_eq!(
        exchange(sign(now - 60, now + 541, "12")).await,
        401,
        "11 minutes"
    );
    assert_eq!(
        exchange(sign(now - 60, now + 540, "13")).await,
        401,
        "another app"
    );
    assert_eq!(
        exchange(sign(now + 120, now + 600, "12")).await,
        401,
        "in the future"
    );
    assert_eq!(
        exchange(sign(now - 700, now - 100, "12")).await,
        401,
        "expired"
    );
    let refusals = fake.app_refusals();
    assert_eq!(refusals.len(), 5, "{refusals:#?}");
    assert!(
        refusals[1].contains("too far in the future"),
        "{}",
        refusals[1]
    );
    assert!(refusals[3].contains("'Issued at' claim"), "{}", refusals[3]);
    assert_eq!(fake.app_tokens().len(), 1);
}

fn key_other() -> Key {
    key()
}

/// A token that expires while the job runs: the fake issues tokens that live
/// 302 s (the client fetches a new one 300 s before `expires_at`) and answers
/// 401 to a revoked one; the client changes tokens both times and the job's
/// requests all succeed.
#[tokio::test]
async fn a_token_expiring_mid_run_is_replaced_and_the_run_goes_on() {
    let key = key();
    let fake = fake_with_app(&key).await;
    fake.set_app_token_lifetime(302);
    let client = app_client(&fake, &key, Job::TerraRun);
    client.set_status(&status()).await.unwrap();
    client.set_status(&status()).await.unwrap();
    assert_eq!(fake.app_tokens().len(), 1, "cached while fresh");
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    client.set_status(&status()).await.unwrap();
    assert_eq!(fake.app_tokens().len(), 2, "replaced before it expired");
    // Revoked (or expired early): GitHub answers 401, the client gets a new one.
    fake.set_app_token_lifetime(3600);
    fake.revoke_app_tokens();
    client.set_status(&status()).await.unwrap();
    let tokens = fake.app_tokens();
    assert_eq!(tokens.len(), 3);
    let t = |i: usize| format!("Bearer {}", tokens[i].token);
    assert_eq!(
        repo_bearers(&fake).await,
        [t(0), t(0), t(1), t(1), t(2)],
        "the revoked token was refused once, then the new one used"
    );
    assert_eq!(fake.statuses().len(), 4, "every status landed once");
}

/// GitHub refusing the refresh (the App uninstalled, its key revoked): a
/// clear error naming the App and the installation, after exactly one retry.
#[tokio::test]
async fn a_refused_refresh_names_the_app_and_the_installation() {
    let key = key();
    let fake = fake_with_app(&key).await;
    let client = app_client(&fake, &key, Job::PrPlan);
    client.set_status(&status()).await.unwrap();
    fake.revoke_app_tokens();
    fake.refuse_app_tokens(Some(403));
    let err = client.set_status(&status()).await.unwrap_err().to_string();
    assert_eq!(
        err,
        "github app 12, installation 34: cannot get an installation token: \
         POST /app/installations/34/access_tokens: github answered 403: Bad credentials"
    );
    assert_eq!(fake.app_tokens().len(), 1);
    assert_eq!(
        fake.app_refusals(),
        ["refused with 403 (refuse_app_tokens)"]
    );
    assert_eq!(fake.statuses().len(), 1);
}

/// An installation token does only what it was asked for: the fake answers
/// GitHub's 403 to a request outside its permissions or its repositories.
#[tokio::test]
async fn a_token_is_refused_outside_its_permissions_and_repositories() {
    let key = key();
    let fake = fake_with_app(&key).await;
    let client = app_client(&fake, &key, Job::TerraRun);
    client.set_status(&status()).await.unwrap();
    let token = fake.app_tokens()[0].token.clone();
    let http = reqwest::Client::new();
    let comment = http
        .post(format!("{}/repos/acme/live/issues/7/comments", fake.url()))
        .bearer_auth(&token)
        .json(&serde_json::json!({"body": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(comment.status().as_u16(), 403);
    let body: serde_json::Value = comment.json().await.unwrap();
    assert_eq!(body["message"], "Resource not accessible by integration");
    assert_eq!(body["needs"], "pull_requests: write");
    assert!(fake.comments(7).is_empty());
    // A repository the installation does not hold is refused at the exchange.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let jwt = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256),
        &serde_json::json!({"iat": now - 60, "exp": now + 500, "iss": "12"}),
        &jsonwebtoken::EncodingKey::from_rsa_pem(key.private.as_bytes()).unwrap(),
    )
    .unwrap();
    let other = http
        .post(format!("{}/app/installations/34/access_tokens", fake.url()))
        .bearer_auth(jwt)
        .json(
            &serde_json::json!({"repositories": ["secrets"], "permissions": {"contents": "read"}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(other.status().as_u16(), 422);
}

/// A comment body over GitHub's 65,536 characters is refused with 422, as
/// GitHub refuses it, and changes nothing; one at the limit is kept.
#[tokio::test]
async fn a_comment_over_githubs_limit_is_refused_with_422() {
    use live_ci_testkit::github::COMMENT_BODY_LIMIT;
    let fake = FakeGitHub::start("acme/live").await;
    let client = GitHubClient::new(GitHubConfig {
        api_base: fake.url(),
        repository: "acme/live".into(),
        credentials: Credentials::Token("t".into()),
        job: Job::PrPlan,
        retry: RetryPolicy::default(),
    })
    .unwrap();
    let marker = "<!-- m -->";
    // Characters, not bytes: a multi-byte body at the limit is accepted.
    let at_limit = format!(
        "{marker}\n{}",
        "é".repeat(COMMENT_BODY_LIMIT - marker.len() - 1)
    );
    client.upsert_comment(7, marker, &at_limit).await.unwrap();
    assert_eq!(fake.comments(7)[0].body, at_limit);
    let over = format!("{at_limit}x");
    let err = client.upsert_comment(7, marker, &over).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "PATCH /repos/acme/live/issues/comments/{}: github answered 422: Validation Failed",
            fake.comments(7)[0].id
        )
    );
    assert_eq!(fake.comments(7).len(), 1);
    assert_eq!(fake.comments(7)[0].body, at_limit, "unchanged");
    let err = client.upsert_comment(8, marker, &over).await.unwrap_err();
    assert!(err.to_string().contains("answered 422"), "{err}");
    assert!(fake.comments(8).is_empty());
}

/// With a GitHub App, `connect` makes statuses check runs; with a token they
/// stay commit statuses. A unit's check run carries its plan as
/// `output.text` and the status's link as `details_url`; the same check
/// again on the same commit edits it; the Merge Lock stays a commit status.
#[tokio::test]
async fn with_an_app_a_units_status_is_a_check_run_and_the_merge_lock_a_status() {
    use live_ci_core::status::context::MERGE_LOCK;
    use live_ci_github::{GitHubAuth, connect};
    use live_ci_testkit::params::MemoryParams;
    let key = key();
    let fake = fake_with_app(&key).await;
    let params = MemoryParams::with([("/app-key", key.private.clone()), ("/token", "t".into())]);
    let app = GitHubAuth::App {
        app_id: 12,
        installation_id: 34,
        private_key_param: "/app-key".into(),
    };
    let client = connect(&app, &params, &fake.url(), "acme/live", Job::PrPlan)
        .await
        .unwrap();
    assert!(client.posts_check_runs());
    let token = GitHubAuth::Token {
        param: "/token".into(),
    };
    let with_token = connect(&token, &params, &fake.url(), "acme/live", Job::PrPlan)
        .await
        .unwrap();
    assert!(!with_token.posts_check_runs());

    let sha = "6dcb09b5b57875f334f61aebed695e2e4193db5e";
    let pending = CommitStatus::new(sha, StatusState::Pending, "live-ci: plan dev/a", "planning")
        .with_target_url("https://run/page");
    client.set_status(&pending).await.unwrap();
    let done = CommitStatus::new(
        sha,
        StatusState::Success,
        "live-ci: plan dev/a",
        "1 to add, 0 to change, 0 to destroy",
    )
    .with_target_url("https://run/page")
    .with_text("```diff\n+  + resource \"terraform_data\" \"this\" {\n```\n");
    client.set_status(&done).await.unwrap();
    client
        .set_status(&CommitStatus::new(
            sha,
            StatusState::Pending,
            MERGE_LOCK,
            "locked",
        ))
        .await
        .unwrap();

    let runs = fake.check_runs();
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_eq!(
        runs[0].requests,
        [
            serde_json::json!({
                "name": "live-ci: plan dev/a",
                "head_sha": sha,
                "status": "in_progress",
                "details_url": "https://run/page",
                "output": {"title": "planning", "summary": "planning"},
            }),
            serde_json::json!({
                "name": "live-ci: plan dev/a",
                "head_sha": sha,
                "status": "completed",
                "conclusion": "success",
                "details_url": "https://run/page",
                "output": {
                    "title": "1 to add, 0 to change, 0 to destroy",
                    "summary": "1 to add, 0 to change, 0 to destroy",
                    "text": "```diff\n+  + resource \"terraform_data\" \"this\" {\n```\n",
                },
            }),
        ]
    );
    let paths: Vec<(String, String)> = fake
        .requests()
        .await
        .iter()
        .filter(|r| r.url.path().starts_with("/repos/"))
        .map(|r| (r.method.to_string(), r.url.path().to_string()))
        .collect();
    // One look-up for a run another job made, then the create; the same
    // client's second status edits its own run without asking again.
    assert_eq!(
        paths,
        [
            (
                "GET".to_string(),
                format!("/repos/acme/live/commits/{sha}/check-runs")
            ),
            (
                "POST".to_string(),
                "/repos/acme/live/check-runs".to_string()
            ),
            (
                "PATCH".into(),
                format!("/repos/acme/live/check-runs/{}", runs[0].id)
            ),
            ("POST".into(), format!("/repos/acme/live/statuses/{sha}")),
        ]
    );
    let statuses = fake.statuses();
    assert_eq!(statuses.len(), 1);
    assert_eq!(statuses[0].context, MERGE_LOCK);
    // The token asked for checks: write with the job's other permissions.
    assert_eq!(
        fake.app_tokens()[0].request["permissions"],
        serde_json::json!({"checks": "write", "contents": "read", "pull_requests": "write", "statuses": "write"})
    );
}

/// A status one job posts and another completes is one check run: the
/// second job finds the first's (`GET commits/{sha}/check-runs` by name,
/// latest) and edits it; a name or commit without one gets a new run.
#[tokio::test]
async fn a_status_one_job_posted_and_another_completed_is_one_check_run() {
    let key = key();
    let fake = fake_with_app(&key).await;
    let receiver = app_client(&fake, &key, Job::Receiver).with_check_runs();
    let task = app_client(&fake, &key, Job::CreateDeployStack).with_check_runs();
    let sha = "6dcb09b5b57875f334f61aebed695e2e4193db5e";
    let name = "live-ci: create-deploy-stack";
    receiver
        .set_status(&CommitStatus::new(
            sha,
            StatusState::Pending,
            name,
            "finding the affected units",
        ))
        .await
        .unwrap();
    task.set_status(&CommitStatus::new(
        sha,
        StatusState::Success,
        name,
        "3 units",
    ))
    .await
    .unwrap();
    // Another commit, and another name: their own runs.
    let other = "0123456789abcdef0123456789abcdef01234567";
    task.set_status(&CommitStatus::new(
        other,
        StatusState::Success,
        name,
        "0 units",
    ))
    .await
    .unwrap();
    task.set_status(&CommitStatus::new(
        sha,
        StatusState::Success,
        "live-ci: deploy",
        "done",
    ))
    .await
    .unwrap();

    let runs = fake.check_runs();
    assert_eq!(runs.len(), 3, "{runs:#?}");
    assert_eq!(runs[0].current["name"], name);
    assert_eq!(runs[0].current["head_sha"], sha);
    assert_eq!(runs[0].current["status"], "completed");
    assert_eq!(runs[0].current["conclusion"], "success");
    assert_eq!(runs[0].requests.len(), 2);
    let tokens = fake.app_tokens();
    let job_token = |perm: &str| {
        tokens
            .iter()
            .find(|t| t.request["permissions"].get(perm).is_some())
            .map(|t| t.token.clone())
            .unwrap()
    };
    // Created with the receiver's token, completed with the task's.
    assert_eq!(
        runs[0].tokens,
        [job_token("metadata"), job_token("contents")]
    );
    assert_eq!(runs[1].current["head_sha"], other);
    assert_eq!(runs[2].current["name"], "live-ci: deploy");

    let sent: Vec<String> = fake
        .requests()
        .await
        .iter()
        .filter(|r| r.url.path().starts_with("/repos/"))
        .map(|r| {
            let query = r.url.query().map(|q| format!("?{q}")).unwrap_or_default();
            format!("{} {}{query}", r.method, r.url.path())
        })
        .collect();
    let lookup = |commit: &str, check: &str| {
        format!(
            "GET /repos/acme/live/commits/{commit}/check-runs?check_name={}&filter=latest&per_page=100",
            check.replace(':', "%3A").replace(' ', "+")
        )
    };
    assert_eq!(
        sent,
        [
            lookup(sha, name),
            "POST /repos/acme/live/check-runs".to_string(),
            lookup(sha, name),
            format!("PATCH /repos/acme/live/check-runs/{}", runs[0].id),
            lookup(other, name),
            "POST /repos/acme/live/check-runs".to_string(),
            lookup(sha, "live-ci: deploy"),
            "POST /repos/acme/live/check-runs".to_string(),
        ]
    );
    assert_eq!(fake.token_refusals(), Vec::<String>::new());
}

/// The fake refuses a check run output over the Checks API's 65,535
/// characters with 422, as GitHub does.
#[tokio::test]
async fn a_check_run_text_over_the_checks_limit_is_refused_with_422() {
    use live_ci_testkit::github::CHECK_RUN_TEXT_LIMIT;
    let key = key();
    let fake = fake_with_app(&key).await;
    let client = app_client(&fake, &key, Job::TerraRun).with_check_runs();
    let mut s = status();
    s.text = Some("x".repeat(CHECK_RUN_TEXT_LIMIT + 1));
    // The client never sends more than the limit: it cuts the text.
    client.set_status(&s).await.unwrap();
    let runs = fake.check_runs();
    assert_eq!(
        runs[0].current["output"]["text"].as_str().unwrap().len(),
        CHECK_RUN_TEXT_LIMIT
    );
    let http = reqwest::Client::new();
    let token = fake.app_tokens()[0].token.clone();
    let answer = http
        .post(format!("{}/repos/acme/live/check-runs", fake.url()))
        .bearer_auth(token)
        .json(&serde_json::json!({"name": "n", "head_sha": "abc",
            "output": {"title": "t", "summary": "s", "text": "x".repeat(CHECK_RUN_TEXT_LIMIT + 1)}}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 422);
    assert_eq!(fake.check_runs().len(), 1);
}

/// The drift job's issues (issue 32 item 4) through the real client with an
/// App token of exactly `contents: read, issues: write`: someone else's
/// issue holding the marker is never taken for the bot's; the bot's issue
/// is opened with the drift label, found again by its marker, edited,
/// commented on and closed; every request is the one written here. A
/// pull-requests token cannot touch a real issue: the client refuses to
/// open one, and GitHub (the fake) answers 403 to its comment routes.
#[tokio::test]
async fn drift_issues_are_opened_found_edited_and_closed_with_the_issues_permission_only() {
    use live_ci_core::port::IssueHost;
    let key = key();
    let fake = fake_with_app(&key).await;
    let client = app_client(&fake, &key, Job::Drift);
    let marker = "<!-- live-ci-drift unit=\"dev/a\" -->";
    let planted = fake.add_issue(
        "mallory",
        "Drift in dev/a",
        &format!("{marker}\nclose me"),
        &[live_ci_github::DRIFT_LABEL],
    );
    assert_eq!(client.find_bot_issue(marker).await.unwrap(), None);

    let number = client
        .create_issue("Drift in dev/a", &format!("{marker}\nfirst"))
        .await
        .unwrap();
    assert_eq!(number, planted + 1);
    assert_eq!(client.find_bot_issue(marker).await.unwrap(), Some(number));
    client
        .update_issue(number, "Drift in dev/a", &format!("{marker}\nsecond"))
        .await
        .unwrap();
    client
        .close_issue(number, "no drift any more")
        .await
        .unwrap();
    assert_eq!(client.find_bot_issue(marker).await.unwrap(), None);
    assert_eq!(
        client.issue_url(number),
        Some(format!("{}/acme/live/issues/{number}", fake.url()))
    );

    let issues = fake.issues();
    let mine = issues.iter().find(|i| i.number == number).unwrap();
    assert_eq!(
        (
            mine.login.as_str(),
            mine.state.as_str(),
            mine.state_reason.as_deref(),
            mine.body.as_str(),
            mine.labels.as_slice()
        ),
        (
            "live-ci[bot]",
            "closed",
            Some("completed"),
            format!("{marker}\nsecond").as_str(),
            [live_ci_github::DRIFT_LABEL.to_string()].as_slice()
        )
    );
    // mallory's issue is untouched.
    let theirs = issues.iter().find(|i| i.number == planted).unwrap();
    assert_eq!(
        (theirs.state.as_str(), theirs.body.as_str()),
        ("open", format!("{marker}\nclose me").as_str())
    );
    let comments = fake.comments(number);
    assert_eq!(comments.len(), 1);
    assert_eq!(
        (comments[0].login.as_str(), comments[0].body.as_str()),
        ("live-ci[bot]", "no drift any more")
    );
    // Exactly these requests reached the repository, in this order.
    let list = "GET /repos/acme/live/issues?state=open&labels=live-ci-drift&per_page=100";
    let sent: Vec<(String, Value)> = fake
        .requests()
        .await
        .iter()
        .filter(|r| r.url.path().starts_with("/repos/"))
        .map(|r| {
            let query = r.url.query().map(|q| format!("?{q}")).unwrap_or_default();
            (
                format!("{} {}{query}", r.method, r.url.path()),
                serde_json::from_slice(&r.body).unwrap_or(Value::Null),
            )
        })
        .collect();
    let issue = format!("/repos/acme/live/issues/{number}");
    assert_eq!(
        sent,
        [
            (list.to_string(), Value::Null),
            (
                "POST /repos/acme/live/issues".to_string(),
                json!({"title": "Drift in dev/a", "body": format!("{marker}\nfirst"), "labels": ["live-ci-drift"]})
            ),
            (list.to_string(), Value::Null),
            (
                format!("PATCH {issue}"),
                json!({"title": "Drift in dev/a", "body": format!("{marker}\nsecond")})
            ),
            (
                format!("POST {issue}/comments"),
                json!({"body": "no drift any more"})
            ),
            (
                format!("PATCH {issue}"),
                json!({"state": "closed", "state_reason": "completed"})
            ),
            (list.to_string(), Value::Null),
        ]
    );
    assert!(
        fake.token_refusals().is_empty(),
        "{:?}",
        fake.token_refusals()
    );
    // The drift token is exactly its permissions.
    let asked = &fake.app_tokens()[0].request["permissions"];
    assert_eq!(asked, &json!({"contents": "read", "issues": "write"}));

    // pr-plan's token (pull_requests: write) may comment on pull requests
    // only: the client refuses to open an issue before sending anything,
    // and GitHub refuses its comment on a real issue.
    let pr_plan = app_client(&fake, &key, Job::PrPlan);
    let err = pr_plan
        .create_issue("x", "y")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("issues"), "{err}");
    let before = fake.requests().await.len();
    assert!(
        pr_plan
            .upsert_comment(planted, "<!-- m -->", "hi")
            .await
            .is_err()
    );
    assert!(fake.requests().await.len() > before);
    assert_eq!(
        fake.token_refusals(),
        [format!(
            "GET /repos/acme/live/issues/{planted}/comments: 403"
        )]
    );
}
