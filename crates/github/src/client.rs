//! The REST client: one authenticated request path with retries, `Link`-header
//! pagination, and the [`GitHost`] operations live-ci needs.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use live_ci_core::status::{CommitStatus, PullRequest};

use live_ci_core::port::{BranchHead, CommitPullRequest};

use live_ci_core::port::GitHost;
use live_ci_core::port::IssueHost;
use live_ci_core::port::PullRequestAuthority;
use live_ci_core::port::{PullRequestComment, PullRequestVotes};
use live_ci_core::webhook::{PullRequestHead, RepoPermission};
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderMap, LINK, USER_AGENT};
use reqwest::{Method, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::app::AppAuth;
use crate::auth::Credentials;
use crate::error::GitHubError;
use crate::permissions::{CLONE, Job, Thread, required};
use crate::retry::{RetryPolicy, retry_delay};

const PER_PAGE: u32 = 100;

/// Where, as whom and for which job to call GitHub.
#[derive(Debug, Clone)]
pub struct GitHubConfig {
    /// `https://api.github.com`, or `https://HOST/api/v3` for GitHub Enterprise.
    pub api_base: String,
    /// `owner/name`.
    pub repository: String,
    /// A token, or a GitHub App (redacted in `Debug`).
    pub credentials: Credentials,
    /// The job whose permissions bound every request (`crate::permissions`).
    pub job: Job,
    /// How often and how long 5xx and rate-limited answers are retried.
    pub retry: RetryPolicy,
}

/// A GitHub REST client for one repository and one job.
#[derive(Debug, Clone)]
pub struct GitHubClient {
    http: reqwest::Client,
    base: String,
    repo: String,
    config: GitHubConfig,
    /// With App credentials: the signing key and the job's cached token,
    /// shared by the client's clones.
    app: Option<Arc<AppAuth>>,
    /// Who the client acts as, looked up once per client (clones share it).
    bot_login: Arc<tokio::sync::OnceCell<String>>,
    /// With App credentials, once asked for: the module-source token's own
    /// auth and cache (apart from the job's token).
    module_sources: Arc<tokio::sync::OnceCell<Arc<AppAuth>>>,
    /// Statuses are posted as check runs ([`Self::with_check_runs`]).
    check_runs: bool,
    /// The check runs this client created, by commit and name, so a later
    /// status of the same check edits it (`PATCH`) instead of adding one.
    check_run_ids: Arc<std::sync::Mutex<HashMap<(String, String), u64>>>,
}

impl GitHubClient {
    /// A client of `config.repository`; refuses a base URL that is not
    /// http(s) and a repository that is not `owner/name`. Sends nothing.
    pub fn new(config: GitHubConfig) -> Result<Self, GitHubError> {
        let base = config.api_base.trim_end_matches('/').to_string();
        let parsed = reqwest::Url::parse(&base).map_err(|e| GitHubError::BaseUrl {
            url: config.api_base.clone(),
            reason: e.to_string(),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(GitHubError::BaseUrl {
                url: config.api_base.clone(),
                reason: "not http(s)".into(),
            });
        }
        let valid_repo = config
            .repository
            .split_once('/')
            .is_some_and(|(o, n)| !o.is_empty() && !n.is_empty() && !n.contains('/'));
        if !valid_repo {
            return Err(GitHubError::Repository(config.repository.clone()));
        }
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|source| GitHubError::Transport {
                method: "BUILD".into(),
                path: base.clone(),
                source,
            })?;
        let app = match &config.credentials {
            Credentials::Token(_) => None,
            Credentials::App(app) => {
                let name = config.repository.split_once('/').map_or("", |(_, n)| n);
                Some(Arc::new(AppAuth::new(app, name, config.job)?))
            }
        };
        Ok(GitHubClient {
            http,
            repo: config.repository.clone(),
            base,
            config,
            app,
            bot_login: Arc::default(),
            module_sources: Arc::default(),
            check_runs: false,
            check_run_ids: Arc::default(),
        })
    }

    /// The client with every status but the Merge Lock posted as a check
    /// run (`POST /repos/{o}/{r}/check-runs`, then `PATCH …/check-runs/{id}`
    /// for the same commit and name): its `details_url` is the status's
    /// link and its output the status's text (the unit's plan). Only a
    /// GitHub App may create check runs; [`crate::connect`] chooses this for
    /// an App. The Merge Lock stays a commit status: branch protection
    /// requires it by name, which a status and a check run both satisfy, and
    /// the receiver (statuses only) keeps it on every open pull request.
    pub fn with_check_runs(mut self) -> Self {
        self.check_runs = true;
        self
    }

    /// Whether statuses go out as check runs.
    pub fn posts_check_runs(&self) -> bool {
        self.check_runs
    }

    /// `status` as a check run: edited when one of this App's for the same
    /// commit and name exists — made by this client, or found by
    /// [`Self::existing_check_run`] (made by another job, e.g. the
    /// receiver's pending plan that pr-plan completes) — created otherwise.
    async fn check_run(&self, status: &CommitStatus) -> Result<(), GitHubError> {
        let body = check_run_body(status);
        let key = (status.sha.clone(), status.context.clone());
        let known = self
            .check_run_ids
            .lock()
            .ok()
            .and_then(|ids| ids.get(&key).copied());
        let known = match known {
            Some(id) => Some(id),
            None => {
                self.existing_check_run(&status.sha, &status.context)
                    .await?
            }
        };
        if let Some(id) = known {
            if let Ok(mut ids) = self.check_run_ids.lock() {
                ids.insert(key, id);
            }
            let url = self.repo_url(&format!("check-runs/{id}"));
            self.send(Method::PATCH, &url, Some(&body)).await?;
            return Ok(());
        }
        let url = self.repo_url("check-runs");
        let (answer, _) = self.send(Method::POST, &url, Some(&body)).await?;
        if let (Some(id), Ok(mut ids)) = (
            answer.get("id").and_then(Value::as_u64),
            self.check_run_ids.lock(),
        ) {
            ids.insert(key, id);
        }
        Ok(())
    }

    /// The newest check run named `name` on `sha` that this App made:
    /// `GET /repos/{o}/{r}/commits/{sha}/check-runs?check_name=…&filter=latest`
    /// (`checks: read`, which every job's `checks: write` covers). Another
    /// App's run of the same name is never edited (GitHub would refuse it).
    async fn existing_check_run(&self, sha: &str, name: &str) -> Result<Option<u64>, GitHubError> {
        // The commit goes into the URL path: nothing that could change it.
        if sha.is_empty() || !sha.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(GitHubError::Commit(sha.to_string()));
        }
        let mut url = reqwest::Url::parse(&self.repo_url(&format!("commits/{sha}/check-runs")))
            .map_err(|e| GitHubError::BaseUrl {
                url: self.base.clone(),
                reason: e.to_string(),
            })?;
        url.query_pairs_mut()
            .append_pair("check_name", name)
            .append_pair("filter", "latest")
            .append_pair("per_page", &PER_PAGE.to_string());
        let url = url.to_string();
        let (value, _) = self.send(Method::GET, &url, None).await?;
        let list: CheckRunList = self.decode(&url, value)?;
        let app_id = self.app.as_ref().map(|a| a.app_id);
        Ok(list
            .check_runs
            .into_iter()
            .filter(|run| run.name == name && run.head_sha == sha)
            .filter(|run| app_id.is_none() || run.app.as_ref().map(|a| a.id) == app_id)
            .map(|run| run.id)
            .max())
    }

    /// The token to clone the live repository with over HTTPS: the static
    /// token, or the job's installation token (refused to a job without
    /// contents: read).
    pub async fn git_token(&self) -> Result<String, GitHubError> {
        if !self.config.job.allows(CLONE) {
            return Err(GitHubError::NotPermitted {
                job: self.config.job,
                method: "git clone".into(),
                path: self.repo.clone(),
                needs: Some(CLONE),
            });
        }
        match (&self.app, &self.config.credentials) {
            (Some(app), _) => self.installation_token(app).await,
            (None, Credentials::Token(token)) => Ok(token.clone()),
            (None, Credentials::App(_)) => Err(GitHubError::BaseUrl {
                url: self.base.clone(),
                reason: "app credentials without an app client".into(),
            }),
        }
    }

    /// A token for terraform's private module sources, apart from the
    /// job's own: `contents: read` on exactly `repositories` (`owner/name`,
    /// each of the live repository's owner, whose installation the App is),
    /// nothing else. Cached and refreshed like the job's token; the first
    /// call's repositories are the client's for good.
    ///
    /// Refused with a personal token (it is never given to repository code:
    /// it can do everything the token's owner can) and to a job that runs no
    /// repository code.
    pub async fn module_source_token(
        &self,
        repositories: &[String],
    ) -> Result<String, GitHubError> {
        let refuse = |m: String| Err(GitHubError::ModuleSources(m));
        if !self.config.job.runs_repository_code() {
            return refuse(format!("{} runs no repository code", self.config.job));
        }
        let Credentials::App(credentials) = &self.config.credentials else {
            return refuse(
                "needs github app credentials: a personal token is never given to repository code"
                    .into(),
            );
        };
        let owner = self.repo.split_once('/').map_or("", |(o, _)| o);
        let mut names = Vec::new();
        for full in repositories {
            match full.split_once('/') {
                Some((o, n))
                    if o.eq_ignore_ascii_case(owner) && !n.is_empty() && !n.contains('/') =>
                {
                    names.push(n.to_string());
                }
                _ => {
                    return refuse(format!(
                        "{full:?} is not a repository of {owner:?} (the app's installation reads only its own owner's)"
                    ));
                }
            }
        }
        if names.is_empty() {
            return refuse("no repository is listed".into());
        }
        let auth = self
            .module_sources
            .get_or_try_init(|| async {
                AppAuth::with_request(
                    credentials,
                    json!({
                        "repositories": names,
                        "permissions": Job::module_source_permissions(),
                    }),
                )
                .map(Arc::new)
            })
            .await?;
        self.installation_token(auth).await
    }

    /// The App's bot login, `<app-slug>[bot]` (`GET /app` with the App's JWT):
    /// the author of everything an App-authenticated live-ci writes.
    pub async fn app_bot_login(&self) -> Result<String, GitHubError> {
        let Some(app) = &self.app else {
            return Err(GitHubError::BaseUrl {
                url: self.base.clone(),
                reason: "the app's bot login needs github app credentials".into(),
            });
        };
        let jwt = app.jwt()?;
        let url = format!("{}/app", self.base);
        let (value, _) = self
            .send_as(Method::GET, &url, None, &format!("Bearer {jwt}"))
            .await
            .map_err(|e| app.wrap("reading the app", e))?;
        let slug = value
            .get("slug")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| app.error("GET /app: the answer has no slug".into()))?;
        Ok(format!("{slug}[bot]"))
    }

    /// The job's installation token, from the cache or a new exchange.
    async fn installation_token(&self, app: &AppAuth) -> Result<String, GitHubError> {
        app.get_or_fetch(|| async {
            let jwt = app.jwt()?;
            let url = format!("{}{}", self.base, app.access_tokens_path());
            let (value, _) = self
                .send_as(
                    Method::POST,
                    &url,
                    Some(app.request_body()),
                    &format!("Bearer {jwt}"),
                )
                .await
                .map_err(|e| app.wrap("cannot get an installation token", e))?;
            Ok(value)
        })
        .await
    }

    /// Refuses a request outside the job's permissions before it is sent.
    fn permit(&self, method: &Method, path: &str, thread: Thread) -> Result<(), GitHubError> {
        let path_only = path.split('?').next().unwrap_or(path);
        let in_repo = path_only
            .strip_prefix(&format!("/repos/{}/", self.repo))
            .or_else(|| {
                let rest = path_only.strip_prefix("/repositories/")?;
                let (id, rest) = rest.split_once('/')?;
                id.chars().all(|c| c.is_ascii_digit()).then_some(rest)
            });
        let needs = match in_repo {
            Some(rest) => required(method, rest, thread),
            None => crate::permissions::required_outside_repo(method, path_only),
        };
        match needs {
            Some(grant) if self.config.job.allows(grant) => Ok(()),
            _ => Err(GitHubError::NotPermitted {
                job: self.config.job,
                method: method.to_string(),
                path: path.to_string(),
                needs,
            }),
        }
    }

    /// The login this client's comments are made by, looked up once per
    /// client (a failure is not cached): with a GitHub App its bot,
    /// `<app-slug>[bot]` ([`Self::app_bot_login`]); with a token, `GET /user`.
    /// `/user` is outside the repository, so it is not one of the per-job
    /// repository permissions: it is sent with the token directly.
    pub async fn bot_login(&self) -> Result<String, GitHubError> {
        self.bot_login
            .get_or_try_init(|| async {
                if self.app.is_some() {
                    return self.app_bot_login().await;
                }
                let Credentials::Token(token) = &self.config.credentials else {
                    return Err(GitHubError::BaseUrl {
                        url: self.base.clone(),
                        reason: "app credentials without an app client".into(),
                    });
                };
                let url = format!("{}/user", self.base);
                let (value, _) = self
                    .send_as(Method::GET, &url, None, &format!("Bearer {token}"))
                    .await?;
                let user: CommentUser = self.decode(&url, value)?;
                Ok(user.login)
            })
            .await
            .cloned()
    }

    fn repo_url(&self, rest: &str) -> String {
        format!("{}/repos/{}/{}", self.base, self.repo, rest)
    }

    /// [`Self::send_on`] for everything but real issues: an issue number
    /// names a pull request.
    async fn send(
        &self,
        method: Method,
        url: &str,
        body: Option<&Value>,
    ) -> Result<(Value, HeaderMap), GitHubError> {
        self.send_on(Thread::PullRequest, method, url, body).await
    }

    /// Sends one request within the job's permissions, as the configured
    /// credentials; with an App, a 401 fetches a new installation token and
    /// tries once more. `thread`: what an issue number in the path names.
    async fn send_on(
        &self,
        thread: Thread,
        method: Method,
        url: &str,
        body: Option<&Value>,
    ) -> Result<(Value, HeaderMap), GitHubError> {
        let path = url.strip_prefix(&self.base).unwrap_or(url);
        self.permit(&method, path, thread)?;
        let app = match (&self.app, &self.config.credentials) {
            (Some(app), _) => app,
            (None, Credentials::Token(token)) => {
                return self
                    .send_as(method, url, body, &format!("Bearer {token}"))
                    .await;
            }
            (None, Credentials::App(_)) => {
                return Err(GitHubError::BaseUrl {
                    url: self.base.clone(),
                    reason: "app credentials without an app client".into(),
                });
            }
        };
        let token = self.installation_token(app).await?;
        match self
            .send_as(method.clone(), url, body, &format!("Bearer {token}"))
            .await
        {
            Err(GitHubError::Status { status: 401, .. }) => {
                // Revoked or expired early: one new token, then give up.
                app.invalidate(&token).await;
                let token = self.installation_token(app).await?;
                self.send_as(method, url, body, &format!("Bearer {token}"))
                    .await
                    .map_err(|e| match e {
                        GitHubError::Status { status: 401, .. } => {
                            app.wrap("github refused a fresh installation token", e)
                        }
                        other => other,
                    })
            }
            other => other,
        }
    }

    /// Sends one request with `authorization`, retrying as the policy allows;
    /// returns the decoded body (JSON `null` for an empty one) and the headers.
    async fn send_as(
        &self,
        method: Method,
        url: &str,
        body: Option<&Value>,
        authorization: &str,
    ) -> Result<(Value, HeaderMap), GitHubError> {
        let path = url.strip_prefix(&self.base).unwrap_or(url).to_string();
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let mut req = self
                .http
                .request(method.clone(), url)
                .header(ACCEPT, "application/vnd.github+json")
                .header(AUTHORIZATION, authorization)
                .header("X-GitHub-Api-Version", "2022-11-28")
                .header(USER_AGENT, "live-ci");
            if let Some(b) = body {
                req = req.json(b);
            }
            let resp = match req.send().await {
                Ok(r) => r,
                Err(source) => {
                    let retryable = source.is_connect() || source.is_timeout();
                    if retryable && attempt < self.config.retry.max_attempts {
                        let wait = self
                            .config
                            .retry
                            .base_delay
                            .saturating_mul(2u32.saturating_pow(attempt - 1));
                        tracing::warn!(%method, %path, attempt, ?wait, "github unreachable, retrying");
                        tokio::time::sleep(wait).await;
                        continue;
                    }
                    return Err(GitHubError::Transport {
                        method: method.to_string(),
                        path,
                        source,
                    });
                }
            };
            let status = resp.status();
            let headers = resp.headers().clone();
            let text = resp.text().await.map_err(|source| GitHubError::Transport {
                method: method.to_string(),
                path: path.clone(),
                source,
            })?;
            if status.is_success() {
                let value = if text.trim().is_empty() || status == StatusCode::NO_CONTENT {
                    Value::Null
                } else {
                    serde_json::from_str(&text).map_err(|e| GitHubError::Decode {
                        method: method.to_string(),
                        path: path.clone(),
                        message: e.to_string(),
                    })?
                };
                return Ok((value, headers));
            }
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            if let Some(wait) =
                retry_delay(&self.config.retry, attempt, status, &headers, &text, now)
            {
                tracing::warn!(%method, %path, attempt, status = status.as_u16(), ?wait, "github asked us to retry");
                tokio::time::sleep(wait).await;
                continue;
            }
            let message = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_else(|| text.chars().take(200).collect());
            return Err(GitHubError::Status {
                method: method.to_string(),
                path,
                status: status.as_u16(),
                message,
            });
        }
    }

    /// Every item of a paginated list, following `Link: <…>; rel="next"` only
    /// within the configured API host (the token must not leave it).
    async fn get_all(&self, first: String) -> Result<Vec<Value>, GitHubError> {
        self.get_all_on(Thread::PullRequest, first).await
    }

    /// [`Self::get_all`] about `thread`.
    async fn get_all_on(&self, thread: Thread, first: String) -> Result<Vec<Value>, GitHubError> {
        let mut items = Vec::new();
        let mut next = Some(first);
        while let Some(url) = next.take() {
            let (page, headers) = self.send_on(thread, Method::GET, &url, None).await?;
            match page {
                Value::Array(list) => items.extend(list),
                other => {
                    return Err(GitHubError::Decode {
                        method: "GET".into(),
                        path: url,
                        message: format!("expected a list, got {}", kind(&other)),
                    });
                }
            }
            next = headers
                .get(LINK)
                .and_then(|v| v.to_str().ok())
                .and_then(next_link)
                .filter(|n| n.starts_with(&format!("{}/", self.base)));
        }
        Ok(items)
    }

    fn decode<T: for<'de> Deserialize<'de>>(
        &self,
        path: &str,
        value: Value,
    ) -> Result<T, GitHubError> {
        serde_json::from_value(value).map_err(|e| GitHubError::Decode {
            method: "GET".into(),
            path: path.to_string(),
            message: e.to_string(),
        })
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The `rel="next"` target of a `Link` header. Hand-parsed: the header's grammar
/// is one line of `<url>; rel="x"` pairs, not worth a dependency.
fn next_link(header: &str) -> Option<String> {
    header.split(',').find_map(|part| {
        let (url, params) = part.trim().split_once(';')?;
        let url = url.trim().strip_prefix('<')?.strip_suffix('>')?;
        params
            .split(';')
            .any(|p| matches!(p.trim(), "rel=\"next\"" | "rel=next"))
            .then(|| url.to_string())
    })
}

#[derive(Deserialize)]
struct FileEntry {
    filename: String,
    previous_filename: Option<String>,
}

#[derive(Deserialize)]
struct PullEntry {
    number: u64,
    head: RefEntry,
    base: RefEntry,
}

#[derive(Deserialize)]
struct RefEntry {
    sha: String,
    #[serde(rename = "ref")]
    name: String,
}

#[derive(Deserialize)]
struct CommentEntry {
    id: u64,
    #[serde(default)]
    body: String,
    /// Null for a deleted ("ghost") account.
    #[serde(default)]
    user: Option<CommentUser>,
}

/// `GET …/commits/{ref}/check-runs`: the fields a lookup needs.
#[derive(Deserialize)]
struct CheckRunList {
    #[serde(default)]
    check_runs: Vec<CheckRunEntry>,
}

#[derive(Deserialize)]
struct CheckRunEntry {
    id: u64,
    name: String,
    head_sha: String,
    /// The App that made it (null for none GitHub knows).
    #[serde(default)]
    app: Option<CheckRunApp>,
}

#[derive(Deserialize)]
struct CheckRunApp {
    id: u64,
}

#[derive(Deserialize)]
struct CommentUser {
    login: String,
}

/// A check run's request body for `status`: pending is `in_progress`, the
/// others `completed` with their conclusion; `output` carries the
/// description as title and summary and the status's text, each within the
/// Checks API's limit.
pub fn check_run_body(status: &CommitStatus) -> Value {
    use live_ci_core::plan_text::CHECK_RUN_LIMIT;
    use live_ci_core::status::StatusState;
    let mut output = json!({
        "title": status.description,
        "summary": status.description,
    });
    if let Some(text) = &status.text {
        // Already fitted by its maker (`plan_text::fit_plan`); never more.
        output["text"] = json!(text.chars().take(CHECK_RUN_LIMIT).collect::<String>());
    }
    let mut body = json!({
        "name": status.context,
        "head_sha": status.sha,
        "output": output,
    });
    match status.state {
        StatusState::Pending => body["status"] = json!("in_progress"),
        done => {
            body["status"] = json!("completed");
            body["conclusion"] = json!(match done {
                StatusState::Success => "success",
                _ => "failure",
            });
        }
    }
    if let Some(url) = &status.target_url {
        body["details_url"] = json!(url);
    }
    body
}

impl GitHubClient {
    /// The bot's own comment on `number` holding `marker`. The list first:
    /// a job without the permission is refused before anything (the bot's
    /// login included) is asked of GitHub.
    async fn find_bot_comment(
        &self,
        number: u64,
        marker: &str,
    ) -> Result<Option<CommentEntry>, GitHubError> {
        let url = self.repo_url(&format!("issues/{number}/comments?per_page={PER_PAGE}"));
        let comments = self.get_all(url.clone()).await?;
        let me = self.bot_login().await?;
        for item in comments {
            let c: CommentEntry = self.decode(&url, item)?;
            let mine = c
                .user
                .as_ref()
                .is_some_and(|u| u.login.eq_ignore_ascii_case(&me));
            if mine && c.body.contains(marker) {
                return Ok(Some(c));
            }
        }
        Ok(None)
    }
}

impl GitHost for GitHubClient {
    type Error = GitHubError;

    fn shows_status_text(&self) -> bool {
        self.check_runs
    }

    async fn set_status(&self, status: &CommitStatus) -> Result<(), GitHubError> {
        if self.check_runs && status.context != live_ci_core::status::context::MERGE_LOCK {
            return self.check_run(status).await;
        }
        let mut body = json!({
            "state": status.state,
            "context": status.context,
            "description": status.description,
        });
        if let Some(url) = &status.target_url {
            body["target_url"] = json!(url);
        }
        let url = self.repo_url(&format!("statuses/{}", status.sha));
        self.send(Method::POST, &url, Some(&body)).await?;
        Ok(())
    }

    async fn pull_request_files(&self, number: u64) -> Result<Vec<String>, GitHubError> {
        let url = self.repo_url(&format!("pulls/{number}/files?per_page={PER_PAGE}"));
        let mut files = Vec::new();
        for item in self.get_all(url.clone()).await? {
            let entry: FileEntry = self.decode(&url, item)?;
            // A rename touches both paths: the old one may belong to another unit.
            files.extend(entry.previous_filename);
            files.push(entry.filename);
        }
        files.sort();
        files.dedup();
        Ok(files)
    }

    async fn open_pull_requests(&self, base: &str) -> Result<Vec<PullRequest>, GitHubError> {
        let mut parsed =
            reqwest::Url::parse(&self.repo_url("pulls")).map_err(|e| GitHubError::BaseUrl {
                url: self.base.clone(),
                reason: e.to_string(),
            })?;
        parsed
            .query_pairs_mut()
            .append_pair("state", "open")
            .append_pair("base", base)
            .append_pair("per_page", &PER_PAGE.to_string());
        let url = parsed.to_string();
        let mut prs = Vec::new();
        for item in self.get_all(url.clone()).await? {
            let entry: PullEntry = self.decode(&url, item)?;
            prs.push(PullRequest {
                number: entry.number,
                head_sha: entry.head.sha,
                base_ref: entry.base.name,
            });
        }
        Ok(prs)
    }

    async fn upsert_comment(
        &self,
        number: u64,
        marker: &str,
        body: &str,
    ) -> Result<(), GitHubError> {
        let body = if body.contains(marker) {
            body.to_string()
        } else {
            format!("{marker}\n{body}")
        };
        // Only the bot's own comment is ever edited: anyone can write the
        // marker into a comment of theirs, and an edit would then put the
        // bot's words under their name (or theirs under the bot's summary).
        let existing = self.find_bot_comment(number, marker).await?.map(|c| c.id);
        let payload = json!({ "body": body });
        match existing {
            Some(id) => {
                let url = self.repo_url(&format!("issues/comments/{id}"));
                self.send(Method::PATCH, &url, Some(&payload)).await?;
            }
            None => {
                let url = self.repo_url(&format!("issues/{number}/comments"));
                self.send(Method::POST, &url, Some(&payload)).await?;
            }
        }
        Ok(())
    }

    async fn bot_comment(&self, number: u64, marker: &str) -> Result<Option<String>, GitHubError> {
        Ok(self.find_bot_comment(number, marker).await?.map(|c| c.body))
    }
}

#[derive(Deserialize)]
struct PermissionEntry {
    permission: String,
}

#[derive(Deserialize)]
struct PullDetail {
    number: u64,
    state: String,
    head: RefEntry,
    base: RefEntry,
}

impl PullRequestAuthority for GitHubClient {
    type Error = GitHubError;

    async fn bot_login(&self) -> Result<String, GitHubError> {
        GitHubClient::bot_login(self).await
    }

    /// `GET /repos/{owner}/{repo}/collaborators/{user}/permission`. GitHub
    /// answers 404 for a user who is no collaborator at all: no permission.
    async fn permission(&self, user: &str) -> Result<RepoPermission, GitHubError> {
        let valid = !user.is_empty()
            && user
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '[' || c == ']');
        // The login goes into the URL path: refuse anything that could change it.
        if !valid {
            return Err(GitHubError::Login(user.to_string()));
        }
        let url = self.repo_url(&format!("collaborators/{user}/permission"));
        match self.send(Method::GET, &url, None).await {
            Ok((value, _)) => {
                let entry: PermissionEntry = self.decode(&url, value)?;
                Ok(RepoPermission::parse(&entry.permission))
            }
            Err(GitHubError::Status { status: 404, .. }) => Ok(RepoPermission::None),
            Err(e) => Err(e),
        }
    }

    async fn pull_request(&self, number: u64) -> Result<PullRequestHead, GitHubError> {
        let url = self.repo_url(&format!("pulls/{number}"));
        let (value, _) = self.send(Method::GET, &url, None).await?;
        let pr: PullDetail = self.decode(&url, value)?;
        Ok(PullRequestHead {
            number: pr.number,
            open: pr.state == "open",
            head_sha: pr.head.sha,
            head_ref: pr.head.name,
            base_ref: pr.base.name,
        })
    }
}

