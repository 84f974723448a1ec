#![allow(clippy::unwrap_used)]
//! GitHub App authentication against a mock GitHub: the JWT checked with the
//! App's PUBLIC key by openssl (not by the crate that signed it), the exact
//! access-token request of every job, the cache and its refresh before
//! `expires_at`, a 401 answered by one new token, a refused refresh named by
//! App and installation, and requests outside a job's permissions refused
//! before anything is sent. The RSA key is generated per test run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use live_ci_core::port::{GitHost, PullRequestVotes};
use live_ci_core::status::{CommitStatus, StatusState};
use live_ci_github::{AppCredentials, Credentials, GitHubClient, GitHubConfig, Job, RetryPolicy};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const APP_ID: u64 = 12;
const INSTALLATION: u64 = 34;
const TOKENS_PATH: &str = "/app/installations/34/access_tokens";

/// A throwaway RSA key pair made by openssl for this test run only.
struct TestKey {
    dir: tempfile::TempDir,
    private_pem: String,
}

impl TestKey {
    fn generate() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let private = dir.path().join("test-only-app-key.pem");
        // -traditional: PKCS#1, the form GitHub hands out.
        run(Command::new("openssl")
            .args(["genrsa", "-traditional", "-out"])
            .arg(&private)
            .arg("2048"));
        run(Command::new("openssl")
            .args(["rsa", "-pubout", "-in"])
            .arg(&private)
            .arg("-out")
            .arg(dir.path().join("public.pem")));
        let private_pem = std::fs::read_to_string(&private).unwrap();
        assert!(private_pem.starts_with("-----BEGIN RSA PRIVATE KEY-----"));
        TestKey { dir, private_pem }
    }

    fn public(&self) -> PathBuf {
        self.dir.path().join("public.pem")
    }

    /// Whether openssl verifies the JWT's RS256 signature with this public key.
    fn verifies(&self, jwt: &str) -> bool {
        let (signed, signature) = jwt.rsplit_once('.').unwrap();
        let data = self.dir.path().join("signed");
        let sig = self.dir.path().join("signature");
        std::fs::write(&data, signed).unwrap();
        std::fs::write(&sig, URL_SAFE_NO_PAD.decode(signature).unwrap()).unwrap();
        verify(&self.public(), &sig, &data)
    }
}

fn verify(public: &Path, sig: &Path, data: &Path) -> bool {
    Command::new("openssl")
        .args(["dgst", "-sha256", "-verify"])
        .arg(public)
        .arg("-signature")
        .arg(sig)
        .arg(data)
        .output()
        .unwrap()
        .status
        .success()
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{cmd:?}: {out:?}");
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// GitHub's `expires_at` form, `secs` from now.
fn expires_in(secs: u64) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp((now() + secs) as i64).unwrap();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

fn app_client(server: &MockServer, key: &TestKey, job: Job) -> GitHubClient {
    GitHubClient::new(GitHubConfig {
        api_base: server.uri(),
        repository: "acme/live".into(),
        credentials: Credentials::App(AppCredentials {
            app_id: APP_ID,
            installation_id: INSTALLATION,
            private_key_pem: key.private_pem.clone(),
        }),
        job,
        retry: RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_secs(1),
        },
    })
    .unwrap()
}

/// Answers the token exchange with `tokens` in turn, each valid for `secs`.
async fn mount_tokens(server: &MockServer, tokens: &[&str], secs: u64) {
    for (i, token) in tokens.iter().enumerate() {
        Mock::given(method("POST"))
            .and(path(TOKENS_PATH))
            .respond_with(ResponseTemplate::new(201).set_body_json(json!({
                "token": token, "expires_at": expires_in(secs),
                "permissions": {}, "repository_selection": "selected",
            })))
            .up_to_n_times(1)
            .with_priority(u8::try_from(i + 1).unwrap())
            .mount(server)
            .await;
    }
}

async fn mount_status(server: &MockServer, token: &str, status: u16) {
    Mock::given(method("POST"))
        .and(path("/repos/acme/live/statuses/abc"))
        .and(header("authorization", format!("Bearer {token}").as_str()))
        .respond_with(
            ResponseTemplate::new(status).set_body_json(json!({"message": "Bad credentials"})),
        )
        .mount(server)
        .await;
}

fn status() -> CommitStatus {
    CommitStatus::new("abc", StatusState::Success, "live-ci: plan", "ok")
}

async fn exchanges(server: &MockServer) -> Vec<Request> {
    server
        .received_requests()
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.url.path() == TOKENS_PATH)
        .collect()
}

