//! A stateful stand-in for the GitHub REST API, for what cannot run here: the
//! end-to-end tests and the demo point `GITHUB_API_URL` of the Lambdas and tasks
//! at it. It serves the calls `live-ci-github`'s client makes (commit statuses,
//! pull-request files, open pull requests, one pull request, a collaborator's
//! permission, issue comments (listed, or one by id), a team membership, a branch's head, the token's user, the pull
//! requests that produced a commit, check runs: created, edited, listed per
//! commit, real issues: listed by state and label, opened, edited, closed)
//! and a GitHub App's token exchange, keeps
//! what they wrote, and answers anything else with 404 so an unexpected call
//! fails the caller loudly. Built on wiremock's server, which records every request for
//! exact assertions.
//!
//! A GitHub App is held to GitHub's rules ([`app`]): the JWT must verify
//! against the App's public key ([`FakeGitHub::trust_app`]; without one every
//! exchange is refused), tokens expire ([`FakeGitHub::set_app_token_lifetime`])
//! or are revoked, and a request with a token outside its repositories or
//! permissions is answered 403 as GitHub answers it. Private repositories
//! ([`FakeGitHub::add_git_repository`]) are served over git's smart HTTP
//! protocol by `git http-backend` to an installation token that may read them.

mod app;
mod git_http;

pub use app::FakeApp;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate, matchers::any};

/// A commit status as posted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostedStatus {
    /// From the URL, not the body.
    #[serde(default)]
    pub sha: String,
    /// `pending`, `success`, `failure` or `error`, as sent.
    pub state: String,
    /// The status's name on the commit (one line per context on GitHub).
    pub context: String,
    /// The one-line text beside it; empty when not sent.
    #[serde(default)]
    pub description: String,
    /// The link the status's "Details" opens, when sent.
    #[serde(default)]
    pub target_url: Option<String>,
}

/// An issue comment as it stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comment {
    /// The comment id the fake assigned (edits address it).
    pub id: u64,
    /// The issue or pull request number it is on.
    pub issue: u64,
    /// Its markdown now (after any edit).
    pub body: String,
    /// Who wrote it: the token's user ([`FakeGitHub::BOT_LOGIN`]) for every
    /// comment the API client posts.
    pub login: String,
}

/// A real issue as it stands (the drift job's): opened by `POST issues`,
/// edited and closed by `PATCH issues/{number}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeIssue {
    /// The issue number the fake assigned.
    pub number: u64,
    /// Its title now.
    pub title: String,
    /// Its markdown body now.
    pub body: String,
    /// `open` or `closed`.
    pub state: String,
    /// The last `state_reason` a `PATCH` sent (`completed`, `not_planned`), if any.
    pub state_reason: Option<String>,
    /// Label names, as sent at creation.
    pub labels: Vec<String>,
    /// Who opened it (the token's user or the App's bot).
    pub login: String,
}

/// A pull request the fake knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakePullRequest {
    /// The pull request number.
    pub number: u64,
    /// The commit its head points at.
    pub head_sha: String,
    /// The branch it targets (`base.ref`).
    pub base: String,
    /// The changed files `GET pulls/{n}/files` lists, repository-relative.
    pub files: Vec<String>,
    /// Open (listed by `GET pulls`) or closed.
    pub open: bool,
}

#[derive(Debug, Default)]
struct State {
    pulls: BTreeMap<u64, FakePullRequest>,
    /// login → `permission` (`admin`, `write`, `read`); others are no collaborators.
    permissions: BTreeMap<String, String>,
    statuses: Vec<PostedStatus>,
    comments: Vec<Comment>,
    next_comment: u64,
    /// branch → head commit; other branches are 404.
    branches: BTreeMap<String, String>,
    /// Installation tokens handed out, in order.
    app_tokens: Vec<AppToken>,
    /// merge commit → the merged pull request that produced it.
    merged: BTreeMap<String, MergedPull>,
    /// The App whose JWTs are accepted.
    app: Option<FakeApp>,
    /// How long an installation token lives, in seconds (GitHub: an hour).
    token_lifetime: u64,
    /// The status every token exchange is refused with, when set.
    refuse_exchange: Option<u16>,
    /// Why exchanges (or `GET /app`) were refused, in order.
    app_refusals: Vec<String>,
    /// `owner/name` → bare repository served over smart HTTP.
    git_repositories: BTreeMap<String, PathBuf>,
    /// Every smart-HTTP request: repository, user, whether it was let in.
    git_requests: Vec<GitRequest>,
    /// Check runs, as created and then edited.
    check_runs: Vec<CheckRun>,
    /// Repository requests refused for their token (401, 403), as
    /// `"<METHOD> <path>: <status>"`, in order.
    token_refusals: Vec<String>,
    /// The status every comment write (create, edit) is refused with, when
    /// set ([`FakeGitHub::refuse_comment_writes`]).
    refuse_comment_writes: Option<u16>,
    /// `(org, team slug)` → login → membership state (`active`, `pending`);
    /// anyone else is no member (404).
    team_members: BTreeMap<(String, String), BTreeMap<String, String>>,
    /// Real issues by number (numbered after every pull request, as GitHub
    /// numbers both in one sequence).
    issues: BTreeMap<u64, FakeIssue>,
}