#[derive(Deserialize)]
struct CommentDetail {
    id: u64,
    #[serde(default)]
    body: String,
    user: CommentUser,
    issue_url: String,
}

#[derive(Deserialize)]
struct MergeDetail {
    #[serde(default)]
    merged: bool,
    #[serde(default)]
    merge_commit_sha: Option<String>,
}

#[derive(Deserialize)]
struct MembershipDetail {
    state: String,
}

/// A login or team slug that goes into a URL path: GitHub's characters only.
fn path_safe(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 100
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

impl PullRequestVotes for GitHubClient {
    type Error = GitHubError;

    /// `GET /repos/{owner}/{repo}/issues/comments/{id}`; 404: `None`.
    async fn vote_comment(&self, id: u64) -> Result<Option<PullRequestComment>, GitHubError> {
        let url = self.repo_url(&format!("issues/comments/{id}"));
        let value = match self.send(Method::GET, &url, None).await {
            Ok((value, _)) => value,
            Err(GitHubError::Status { status: 404, .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let c: CommentDetail = self.decode(&url, value)?;
        // The comment's issue, from its own URL (`…/issues/{number}`).
        let number = c
            .issue_url
            .rsplit('/')
            .next()
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| GitHubError::Decode {
                method: "GET".into(),
                path: url.clone(),
                message: format!("issue_url {:?} names no issue number", c.issue_url),
            })?;
        Ok(Some(PullRequestComment {
            id: c.id,
            number,
            author: c.user.login,
            body: c.body,
        }))
    }

    /// `GET /repos/{owner}/{repo}/pulls/{number}`: its merge commit once merged.
    async fn merge_commit(&self, number: u64) -> Result<Option<String>, GitHubError> {
        let url = self.repo_url(&format!("pulls/{number}"));
        let (value, _) = self.send(Method::GET, &url, None).await?;
        let pr: MergeDetail = self.decode(&url, value)?;
        Ok(pr.merge_commit_sha.filter(|_| pr.merged))
    }

    /// `GET /orgs/{org}/teams/{team_slug}/memberships/{username}`: 404 is no
    /// membership; only state "active" counts (not "pending").
    async fn team_member(
        &self,
        org: &str,
        team_slug: &str,
        login: &str,
    ) -> Result<bool, GitHubError> {
        for part in [org, team_slug, login] {
            if !path_safe(part) {
                return Err(GitHubError::Login(part.to_string()));
            }
        }
        let url = format!(
            "{}/orgs/{org}/teams/{team_slug}/memberships/{login}",
            self.base
        );
        match self.send(Method::GET, &url, None).await {
            Ok((value, _)) => {
                let m: MembershipDetail = self.decode(&url, value)?;
                Ok(m.state == "active")
            }
            Err(GitHubError::Status { status: 404, .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// `POST /repos/{owner}/{repo}/issues/{number}/comments`.
    async fn reply(&self, number: u64, body: &str) -> Result<(), GitHubError> {
        let url = self.repo_url(&format!("issues/{number}/comments"));
        self.send(Method::POST, &url, Some(&json!({ "body": body })))
            .await?;
        Ok(())
    }
}

#[derive(Deserialize)]
struct BranchEntry {
    commit: BranchCommit,
}

#[derive(Deserialize)]
struct BranchCommit {
    sha: String,
}

impl BranchHead for GitHubClient {
    type Error = GitHubError;

    /// `GET /repos/{owner}/{repo}/branches/{branch}`: the branch's head commit.
    async fn branch_head(&self, branch: &str) -> Result<String, GitHubError> {
        // The name goes into the URL path: refuse anything git would not take
        // as a branch name and that could change the request.
        let valid = !branch.is_empty()
            && !branch.starts_with('/')
            && !branch.ends_with('/')
            && !branch.contains("..")
            && !branch.contains("//")
            && branch
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
        if !valid {
            return Err(GitHubError::Branch(branch.to_string()));
        }
        let url = self.repo_url(&format!("branches/{branch}"));
        let (value, _) = self.send(Method::GET, &url, None).await?;
        let entry: BranchEntry = self.decode(&url, value)?;
        Ok(entry.commit.sha)
    }

    /// `GET /repos/{owner}/{repo}/commits/{sha}/pulls` (all pages).
    async fn commit_pull_requests(&self, sha: &str) -> Result<Vec<CommitPullRequest>, GitHubError> {
        // The commit goes into the URL path: a full commit id only.
        if sha.len() != 40 || !sha.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(GitHubError::Commit(sha.to_string()));
        }
        let url = self.repo_url(&format!("commits/{sha}/pulls?per_page={PER_PAGE}"));
        let mut pulls = Vec::new();
        for item in self.get_all(url.clone()).await? {
            let entry: CommitPullEntry = self.decode(&url, item)?;
            pulls.push(CommitPullRequest {
                number: entry.number,
                merged_at: entry.merged_at,
                merge_commit_sha: entry.merge_commit_sha,
                base_ref: entry.base.name,
                base_sha: entry.base.sha,
                head_ref: entry.head.name,
                head_sha: entry.head.sha,
            });
        }
        Ok(pulls)
    }
}

/// The label every drift issue carries: the open ones are listed by it.
pub const DRIFT_LABEL: &str = "live-ci-drift";

/// `GET …/issues`: the fields finding the bot's issue needs.
#[derive(Deserialize)]
struct IssueEntry {
    number: u64,
    #[serde(default)]
    body: Option<String>,
    /// Null for a deleted ("ghost") account.
    #[serde(default)]
    user: Option<CommentUser>,
    /// Present when the entry is a pull request (GitHub lists both).
    #[serde(default)]
    pull_request: Option<Value>,
}

#[derive(Deserialize)]
struct CreatedIssue {
    number: u64,
}

/// The drift job's issues (`Job::Drift`: issues: write). Every request goes
/// out as being about a real issue ([`Thread::Issue`]), so the token must
/// hold the issues permission even for a comment.
impl IssueHost for GitHubClient {
    type Error = GitHubError;

    /// `GET /repos/{o}/{r}/issues?state=open&labels=live-ci-drift` (all
    /// pages): the first open issue, not a pull request, opened by the bot
    /// itself, whose body holds `marker`.
    async fn find_bot_issue(&self, marker: &str) -> Result<Option<u64>, GitHubError> {
        let url = self.repo_url(&format!(
            "issues?state=open&labels={DRIFT_LABEL}&per_page={PER_PAGE}"
        ));
        let issues = self.get_all_on(Thread::Issue, url.clone()).await?;
        let me = self.bot_login().await?;
        for item in issues {
            let issue: IssueEntry = self.decode(&url, item)?;
            let mine = issue
                .user
                .as_ref()
                .is_some_and(|u| u.login.eq_ignore_ascii_case(&me));
            let holds = issue.body.as_deref().is_some_and(|b| b.contains(marker));
            if mine && holds && issue.pull_request.is_none() {
                return Ok(Some(issue.number));
            }
        }
        Ok(None)
    }

    /// `POST /repos/{o}/{r}/issues` with the drift label.
    async fn create_issue(&self, title: &str, body: &str) -> Result<u64, GitHubError> {
        let url = self.repo_url("issues");
        let payload = json!({ "title": title, "body": body, "labels": [DRIFT_LABEL] });
        let (value, _) = self
            .send_on(Thread::Issue, Method::POST, &url, Some(&payload))
            .await?;
        let created: CreatedIssue = self.decode(&url, value)?;
        Ok(created.number)
    }

    /// `PATCH /repos/{o}/{r}/issues/{number}` with the title and body.
    async fn update_issue(&self, number: u64, title: &str, body: &str) -> Result<(), GitHubError> {
        let url = self.repo_url(&format!("issues/{number}"));
        let payload = json!({ "title": title, "body": body });
        self.send_on(Thread::Issue, Method::PATCH, &url, Some(&payload))
            .await?;
        Ok(())
    }

    /// `POST …/issues/{number}/comments`, then `PATCH …/issues/{number}`
    /// with `state: closed, state_reason: completed`.
    async fn close_issue(&self, number: u64, comment: &str) -> Result<(), GitHubError> {
        let url = self.repo_url(&format!("issues/{number}/comments"));
        self.send_on(
            Thread::Issue,
            Method::POST,
            &url,
            Some(&json!({ "body": comment })),
        )
        .await?;
        let url = self.repo_url(&format!("issues/{number}"));
        let payload = json!({ "state": "closed", "state_reason": "completed" });
        self.send_on(Thread::Issue, Method::PATCH, &url, Some(&payload))
            .await?;
        Ok(())
    }

    /// `https://github.com/{o}/{r}/issues/{n}` (or the Enterprise host's).
    fn issue_url(&self, number: u64) -> Option<String> {
        Some(format!(
            "{}/{}/issues/{number}",
            web_base(&self.base),
            self.repo
        ))
    }
}

/// The web host of a GitHub API base: github.com for api.github.com,
/// `https://HOST` for GitHub Enterprise's `https://HOST/api/v3`, the base
/// itself otherwise (a local stand-in).
fn web_base(api_base: &str) -> String {
    let api = api_base.trim_end_matches('/');
    if api == "https://api.github.com" {
        "https://github.com".to_string()
    } else {
        api.trim_end_matches("/api/v3").to_string()
    }
}

#[derive(Deserialize)]
struct CommitPullEntry {
    number: u64,
    #[serde(default)]
    merged_at: Option<String>,
    #[serde(default)]
    merge_commit_sha: Option<String>,
    head: RefEntry,
    base: RefEntry,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_next_links() {
        let h = r#"<https://api.github.com/repositories/1/pulls/2/files?page=2>; rel="next", <https://api.github.com/repositories/1/pulls/2/files?page=5>; rel="last""#;
        assert_eq!(
            next_link(h).as_deref(),
            Some("https://api.github.com/repositories/1/pulls/2/files?page=2")
        );
        assert_eq!(next_link(r#"<https://x/y?page=1>; rel="prev""#), None);
    }
}