fn bearer(r: &Request) -> String {
    let value = r.headers.get("authorization").unwrap().to_str().unwrap();
    value.strip_prefix("Bearer ").unwrap().to_string()
}

#[tokio::test]
async fn the_jwt_is_rs256_signed_with_the_apps_key_backdated_and_at_most_ten_minutes() {
    let key = TestKey::generate();
    let server = MockServer::start().await;
    mount_tokens(&server, &["ghs_one"], 3600).await;
    mount_status(&server, "ghs_one", 201).await;
    let before = now();
    app_client(&server, &key, Job::TerraRun)
        .set_status(&status())
        .await
        .unwrap();
    let exchange = exchanges(&server).await;
    assert_eq!(exchange.len(), 1);
    let jwt = bearer(&exchange[0]);
    assert!(key.verifies(&jwt), "openssl refused the jwt's signature");
    // The same JWT under another App's key does not verify: the check is real.
    assert!(!TestKey::generate().verifies(&jwt));
    let part = |i: usize| -> Value {
        serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(jwt.split('.').nth(i).unwrap())
                .unwrap(),
        )
        .unwrap()
    };
    assert_eq!(part(0)["alg"], "RS256");
    let claims = part(1);
    assert_eq!(claims["iss"], APP_ID.to_string());
    let (iat, exp) = (
        claims["iat"].as_u64().unwrap(),
        claims["exp"].as_u64().unwrap(),
    );
    assert!(
        iat + 60 >= before && iat + 55 <= before,
        "iat {iat}, now {before}"
    );
    assert!(exp - iat <= 600 && exp > now(), "iat {iat}, exp {exp}");
    assert_eq!(
        exchange[0]
            .headers
            .get("accept")
            .and_then(|v| v.to_str().ok()),
        Some("application/vnd.github+json")
    );
}

#[tokio::test]
async fn each_job_asks_for_a_token_for_the_live_repository_with_exactly_its_permissions() {
    let key = TestKey::generate();
    // Written out, not derived from the table: this is what each job's token
    // may do (infra/README.md, "GitHub setup").
    let expected = [
        (
            Job::Receiver,
            json!({"checks": "write", "metadata": "read", "pull_requests": "read", "statuses": "write"}),
        ),
        (
            Job::TriggerSf,
            // pull_requests: write for the deploy comment (issue 29 item 3).
            json!({"checks": "write", "contents": "read", "pull_requests": "write", "statuses": "write"}),
        ),
        (
            Job::PrPlan,
            json!({"checks": "write", "contents": "read", "pull_requests": "write", "statuses": "write"}),
        ),
        (
            Job::CreateDeployStack,
            json!({"checks": "write", "contents": "read", "pull_requests": "read", "statuses": "write"}),
        ),
        (
            Job::TerraRun,
            json!({"checks": "write", "contents": "read", "statuses": "write"}),
        ),
        (
            // Votes from pull requests (issue 29 item 6): the comment, the
            // pull request, team membership (an organization permission), the reply.
            Job::ApprovalResponse,
            json!({"members": "read", "pull_requests": "write"}),
        ),
        (
            // Drift (issue 32 item 4): clones the trunk and keeps one issue
            // per drifted unit; no status, no pull request.
            Job::Drift,
            json!({"contents": "read", "issues": "write"}),
        ),
    ];
    assert_eq!(expected.len(), Job::ALL.len());
    for (job, permissions) in expected {
        let server = MockServer::start().await;
        mount_tokens(&server, &["ghs_job"], 3600).await;
        let client = app_client(&server, &key, job);
        if job == Job::ApprovalResponse {
            // It posts no status: its first call reads a vote comment.
            Mock::given(method("GET"))
                .and(path("/repos/acme/live/issues/comments/7"))
                .and(header("authorization", "Bearer ghs_job"))
                .respond_with(
                    ResponseTemplate::new(404).set_body_json(json!({"message": "Not Found"})),
                )
                .mount(&server)
                .await;
            assert_eq!(client.vote_comment(7).await.unwrap(), None, "{job}");
        } else if job == Job::Drift {
            // It posts no status: its first call to the repository closes an issue.
            for (verb, route) in [("POST", "issues/9/comments"), ("PATCH", "issues/9")] {
                Mock::given(method(verb))
                    .and(path(format!("/repos/acme/live/{route}")))
                    .and(header("authorization", "Bearer ghs_job"))
                    .respond_with(ResponseTemplate::new(200).set_body_json(json!({})))
                    .mount(&server)
                    .await;
            }
            use live_ci_core::port::IssueHost;
            client.close_issue(9, "gone").await.unwrap();
        } else {
            mount_status(&server, "ghs_job", 201).await;
            client.set_status(&status()).await.unwrap();
        }
        let exchange = exchanges(&server).await;
        assert_eq!(exchange.len(), 1, "{job}");
        let body: Value = serde_json::from_slice(&exchange[0].body).unwrap();
        assert_eq!(
            body,
            json!({"repositories": ["live"], "permissions": permissions}),
            "{job}"
        );
    }
}