impl State {
    /// Whether `issues/{number}/…` (or the comment `id`'s thread) is a real issue.
    fn on_issue(&self, segments: &[&str]) -> bool {
        let number = match segments {
            ["issues", "comments", id, ..] => id
                .parse::<u64>()
                .ok()
                .and_then(|id| self.comments.iter().find(|c| c.id == id))
                .map(|c| c.issue),
            ["issues", n, ..] => n.parse().ok(),
            _ => None,
        };
        number.is_some_and(|n| self.issues.contains_key(&n))
    }

    /// The next number GitHub would give an issue or pull request.
    fn next_number(&self) -> u64 {
        let pulls = self.pulls.keys().copied();
        let merged = self.merged.values().map(|m| m.number);
        let issues = self.issues.keys().copied();
        let commented = self.comments.iter().map(|c| c.issue);
        pulls
            .chain(merged)
            .chain(issues)
            .chain(commented)
            .max()
            .unwrap_or(0)
            + 1
    }

    /// Who a request's token acts as.
    fn author(&self, token: &str) -> String {
        if self.app_tokens.iter().any(|t| t.token == token) {
            format!("{}[bot]", FakeGitHub::APP_SLUG)
        } else {
            FakeGitHub::BOT_LOGIN.to_owned()
        }
    }
}

/// A check run as GitHub keeps it: created by `POST check-runs`, its fields
/// replaced by each `PATCH check-runs/{id}`.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckRun {
    /// The id the fake assigned (from 9000, in creation order).
    pub id: u64,
    /// Every request that wrote it (the create, then each edit), as sent.
    pub requests: Vec<Value>,
    /// The bearer token of each of those requests, in the same order (which
    /// installation token, and so which job, wrote it).
    pub tokens: Vec<String>,
    /// Its fields now: the create's with every edit's laid over.
    pub current: Value,
}

/// One request for a private repository over git's smart HTTP protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitRequest {
    /// `owner/name`.
    pub repository: String,
    /// The Basic user and password, if any were sent.
    pub credentials: Option<(String, String)>,
    /// Whether the credentials were accepted.
    pub authorized: bool,
}

/// One `POST /app/installations/{id}/access_tokens` and what it got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppToken {
    /// The installation in the request's path, as sent.
    pub installation_id: String,
    /// The App's JWT (the request's bearer).
    pub jwt: String,
    /// The request's body: `repositories` and `permissions`.
    pub request: Value,
    /// The installation token answered.
    pub token: String,
    /// Unix time it stops working.
    pub expires_at: u64,
    /// Revoked before its expiry ([`FakeGitHub::revoke_app_tokens`]).
    pub revoked: bool,
}

impl AppToken {
    /// The repositories (names) the token was asked for.
    fn repositories(&self) -> Vec<&str> {
        self.request["repositories"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    fn live(&self) -> bool {
        !self.revoked && app::now() < self.expires_at
    }

    /// Whether the token may do `permission` (write or read) on `repository`.
    fn allows(&self, repository: &str, permission: &str, write: bool) -> bool {
        let empty = serde_json::Map::new();
        self.live()
            && self.repositories().contains(&repository)
            && app::covers(
                self.request["permissions"].as_object().unwrap_or(&empty),
                permission,
                write,
            )
    }
}

/// A merged pull request, as `GET /commits/{sha}/pulls` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergedPull {
    /// The pull request number.
    pub number: u64,
    /// The commit the merge made on the base branch (the lookup's key).
    pub merge_commit_sha: String,
    /// The branch it was merged into.
    pub base_ref: String,
    /// The base branch's commit the pull request was opened against.
    pub base_sha: String,
    /// The pull request's branch.
    pub head_ref: String,
    /// The pull request's last commit.
    pub head_sha: String,
}

/// The running fake; dropping it stops the server.
#[derive(Debug)]
pub struct FakeGitHub {
    server: MockServer,
    state: Arc<Mutex<State>>,
}

impl FakeGitHub {
    /// The login `GET /user` answers: the token's user, the author of every
    /// comment the client posts.
    pub const BOT_LOGIN: &'static str = "live-ci-bot";
    /// The App's slug `GET /app` answers; comments posted with one of the
    /// fake's installation tokens are by `<slug>[bot]`, as on GitHub.
    pub const APP_SLUG: &'static str = "live-ci";

    /// Serves `repository` (`owner/name`) on a free local port.
    pub async fn start(repository: &str) -> Self {
        let state = Arc::new(Mutex::new(State {
            next_comment: 1,
            token_lifetime: 3600,
            ..State::default()
        }));
        let server = MockServer::start().await;
        Mock::given(any())
            .respond_with(Api {
                prefix: format!("/repos/{repository}/"),
                name: repository
                    .split_once('/')
                    .map_or(repository, |(_, n)| n)
                    .to_owned(),
                state: state.clone(),
            })
            .mount(&server)
            .await;
        FakeGitHub { server, state }
    }