#[tokio::test]
async fn the_token_is_reused_then_fetched_again_shortly_before_it_expires() {
    let key = TestKey::generate();
    let server = MockServer::start().await;
    // Due for refresh 2 s from now (the margin is 300 s).
    mount_tokens(&server, &["ghs_first", "ghs_second"], 302).await;
    mount_status(&server, "ghs_first", 201).await;
    mount_status(&server, "ghs_second", 201).await;
    let github = app_client(&server, &key, Job::TerraRun);
    github.set_status(&status()).await.unwrap();
    github.set_status(&status()).await.unwrap();
    assert_eq!(exchanges(&server).await.len(), 1, "the token was cached");
    tokio::time::sleep(Duration::from_millis(3100)).await;
    github.set_status(&status()).await.unwrap();
    assert_eq!(exchanges(&server).await.len(), 2, "refreshed before expiry");
    let statuses: Vec<String> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.url.path().ends_with("/statuses/abc"))
        .map(bearer)
        .collect();
    assert_eq!(statuses, ["ghs_first", "ghs_first", "ghs_second"]);
}

#[tokio::test]
async fn a_401_gets_one_new_token_and_the_request_is_sent_again() {
    let key = TestKey::generate();
    let server = MockServer::start().await;
    mount_tokens(&server, &["ghs_revoked", "ghs_fresh"], 3600).await;
    mount_status(&server, "ghs_revoked", 401).await;
    mount_status(&server, "ghs_fresh", 201).await;
    let github = app_client(&server, &key, Job::CreateDeployStack);
    github.set_status(&status()).await.unwrap();
    assert_eq!(exchanges(&server).await.len(), 2);
    // The fresh token is cached for what follows.
    github.set_status(&status()).await.unwrap();
    assert_eq!(exchanges(&server).await.len(), 2);
}

#[tokio::test]
async fn a_refused_refresh_is_an_error_naming_the_app_and_the_installation() {
    let key = TestKey::generate();
    let server = MockServer::start().await;
    mount_tokens(&server, &["ghs_revoked"], 3600).await;
    Mock::given(method("POST"))
        .and(path(TOKENS_PATH))
        .respond_with(
            ResponseTemplate::new(401).set_body_json(json!({"message": "Bad credentials"})),
        )
        .with_priority(10)
        .mount(&server)
        .await;
    mount_status(&server, "ghs_revoked", 401).await;
    let err = app_client(&server, &key, Job::TerraRun)
        .set_status(&status())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "github app 12, installation 34: cannot get an installation token: \
         POST /app/installations/34/access_tokens: github answered 401: Bad credentials"
    );
    assert_eq!(exchanges(&server).await.len(), 2, "one refresh, no more");
}

#[tokio::test]
async fn a_fresh_token_refused_too_is_an_error_naming_the_app_and_the_installation() {
    let key = TestKey::generate();
    let server = MockServer::start().await;
    mount_tokens(&server, &["ghs_a", "ghs_b", "ghs_c"], 3600).await;
    mount_status(&server, "ghs_a", 401).await;
    mount_status(&server, "ghs_b", 401).await;
    let err = app_client(&server, &key, Job::TerraRun)
        .set_status(&status())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "github app 12, installation 34: github refused a fresh installation token: \
         POST /repos/acme/live/statuses/abc: github answered 401: Bad credentials"
    );
    assert_eq!(exchanges(&server).await.len(), 2, "one refresh, no more");
}