    /// The API base URL (`GITHUB_API_URL`).
    pub fn url(&self) -> String {
        self.server.uri()
    }

    /// Makes `pr` known (replacing one with its number).
    pub fn add_pull_request(&self, pr: FakePullRequest) {
        lock(&self.state).pulls.insert(pr.number, pr);
    }

    /// Gives `login` a permission on the repository (`admin`, `write`, `read`).
    pub fn set_permission(&self, login: &str, permission: &str) {
        lock(&self.state)
            .permissions
            .insert(login.to_owned(), permission.to_owned());
    }

    /// Points `branch` at `sha` (what a merge on GitHub does to the trunk).
    pub fn set_branch(&self, branch: &str, sha: &str) {
        lock(&self.state)
            .branches
            .insert(branch.to_owned(), sha.to_owned());
    }

    /// Records `pr` as merged into its base by `pr.merge_commit_sha` (what
    /// `GET /commits/{sha}/pulls` then lists for that commit).
    pub fn add_merged_pull_request(&self, pr: MergedPull) {
        lock(&self.state)
            .merged
            .insert(pr.merge_commit_sha.clone(), pr);
    }

    /// A comment by someone else (`login`) on `issue`.
    pub fn add_comment(&self, issue: u64, login: &str, body: &str) -> u64 {
        let mut state = lock(&self.state);
        let id = state.next_comment;
        state.next_comment += 1;
        state.comments.push(Comment {
            id,
            issue,
            body: body.to_owned(),
            login: login.to_owned(),
        });
        id
    }

    /// Makes `login` a member of `org`'s team `slug` in `state` (`active`,
    /// or `pending`: invited, not yet a member), as
    /// `GET /orgs/{org}/teams/{slug}/memberships/{login}` answers.
    pub fn set_team_member(&self, org: &str, slug: &str, login: &str, state: &str) {
        lock(&self.state)
            .team_members
            .entry((org.to_owned(), slug.to_owned()))
            .or_default()
            .insert(login.to_owned(), state.to_owned());
    }

    /// Closes (merges) a pull request: it leaves the open list.
    pub fn close_pull_request(&self, number: u64) {
        if let Some(pr) = lock(&self.state).pulls.get_mut(&number) {
            pr.open = false;
        }
    }

    /// Every status posted, in order.
    pub fn statuses(&self) -> Vec<PostedStatus> {
        lock(&self.state).statuses.clone()
    }

    /// The latest status of each context on `sha`, by context.
    pub fn latest_statuses(&self, sha: &str) -> BTreeMap<String, PostedStatus> {
        let mut latest = BTreeMap::new();
        for status in lock(&self.state).statuses.iter().filter(|s| s.sha == sha) {
            latest.insert(status.context.clone(), status.clone());
        }
        latest
    }

    /// Every repository request refused for its installation token (expired,
    /// revoked, unknown: 401; outside its permissions: 403), in order.
    pub fn token_refusals(&self) -> Vec<String> {
        lock(&self.state).token_refusals.clone()
    }

    /// Every check run created, in order.
    pub fn check_runs(&self) -> Vec<CheckRun> {
        lock(&self.state).check_runs.clone()
    }

    /// The comments on issue or pull request `issue` as they stand, in posting order.
    pub fn comments(&self, issue: u64) -> Vec<Comment> {
        lock(&self.state)
            .comments
            .iter()
            .filter(|c| c.issue == issue)
            .cloned()
            .collect()
    }

    /// Every installation token a GitHub App asked for, in order.
    pub fn app_tokens(&self) -> Vec<AppToken> {
        lock(&self.state).app_tokens.clone()
    }

    /// Accepts JWTs of `app` only (none are accepted before).
    pub fn trust_app(&self, app: FakeApp) {
        lock(&self.state).app = Some(app);
    }

    /// Installation tokens handed out from now on live `seconds` (their
    /// `expires_at`), after which GitHub answers 401 to them.
    pub fn set_app_token_lifetime(&self, seconds: u64) {
        lock(&self.state).token_lifetime = seconds;
    }

    /// Refuses every token exchange with `status` (401, 403…); `None` stops.
    pub fn refuse_app_tokens(&self, status: Option<u16>) {
        lock(&self.state).refuse_exchange = status;
    }

    /// Refuses every comment create and edit with `status` (403, 500…) as
    /// GitHub would refuse it (nothing is written); `None` stops.
    pub fn refuse_comment_writes(&self, status: Option<u16>) {
        lock(&self.state).refuse_comment_writes = status;
    }

    /// Revokes every installation token handed out so far (401 from now on).
    pub fn revoke_app_tokens(&self) {
        for token in &mut lock(&self.state).app_tokens {
            token.revoked = true;
        }
    }

    /// Why token exchanges were refused, in order.
    pub fn app_refusals(&self) -> Vec<String> {
        lock(&self.state).app_refusals.clone()
    }

    /// Serves the bare repository `bare` as the private `owner/name` at
    /// `<url>/owner/name.git` (git's smart HTTP protocol): only to an
    /// installation token asked for with it and `contents: read`.
    pub fn add_git_repository(&self, full_name: &str, bare: PathBuf) {
        lock(&self.state)
            .git_repositories
            .insert(full_name.to_owned(), bare);
    }

    /// Every smart-HTTP request for a private repository, in order.
    pub fn git_requests(&self) -> Vec<GitRequest> {
        lock(&self.state).git_requests.clone()
    }

    /// Opens an issue as `login` (someone else's, or the bot's left from
    /// an earlier check); returns its number.
    pub fn add_issue(&self, login: &str, title: &str, body: &str, labels: &[&str]) -> u64 {
        let mut state = lock(&self.state);
        let number = state.next_number();
        state.issues.insert(
            number,
            FakeIssue {
                number,
                title: title.to_owned(),
                body: body.to_owned(),
                state: "open".into(),
                state_reason: None,
                labels: labels.iter().map(|l| (*l).to_owned()).collect(),
                login: login.to_owned(),
            },
        );
        number
    }

    /// Every real issue, by number.
    pub fn issues(&self) -> Vec<FakeIssue> {
        lock(&self.state).issues.values().cloned().collect()
    }

    /// Every request received, for exact assertions.
    pub async fn requests(&self) -> Vec<Request> {
        self.server.received_requests().await.unwrap_or_default()
    }
}

/// A poisoned lock only means another responder panicked; the data is fine.
fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

struct Api {
    prefix: String,
    /// The live repository's name (what its tokens' `repositories` name).
    name: String,
    state: Arc<Mutex<State>>,
}

fn bearer(request: &Request) -> &str {
    request
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default()
}

/// GitHub's answer to a token it does not (or no longer) accept.
fn bad_credentials() -> ResponseTemplate {
    ResponseTemplate::new(401).set_body_json(json!({ "message": "Bad credentials" }))
}

fn not_found(what: &str) -> ResponseTemplate {
    ResponseTemplate::new(404).set_body_json(json!({ "message": format!("Not Found: {what}") }))
}

impl Api {
    /// `scheme://host:port` of the request, for URLs in answers.
    fn base_url(&self, request: &Request) -> String {
        let url = &request.url;
        format!(
            "{}://{}{}",
            url.scheme(),
            url.host_str().unwrap_or("127.0.0.1"),
            url.port().map(|p| format!(":{p}")).unwrap_or_default()
        )
    }