#[tokio::test]
async fn a_request_outside_the_jobs_permissions_never_leaves_the_client() {
    let key = TestKey::generate();
    let server = MockServer::start().await;
    mount_tokens(&server, &["ghs_any"], 3600).await;
    let terra_run = app_client(&server, &key, Job::TerraRun);
    let err = terra_run
        .upsert_comment(7, "<!-- m -->", "text")
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "terra-run may not GET /repos/acme/live/issues/7/comments?per_page=100: it needs \
         pull_requests: read, which is not in terra-run's permissions (crates/github/src/permissions.rs)"
    );
    let receiver = app_client(&server, &key, Job::Receiver);
    let err = receiver.git_token().await.unwrap_err();
    assert!(
        err.to_string()
            .starts_with("receiver may not git clone acme/live: it needs contents: read"),
        "{err}"
    );
    assert!(server.received_requests().await.unwrap().is_empty());
    // The same refusal with a static token: the table binds every credential.
    let pat = GitHubClient::new(GitHubConfig {
        api_base: server.uri(),
        repository: "acme/live".into(),
        credentials: Credentials::Token("ghp_static".into()),
        job: Job::TerraRun,
        retry: RetryPolicy::default(),
    })
    .unwrap();
    assert!(pat.open_pull_requests("main").await.is_err());
    assert!(server.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn the_clone_token_is_the_jobs_installation_token() {
    let key = TestKey::generate();
    let server = MockServer::start().await;
    mount_tokens(&server, &["ghs_clone"], 3600).await;
    let github = app_client(&server, &key, Job::PrPlan);
    assert_eq!(github.git_token().await.unwrap(), "ghs_clone");
    assert_eq!(github.git_token().await.unwrap(), "ghs_clone");
    assert_eq!(exchanges(&server).await.len(), 1);
}

#[tokio::test]
async fn the_apps_bot_login_is_its_slug_from_get_app() {
    let key = TestKey::generate();
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/app"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"id": 12, "slug": "acme-live-ci"})),
        )
        .expect(1)
        .mount(&server)
        .await;
    let github = app_client(&server, &key, Job::PrPlan);
    assert_eq!(github.app_bot_login().await.unwrap(), "acme-live-ci[bot]");
    let requests = server.received_requests().await.unwrap();
    assert!(
        key.verifies(&bearer(&requests[0])),
        "GET /app is sent with the jwt"
    );
}

#[test]
fn a_key_that_is_no_rsa_pem_is_refused_at_start_without_echoing_it() {
    let err = GitHubClient::new(GitHubConfig {
        api_base: "https://api.github.com".into(),
        repository: "acme/live".into(),
        credentials: Credentials::App(AppCredentials {
            app_id: APP_ID,
            installation_id: INSTALLATION,
            private_key_pem: "unset-secret-placeholder".into(),
        }),
        job: Job::TerraRun,
        retry: RetryPolicy::default(),
    })
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with(
            "github app 12, installation 34: the private key is not an RSA key in PEM form"
        ),
        "{err}"
    );
    assert!(!err.contains("unset-secret-placeholder"), "{err}");
}

/// The module-source token is a second exchange, apart from the job's token:
/// `contents: read` on exactly the listed repositories (by name), cached.
#[tokio::test]
async fn the_module_source_token_reads_exactly_the_listed_repositories() {
    let key = TestKey::generate();
    let server = MockServer::start().await;
    mount_tokens(&server, &["ghs_job", "ghs_modules"], 3600).await;
    mount_status(&server, "ghs_job", 201).await;
    let github = app_client(&server, &key, Job::TerraRun);
    github.set_status(&status()).await.unwrap();
    let repos = vec!["acme/modules".to_string(), "Acme/shared-tf".to_string()];
    assert_eq!(
        github.module_source_token(&repos).await.unwrap(),
        "ghs_modules"
    );
    assert_eq!(
        github.module_source_token(&repos).await.unwrap(),
        "ghs_modules"
    );
    let exchange = exchanges(&server).await;
    assert_eq!(exchange.len(), 2, "the job's, then one for the modules");
    let body: Value = serde_json::from_slice(&exchange[1].body).unwrap();
    assert_eq!(
        body,
        json!({"repositories": ["modules", "shared-tf"], "permissions": {"contents": "read"}})
    );
    assert!(key.verifies(&bearer(&exchange[1])));
}

/// No module-source token with a personal token, for a job that runs no
/// repository code, or for a repository of another owner; nothing is sent.
#[tokio::test]
async fn a_module_source_token_is_refused_where_it_must_not_exist() {
    let key = TestKey::generate();
    let server = MockServer::start().await;
    let repos = vec!["acme/modules".to_string()];
    let err = app_client(&server, &key, Job::Receiver)
        .module_source_token(&repos)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "module source token: receiver runs no repository code"
    );
    let err = app_client(&server, &key, Job::PrPlan)
        .module_source_token(&["evil/modules".to_string()])
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "module source token: \"evil/modules\" is not a repository of \"acme\" (the app's installation reads only its own owner's)"
    );
    let pat = GitHubClient::new(GitHubConfig {
        api_base: server.uri(),
        repository: "acme/live".into(),
        credentials: Credentials::Token("ghp_static".into()),
        job: Job::TerraRun,
        retry: RetryPolicy::default(),
    })
    .unwrap();
    let err = pat.module_source_token(&repos).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "module source token: needs github app credentials: a personal token is never given to repository code"
    );
    assert!(server.received_requests().await.unwrap().is_empty());
}