    /// A GitHub App's token exchange, as GitHub checks it: the JWT verifies
    /// against the trusted App's key and names it, the installation is the
    /// App's, and every repository asked for is one the installation holds
    /// (the live one, or a served private one of the same owner).
    fn access_token(&self, installation_id: &str, request: &Request) -> ResponseTemplate {
        let jwt = bearer(request).to_owned();
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let mut state = lock(&self.state);
        if let Some(why) = app::refuse_jwt(state.app.as_ref(), &jwt) {
            state.app_refusals.push(why.clone());
            return ResponseTemplate::new(401).set_body_json(json!({ "message": why }));
        }
        if let Some(status) = state.refuse_exchange {
            state
                .app_refusals
                .push(format!("refused with {status} (refuse_app_tokens)"));
            return ResponseTemplate::new(status)
                .set_body_json(json!({ "message": "Bad credentials" }));
        }
        if state
            .app
            .as_ref()
            .is_none_or(|a| a.installation_id.to_string() != installation_id)
        {
            state
                .app_refusals
                .push(format!("no installation {installation_id} of the app"));
            return not_found(request.url.path());
        }
        let owner = self
            .prefix
            .trim_start_matches("/repos/")
            .split('/')
            .next()
            .unwrap_or_default()
            .to_owned();
        let held = |name: &str| {
            name == self.name
                || state
                    .git_repositories
                    .contains_key(&format!("{owner}/{name}"))
        };
        let names: Vec<&str> = body["repositories"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(unknown) = names.iter().find(|n| !held(n)) {
            let why = format!(
                "There is at least one repository that does not exist or is not accessible to the parent installation: {unknown}"
            );
            state.app_refusals.push(why.clone());
            return ResponseTemplate::new(422).set_body_json(json!({ "message": why }));
        }
        let token = format!("ghs_fake-installation-token-{}", state.app_tokens.len() + 1);
        let expires = app::now() + state.token_lifetime;
        state.app_tokens.push(AppToken {
            installation_id: installation_id.to_owned(),
            jwt,
            request: body.clone(),
            token: token.clone(),
            expires_at: expires,
            revoked: false,
        });
        ResponseTemplate::new(201).set_body_json(json!({
            "token": token,
            "expires_at": rfc3339(expires),
            "permissions": body["permissions"],
            "repository_selection": "selected",
        }))
    }

    /// A team membership (an organization permission: an installation token
    /// needs `members: read`, else 403 as on GitHub).
    fn membership(
        &self,
        org: &str,
        slug: &str,
        login: &str,
        request: &Request,
    ) -> ResponseTemplate {
        let mut state = lock(&self.state);
        let token = bearer(request);
        if token.starts_with("ghs_") {
            let empty = serde_json::Map::new();
            let allowed = state.app_tokens.iter().any(|t| {
                t.token == token
                    && t.live()
                    && app::covers(
                        t.request["permissions"].as_object().unwrap_or(&empty),
                        "members",
                        false,
                    )
            });
            if !allowed {
                let path = request.url.path().to_owned();
                state.token_refusals.push(format!("GET {path}: 403"));
                return ResponseTemplate::new(403)
                    .set_body_json(json!({ "message": "Resource not accessible by integration" }));
            }
        }
        match state
            .team_members
            .get(&(org.to_owned(), slug.to_owned()))
            .and_then(|m| m.get(login))
        {
            Some(s) => {
                ResponseTemplate::new(200).set_body_json(json!({ "state": s, "role": "member" }))
            }
            None => not_found(request.url.path()),
        }
    }

    /// A request for `owner/name.git/…` of a served private repository.
    fn git(&self, path: &str, request: &Request) -> Option<ResponseTemplate> {
        let rest = path.strip_prefix('/')?;
        let mut parts = rest.splitn(3, '/');
        let (owner, repo, rest) = (parts.next()?, parts.next()?, parts.next()?);
        let name = repo.strip_suffix(".git")?;
        let full = format!("{owner}/{name}");
        let mut state = lock(&self.state);
        let bare = state.git_repositories.get(&full)?.clone();
        let credentials = git_http::basic_credentials(request);
        let authorized = credentials.as_ref().is_some_and(|(_, password)| {
            state
                .app_tokens
                .iter()
                .any(|t| t.token == *password && t.allows(name, "contents", false))
        });
        state.git_requests.push(GitRequest {
            repository: full,
            credentials: credentials.clone(),
            authorized,
        });
        drop(state);
        if !authorized {
            return Some(git_http::unauthorized());
        }
        let user = credentials.map(|(u, _)| u).unwrap_or_default();
        Some(git_http::serve(&bare, rest, &user, request))
    }

    /// With an installation token: GitHub's 401 for one expired, revoked or
    /// unknown, and its 403 for a request outside what the token covers.
    fn refuse_token(
        &self,
        state: &State,
        request: &Request,
        segments: &[&str],
    ) -> Option<(u16, ResponseTemplate)> {
        let token = bearer(request);
        if !token.starts_with("ghs_") {
            return None;
        }
        let Some(issued) = state.app_tokens.iter().find(|t| t.token == token) else {
            return Some((401, bad_credentials()));
        };
        if !issued.live() {
            return Some((401, bad_credentials()));
        }
        let (permission, write) =
            app::needs(request.method.as_str(), segments, state.on_issue(segments))?;
        if issued.allows(&self.name, permission, write) {
            None
        } else {
            Some((
                403,
                ResponseTemplate::new(403).set_body_json(json!({
                    "message": "Resource not accessible by integration",
                    "needs": format!("{permission}: {}", if write { "write" } else { "read" }),
                })),
            ))
        }
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ` of a Unix time (days to a civil date: Howard
/// Hinnant's algorithm), the form of GitHub's `expires_at`.
/// GitHub's limit on a comment body, in characters.
pub const COMMENT_BODY_LIMIT: usize = 65_536;

/// GitHub's answer to a comment body over [`COMMENT_BODY_LIMIT`]: 422, the
/// comment is neither created nor changed.
fn too_long(method: &str, segments: &[&str], body: &Value) -> Option<ResponseTemplate> {
    let comment_write = matches!(
        (method, segments),
        ("POST", ["issues", _, "comments"]) | ("PATCH", ["issues", "comments", _])
    );
    let chars = body["body"].as_str().map_or(0, |b| b.chars().count());
    (comment_write && chars > COMMENT_BODY_LIMIT).then(|| {
        ResponseTemplate::new(422).set_body_json(json!({
            "message": "Validation Failed",
            "errors": [{
                "resource": "IssueComment", "code": "custom", "field": "body",
                "message": "body is too long (maximum is 65536 characters)",
            }],
        }))
    })
}

/// The Checks API's limit on `output.summary` and `output.text`.
pub const CHECK_RUN_TEXT_LIMIT: usize = 65_535;

/// GitHub's 422 for a check run it would refuse: on create, no `name` or
/// `head_sha`; an output `summary` or `text` over [`CHECK_RUN_TEXT_LIMIT`];
/// a `conclusion` with a status other than `completed`.
fn check_run_refusal(body: &Value, create: bool) -> Option<ResponseTemplate> {
    let refuse =
        |why: String| Some(ResponseTemplate::new(422).set_body_json(json!({ "message": why })));
    if create && (body["name"].as_str().is_none() || body["head_sha"].as_str().is_none()) {
        return refuse("name and head_sha are required".into());
    }
    for field in ["summary", "text"] {
        let n = body["output"][field]
            .as_str()
            .map_or(0, |t| t.chars().count());
        if n > CHECK_RUN_TEXT_LIMIT {
            return refuse(format!(
                "output.{field} is too long (maximum is {CHECK_RUN_TEXT_LIMIT} characters)"
            ));
        }
    }
    if body.get("conclusion").is_some() && body["status"].as_str() != Some("completed") {
        return refuse("a conclusion needs status completed".into());
    }
    None
}

fn rfc3339(unix: u64) -> String {
    let (days, secs) = (unix / 86_400, unix % 86_400);
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

impl Respond for Api {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let path = request.url.path();
        if request.method.as_str() == "GET" && path == "/user" {
            return ResponseTemplate::new(200).set_body_json(json!({
                "login": FakeGitHub::BOT_LOGIN, "id": 1, "type": "User",
            }));
        }
        if request.method.as_str() == "GET" && path == "/app" {
            let mut state = lock(&self.state);
            if let Some(why) = app::refuse_jwt(state.app.as_ref(), bearer(request)) {
                state.app_refusals.push(why.clone());
                return ResponseTemplate::new(401).set_body_json(json!({ "message": why }));
            }
            let id = state.app.as_ref().map_or(0, |a| a.app_id);
            return ResponseTemplate::new(200)
                .set_body_json(json!({ "slug": FakeGitHub::APP_SLUG, "id": id }));
        }
        if let ("POST", ["", "app", "installations", id, "access_tokens"]) = (
            request.method.as_str(),
            path.split('/').collect::<Vec<_>>().as_slice(),
        ) {
            return self.access_token(id, request);
        }
        if let ("GET", ["", "orgs", org, "teams", slug, "memberships", login]) = (
            request.method.as_str(),
            path.split('/').collect::<Vec<_>>().as_slice(),
        ) {
            return self.membership(org, slug, login, request);
        }
        let Some(rest) = path.strip_prefix(&self.prefix) else {
            return self.git(path, request).unwrap_or_else(|| not_found(path));
        };
        let segments: Vec<&str> = rest.split('/').collect();
        let method = request.method.as_str();
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let mut state = lock(&self.state);
        if let Some((status, refused)) = self.refuse_token(&state, request, &segments) {
            state
                .token_refusals
                .push(format!("{method} {path}: {status}"));
            return refused;
        }
        if let Some(refused) = too_long(method, &segments, &body) {
            return refused;
        }
        if let (
            Some(status),
            ("POST", ["issues", _, "comments"]) | ("PATCH", ["issues", "comments", _]),
        ) = (state.refuse_comment_writes, (method, segments.as_slice()))
        {
            return ResponseTemplate::new(status).set_body_json(
                json!({ "message": format!("refused with {status} (refuse_comment_writes)") }),
            );
        }
        match (method, segments.as_slice()) {
            ("POST", ["statuses", sha]) => {
                // GitHub refuses a status without state or context: so does the fake.
                let mut status: PostedStatus = match serde_json::from_value(body) {
                    Ok(s) => s,
                    Err(e) => {
                        return ResponseTemplate::new(422)
                            .set_body_json(json!({ "message": e.to_string() }));
                    }
                };
                status.sha = (*sha).to_owned();
                state.statuses.push(status.clone());
                ResponseTemplate::new(201).set_body_json(json!({
                    "state": status.state, "context": status.context,
                    "description": status.description, "target_url": status.target_url,
                }))
            }
            ("GET", ["pulls", number, "files"]) => {
                match number.parse().ok().and_then(|n: u64| state.pulls.get(&n)) {
                    Some(pr) => ResponseTemplate::new(200).set_body_json(
                        pr.files
                            .iter()
                            .map(|f| json!({ "filename": f, "status": "modified" }))
                            .collect::<Vec<_>>(),
                    ),
                    None => not_found(path),
                }
            }
            ("GET", ["pulls", number]) => {
                let n: u64 = number.parse().unwrap_or(0);
                let merge = state.merged.values().find(|m| m.number == n);
                match state.pulls.get(&n) {
                    Some(pr) => ResponseTemplate::new(200).set_body_json(json!({
                        "number": pr.number,
                        "state": if pr.open { "open" } else { "closed" },
                        "merged": merge.is_some(),
                        "merge_commit_sha": merge.map(|m| m.merge_commit_sha.clone()),
                        "head": { "sha": pr.head_sha, "ref": format!("pr-{}", pr.number) },
                        "base": { "sha": "", "ref": pr.base },
                    })),
                    // A merged pull request known only by its merge.
                    None => match merge {
                        Some(m) => ResponseTemplate::new(200).set_body_json(json!({
                            "number": m.number,
                            "state": "closed",
                            "merged": true,
                            "merge_commit_sha": m.merge_commit_sha,
                            "head": { "sha": m.head_sha, "ref": m.head_ref },
                            "base": { "sha": m.base_sha, "ref": m.base_ref },
                        })),
                        None => not_found(path),
                    },
                }
            }
            ("GET", ["issues", "comments", id]) => {
                let id: u64 = id.parse().unwrap_or(0);
                match state.comments.iter().find(|c| c.id == id) {
                    Some(c) => ResponseTemplate::new(200).set_body_json(json!({
                        "id": c.id,
                        "body": c.body,
                        "user": { "login": c.login },
                        "issue_url": format!("{}{}issues/{}", self.base_url(request), self.prefix, c.issue),
                    })),
                    None => not_found(path),
                }
            }
            ("GET", ["branches", name @ ..]) if !name.is_empty() => {
                match state.branches.get(&name.join("/")) {
                    Some(sha) => ResponseTemplate::new(200).set_body_json(json!({
                        "name": name.join("/"),
                        "commit": { "sha": sha },
                        "protected": false,
                    })),
                    None => ResponseTemplate::new(404)
                        .set_body_json(json!({ "message": "Branch not found" })),
                }
            }
            // Pull requests that produced a commit: a merged one for its merge
            // commit; none for a commit pushed straight to the branch.
            ("GET", ["commits", sha, "pulls"]) => {
                let pulls: Vec<Value> = state
                    .merged
                    .get(*sha)
                    .map(|pr| {
                        json!({
                            "number": pr.number,
                            "state": "closed",
                            "merged_at": "2026-11-26T05:00:00Z",
                            "merge_commit_sha": pr.merge_commit_sha,
                            "head": { "sha": pr.head_sha, "ref": pr.head_ref },
                            "base": { "sha": pr.base_sha, "ref": pr.base_ref },
                        })
                    })
                    .into_iter()
                    .collect();
                ResponseTemplate::new(200).set_body_json(pulls)
            }
            ("GET", ["collaborators", login, "permission"]) => {
                // GitHub answers 404 for someone who is no collaborator.
                match state.permissions.get(*login) {
                    Some(p) => ResponseTemplate::new(200).set_body_json(json!({
                        "permission": p, "role_name": p, "user": { "login": login },
                    })),
                    None => ResponseTemplate::new(404)
                        .set_body_json(json!({ "message": format!("{login} is not a user") })),
                }
            }
            ("GET", ["pulls"]) => {
                let base = request
                    .url
                    .query_pairs()
                    .find(|(k, _)| k == "base")
                    .map(|(_, v)| v.into_owned());
                let open: Vec<Value> = state
                    .pulls
                    .values()
                    .filter(|pr| pr.open && base.as_ref().is_none_or(|b| *b == pr.base))
                    .map(|pr| {
                        json!({
                            "number": pr.number,
                            "head": { "sha": pr.head_sha, "ref": format!("pr-{}", pr.number) },
                            "base": { "sha": "", "ref": pr.base },
                        })
                    })
                    .collect();
                ResponseTemplate::new(200).set_body_json(open)
            }
            ("GET", ["issues", number, "comments"]) => {
                let issue: u64 = number.parse().unwrap_or(0);
                let comments: Vec<Value> = state
                    .comments
                    .iter()
                    .filter(|c| c.issue == issue)
                    .map(|c| json!({ "id": c.id, "body": c.body, "user": { "login": c.login } }))
                    .collect();
                ResponseTemplate::new(200).set_body_json(comments)
            }
            ("POST", ["issues", number, "comments"]) => {
                let author = state.author(bearer(request));
                let id = state.next_comment;
                state.next_comment += 1;
                let comment = Comment {
                    id,
                    issue: number.parse().unwrap_or(0),
                    body: body["body"].as_str().unwrap_or_default().to_owned(),
                    login: author,
                };
                state.comments.push(comment);
                ResponseTemplate::new(201).set_body_json(json!({ "id": id }))
            }
            ("POST", ["check-runs"]) => {
                if let Some(refused) = check_run_refusal(&body, true) {
                    return refused;
                }
                let id = 9_000 + state.check_runs.len() as u64;
                state.check_runs.push(CheckRun {
                    id,
                    requests: vec![body.clone()],
                    tokens: vec![bearer(request).to_owned()],
                    current: body,
                });
                ResponseTemplate::new(201).set_body_json(json!({ "id": id }))
            }
            // A commit's check runs (GitHub: `check_name` matches the name
            // exactly; `filter=latest`, the default, keeps the newest per name;
            // each names the App that made it).
            ("GET", ["commits", git_ref, "check-runs"]) => {
                let query = |key: &str| {
                    request
                        .url
                        .query_pairs()
                        .find(|(k, _)| k == key)
                        .map(|(_, v)| v.into_owned())
                };
                let name = query("check_name");
                let all = query("filter").as_deref() == Some("all");
                let app_id = state.app.as_ref().map(|a| a.app_id);
                let mut runs: Vec<&CheckRun> = state
                    .check_runs
                    .iter()
                    .filter(|r| r.current["head_sha"].as_str() == Some(*git_ref))
                    .filter(|r| {
                        name.as_ref()
                            .is_none_or(|n| r.current["name"] == n.as_str())
                    })
                    .collect();
                if !all {
                    let mut newest: BTreeMap<String, &CheckRun> = BTreeMap::new();
                    for run in runs {
                        let n = run.current["name"].as_str().unwrap_or_default().to_owned();
                        newest.insert(n, run);
                    }
                    runs = newest.into_values().collect();
                }
                runs.sort_by_key(|r| std::cmp::Reverse(r.id));
                let listed: Vec<Value> = runs
                    .iter()
                    .map(|r| {
                        let mut v = r.current.clone();
                        v["id"] = json!(r.id);
                        v["app"] = json!({ "id": app_id, "slug": FakeGitHub::APP_SLUG });
                        v
                    })
                    .collect();
                ResponseTemplate::new(200)
                    .set_body_json(json!({ "total_count": listed.len(), "check_runs": listed }))
            }
            ("PATCH", ["check-runs", id]) => {
                if let Some(refused) = check_run_refusal(&body, false) {
                    return refused;
                }
                let id: u64 = id.parse().unwrap_or(0);
                match state.check_runs.iter_mut().find(|c| c.id == id) {
                    Some(run) => {
                        if let (Some(now), Some(edit)) =
                            (run.current.as_object_mut(), body.as_object())
                        {
                            for (k, v) in edit {
                                now.insert(k.clone(), v.clone());
                            }
                        }
                        run.requests.push(body);
                        run.tokens.push(bearer(request).to_owned());
                        ResponseTemplate::new(200).set_body_json(json!({ "id": id }))
                    }
                    None => not_found(path),
                }
            }
            ("PATCH", ["issues", "comments", id]) => {
                let id: u64 = id.parse().unwrap_or(0);
                match state.comments.iter_mut().find(|c| c.id == id) {
                    Some(comment) => {
                        comment.body = body["body"].as_str().unwrap_or_default().to_owned();
                        ResponseTemplate::new(200).set_body_json(json!({ "id": id }))
                    }
                    None => not_found(path),
                }
            }
            // Issues (and pull requests: GitHub lists both) by state and
            // labels (every one named must be on it).
            ("GET", ["issues"]) => {
                let query = |key: &str| {
                    request
                        .url
                        .query_pairs()
                        .find(|(k, _)| k == key)
                        .map(|(_, v)| v.into_owned())
                };
                let wanted = query("state").unwrap_or_else(|| "open".into());
                let labels: Vec<String> = query("labels")
                    .map(|l| l.split(',').map(str::to_owned).collect())
                    .unwrap_or_default();
                let mut listed: Vec<Value> = state
                    .issues
                    .values()
                    .filter(|i| wanted == "all" || i.state == wanted)
                    .filter(|i| labels.iter().all(|l| i.labels.contains(l)))
                    .map(|i| {
                        json!({
                            "number": i.number, "title": i.title, "body": i.body,
                            "state": i.state, "user": { "login": i.login },
                            "labels": i.labels.iter().map(|l| json!({ "name": l })).collect::<Vec<_>>(),
                        })
                    })
                    .collect();
                if labels.is_empty() {
                    listed.extend(
                        state
                            .pulls
                            .values()
                            .filter(|p| wanted == "all" || p.open == (wanted == "open"))
                            .map(|p| {
                                json!({
                                    "number": p.number, "title": "", "body": "",
                                    "state": if p.open { "open" } else { "closed" },
                                    "user": { "login": "someone" }, "labels": [],
                                    "pull_request": { "url": "" },
                                })
                            }),
                    );
                }
                ResponseTemplate::new(200).set_body_json(listed)
            }
            ("POST", ["issues"]) => {
                let Some(title) = body["title"].as_str().filter(|t| !t.is_empty()) else {
                    return ResponseTemplate::new(422).set_body_json(
                        json!({ "message": "Validation Failed: title is missing" }),
                    );
                };
                let number = state.next_number();
                let issue = FakeIssue {
                    number,
                    title: title.to_owned(),
                    body: body["body"].as_str().unwrap_or_default().to_owned(),
                    state: "open".into(),
                    state_reason: None,
                    labels: body["labels"]
                        .as_array()
                        .map(|l| {
                            l.iter()
                                .filter_map(Value::as_str)
                                .map(str::to_owned)
                                .collect()
                        })
                        .unwrap_or_default(),
                    login: state.author(bearer(request)),
                };
                state.issues.insert(number, issue);
                ResponseTemplate::new(201).set_body_json(json!({
                    "number": number,
                    "html_url": format!("{}/{}issues/{number}", self.base_url(request), self.prefix.trim_start_matches("/repos/")),
                }))
            }
            ("PATCH", ["issues", number]) => {
                let number: u64 = number.parse().unwrap_or(0);
                let Some(issue) = state.issues.get_mut(&number) else {
                    return not_found(path);
                };
                if let Some(t) = body["title"].as_str() {
                    issue.title = t.to_owned();
                }
                if let Some(b) = body["body"].as_str() {
                    issue.body = b.to_owned();
                }
                match body["state"].as_str() {
                    Some(s @ ("open" | "closed")) => issue.state = s.to_owned(),
                    Some(other) => {
                        return ResponseTemplate::new(422).set_body_json(
                            json!({ "message": format!("Validation Failed: state {other:?}") }),
                        );
                    }
                    None => {}
                }
                if let Some(r) = body["state_reason"].as_str() {
                    issue.state_reason = Some(r.to_owned());
                }
                ResponseTemplate::new(200)
                    .set_body_json(json!({ "number": number, "state": issue.state }))
            }
            _ => not_found(path),
        }
    }
}
