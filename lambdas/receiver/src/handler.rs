//! The webhook handler: size, signature, de-duplication, routing, then the
//! pull-request plan (trusted pull requests, or a maintainer's `/live-ci plan`),
//! the "not planned" status of the others, or the merge deploy.
//!
//! Commit statuses go through [`Statuses`] with the switches read from the
//! parameter store together with the merge lock. Which may fail a delivery:
//! - the `Merge Lock` status (and its "not applicable" success) is the
//!   protection itself — the check branch protection requires, which keeps a
//!   pull request unmergeable while a deploy runs — so it is posted with
//!   [`status::required`], before any task starts: GitHub refusing it fails
//!   the webhook answer (500; GitHub marks the delivery failed, and its
//!   redelivery, or the lock's next refresh, posts it) and launches nothing;
//! - the pending `live-ci: plan` and `live-ci: create-deploy-stack` statuses
//!   only show what the task does (the task posts its own results), so they are
//!   advisory: a refusal is a logged warning, listed under `warnings` in the
//!   answer, and the task is launched all the same.

use live_ci_core::merge_lock::{self, MergeLock};
use live_ci_core::port::GitHost;
use live_ci_core::port::ParamStore;
use live_ci_core::port::PullRequestAuthority;
use live_ci_core::port::TaskLauncher;
use live_ci_core::port::{ErrorKind, PortError, PortResultExt};
use live_ci_core::status::{
    self, Check, CommitStatus, CommitStatusConfig, StatusState, Statuses, context, target,
};
use live_ci_core::task::{
    MergedPullRequest, PlannedPullRequest, StartedTask, TaskKind, TaskSpec,
    create_deploy_stack_spec, pr_plan_spec,
};
use live_ci_core::webhook::{PLAN_COMMAND, Route, WebhookError, route, verify_signature};
use serde_json::{Value, json};

use crate::config::HandlerConfig;
use crate::dedupe::{CLAIM_BUDGET, Deliveries, SeenDeliveries};
use crate::http::{WebhookRequest, WebhookResponse};
use crate::ports::ReceiverPorts;
use crate::secret::SecretCache;
use live_ci_core::port::DeliveryClaim;
use live_ci_core::port::{FunctionInvoker, github_vote_payload};

/// Failures of the services behind the handler; each becomes a 500 so GitHub
/// marks the delivery failed and it can be redelivered.
#[derive(Debug, thiserror::Error)]
pub enum ReceiverError {
    /// A port (GitHub, SSM, ECS, the metadb, Lambda) failed; its kind says
    /// whether a retry can help.
    #[error(transparent)]
    Port(#[from] PortError),
    /// A parameter's value that does not parse (the merge lock, the status
    /// configuration).
    #[error("parameter store: {0}")]
    Params(String),
}

impl ReceiverError {
    /// Whether a redelivery can succeed: a port's own kind; a bad parameter
    /// value is permanent.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ReceiverError::Port(e) => e.kind(),
            ReceiverError::Params(_) => ErrorKind::Permanent,
        }
    }
}

/// The name CloudWatch sees when a cold start fails: [`ErrorKind::name`].
impl live_ci_boot::Classified for ReceiverError {
    fn kind(&self) -> ErrorKind {
        ReceiverError::kind(self)
    }
}

/// The handler with its ports ([`ReceiverPorts`]); built once per cold start.
#[derive(Debug)]
pub struct Receiver<Ports> {
    config: HandlerConfig,
    ports: Ports,
    secret: SecretCache,
    seen: SeenDeliveries,
}

impl<Ports: ReceiverPorts> Receiver<Ports> {
    /// Reads the webhook secret at the cold start; warm invocations read it
    /// again only after `secret_ttl` or a signature failure. An unusable
    /// secret does not fail the cold start: every delivery then gets a 503
    /// naming the parameter, and setting it in SSM heals the function.
    pub async fn new(config: HandlerConfig, ports: Ports) -> Result<Self, ReceiverError> {
        let secret = SecretCache::new(
            &config.webhook_secret_param,
            config.secret_ttl,
            config.secret_retry,
        );
        // Only to warm the cache and log a problem at once; each delivery checks again.
        let _ = secret.current(ports.params()).await;
        Ok(Receiver {
            config,
            ports,
            secret,
            seen: SeenDeliveries::new(4096),
        })
    }

    /// Verifies the delivery's signature: 503 when the secret is unusable (before
    /// looking at the signature, so a forged body learns nothing), 401 when it does
    /// not match even after reading the secret again (it may have been rotated).
    async fn authenticate(&self, req: &WebhookRequest) -> Result<(), WebhookResponse> {
        let unusable = |e: crate::secret::Unusable| reply(503, json!({"error": e.0}));
        let secret = self
            .secret
            .current(self.ports.params())
            .await
            .map_err(unusable)?;
        let header = req.header("x-hub-signature-256");
        let mut result = verify_signature(&secret, &req.body, header);
        if result == Err(WebhookError::BadSignature)
            && let Some(fresh) = self.secret.refresh_after_failure(self.ports.params()).await
        {
            let fresh = fresh.map_err(unusable)?;
            if fresh != secret {
                result = verify_signature(&fresh, &req.body, header);
            }
        }
        result.map_err(|e| {
            tracing::warn!(error = %e, "refused an unsigned or wrongly signed delivery");
            reply(401, json!({"error": e.to_string()}))
        })
    }

    /// Handles one delivery. Never panics and never returns an error: every
    /// outcome is an HTTP status with a JSON body saying why.
    pub async fn handle(&self, req: &WebhookRequest) -> WebhookResponse {
        if !req.method.eq_ignore_ascii_case("POST") {
            return reply(
                405,
                json!({"error": format!("method {:?} not allowed; GitHub POSTs", req.method)}),
            );
        }
        if req.body.len() > self.config.max_body_bytes {
            return reply(
                400,
                json!({"error": format!("body of {} bytes exceeds the {}-byte limit", req.body.len(), self.config.max_body_bytes)}),
            );
        }
        if let Err(refused) = self.authenticate(req).await {
            return refused;
        }
        let Some(event) = req.header("x-github-event") else {
            return reply(400, json!({"error": "missing X-GitHub-Event header"}));
        };
        let Some(delivery) = req.header("x-github-delivery").filter(|d| !d.is_empty()) else {
            return reply(400, json!({"error": "missing X-GitHub-Delivery header"}));
        };
        if self.seen.contains(delivery) {
            return duplicate(delivery);
        }
        let claimed = match self.claim(delivery).await {
            Some(DeliveryClaim::Duplicate) => return duplicate(delivery),
            Some(DeliveryClaim::Claimed) => true,
            None => false,
        };
        let response = self.act(req, event, delivery).await;
        if claimed {
            self.finish(delivery, response.status == 200).await;
        }
        response
    }

    /// The shared log's answer for `delivery`; `None` when there is no log,
    /// or it failed or took longer than [`CLAIM_BUDGET`]: the delivery is then
    /// acted on (GitHub does not redeliver on its own, so refusing it would
    /// lose it; a task start is still guarded by its `clientToken`).
    async fn claim(&self, delivery: &str) -> Option<DeliveryClaim> {
        let log = self.ports.deliveries()?;
        match tokio::time::timeout(CLAIM_BUDGET, log.claim(delivery)).await {
            Ok(Ok(claim)) => Some(claim),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, delivery, "claiming the delivery; acting on it unclaimed");
                None
            }
            Err(_) => {
                tracing::warn!(delivery, budget = ?CLAIM_BUDGET, "claiming the delivery timed out; acting on it unclaimed");
                None
            }
        }
    }

    /// Marks a claimed delivery handled, or releases it after a failure so
    /// GitHub's redelivery is acted on. A failure here is only logged: the
    /// answer is already decided (a claim left behind goes stale).
    async fn finish(&self, delivery: &str, handled: bool) {
        let Some(log) = self.ports.deliveries() else {
            return;
        };
        match tokio::time::timeout(CLAIM_BUDGET, log.finish(delivery, handled)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::warn!(error = %e, delivery, handled, "finishing the delivery's claim")
            }
            Err(_) => tracing::warn!(
                delivery,
                handled,
                "finishing the delivery's claim timed out"
            ),
        }
    }

    /// The delivery, authenticated and not a duplicate: routed and acted on.
    async fn act(&self, req: &WebhookRequest, event: &str, delivery: &str) -> WebhookResponse {
        let routed = match self.route_delivery(req, event, delivery).await {
            Ok(routed) => routed,
            Err(response) => return response,
        };
        match self.dispatch(routed, delivery).await {
            Ok(body) => {
                self.seen.insert(delivery);
                reply(200, body)
            }
            Err(e) => {
                tracing::error!(error = %e, delivery, "delivery failed");
                reply(500, json!({"error": e.to_string()}))
            }
        }
    }

    /// The delivery's route, or the response that ends it (a malformed
    /// payload, or the bot's login unreadable).
    async fn route_delivery(
        &self,
        req: &WebhookRequest,
        event: &str,
        delivery: &str,
    ) -> Result<Route, WebhookResponse> {
        // Only comments can be commands, and only others' comments: who the
        // bot is matters for them alone (one look-up per container).
        let bot_login = if event == "issue_comment" {
            match self.ports.github().bot_login().await.port("github") {
                Ok(login) => Some(login),
                Err(e) => {
                    tracing::error!(error = %e, delivery, "reading the bot's own login");
                    return Err(reply(500, json!({"error": e.to_string()})));
                }
            }
        } else {
            None
        };
        route(
            event,
            &req.body,
            &self.config.trunk_branch,
            Some(&self.config.repository),
            &self.config.trust,
            bot_login.as_deref(),
        )
        .map_err(|e| reply(400, json!({"error": e.to_string()})))
    }

    /// Acts on a route; the body of a 200 answer, or the error of a 500.
    async fn dispatch(&self, routed: Route, delivery: &str) -> Result<Value, ReceiverError> {
        match routed {
            Route::Ping => Ok(json!({"pong": true})),
            Route::Ignore(reason) => Ok(json!({"ignored": reason})),
            Route::Vote {
                number,
                comment_id,
                voter,
                unit,
                ..
            } => self.hand_vote(number, comment_id, &voter, &unit).await,
            Route::VoteRefused {
                number,
                voter,
                reply,
            } => Ok(json!({"ignored": format!(
                "{voter:?}'s vote command on pull request #{number} is refused: {reply}"
            )})),
            Route::NotPlanned {
                number,
                head_sha,
                reason,
            } => self.not_planned(number, &head_sha, &reason).await,
            Route::PlanRequested {
                number,
                commenter,
                pinned_sha,
            } => {
                self.plan_requested(delivery, number, &commenter, pinned_sha.as_deref())
                    .await
            }
            Route::PlanPullRequest {
                number,
                head_sha,
                head_ref,
                base_ref,
                ..
            } => {
                self.plan_pull_request(delivery, number, &head_sha, &head_ref, &base_ref, true)
                    .await
            }
            Route::DeployMerge {
                number,
                merge_commit_sha,
                base_ref,
                base_sha,
                head_ref,
                head_sha,
                ..
            } => {
                let pr = MergedPullRequest {
                    number,
                    base_ref,
                    base_sha,
                    head_ref,
                    head_sha,
                };
                let spec = create_deploy_stack_spec(&merge_commit_sha, Some(&pr), delivery);
                self.deploy_merge(number, &merge_commit_sha, spec).await
            }
        }
    }

    /// A vote comment on a merged pull request: handed to approval_response
    /// (which counts it and replies on the pull request) with only where the
    /// comment is. An invoke that fails fails the delivery (500), so GitHub's
    /// redelivery tries again; nothing was counted.
    async fn hand_vote(
        &self,
        number: u64,
        comment_id: u64,
        voter: &str,
        unit: &live_ci_core::RepoPath,
    ) -> Result<Value, ReceiverError> {
        let Some((invoker, function)) = self.ports.votes() else {
            return Ok(json!({"ignored": format!(
                "{voter:?}'s vote on {:?} (pull request #{number}) is not counted: votes from GitHub are not enabled",
                unit.as_str()
            )}));
        };
        let payload = github_vote_payload(&self.config.repository, number, comment_id);
        invoker
            .invoke(function, &payload)
            .await
            .port("approval_response invoke")?;
        tracing::info!(
            voter,
            pull_request = number,
            comment_id,
            unit = unit.as_str(),
            "vote handed to approval_response"
        );
        Ok(json!({
            "vote": "handed to approval_response",
            "pull_request": number,
            "comment_id": comment_id,
        }))
    }

    async fn touches_matching_files(&self, number: u64) -> Result<bool, ReceiverError> {
        let files = self
            .ports
            .github()
            .pull_request_files(number)
            .await
            .port("github")?;
        Ok(self.config.file_pattern.matches_any(&files))
    }

    /// The merge lock and the status service with the switches: one read of
    /// each parameter per delivery.
    async fn read_lock_and_statuses(
        &self,
    ) -> Result<(MergeLock, Statuses<&Ports::GitHub>), ReceiverError> {
        // A "locked" parameter is confirmed against the metadb's row.
        let lock = merge_lock::read_confirmed(
            self.ports.params(),
            &self.config.merge_lock_param,
            self.ports.lock_truth(),
        )
        .await
        .map_err(PortError::from)?;
        let status_json = self
            .ports
            .params()
            .get(&self.config.commit_status_config_param)
            .await
            .port("parameter store")?;
        let switches = CommitStatusConfig::parse(&status_json).map_err(ReceiverError::Params)?;
        Ok((lock, Statuses::new(self.ports.github(), switches)))
    }

    async fn plan_pull_request(
        &self,
        delivery: &str,
        number: u64,
        head_sha: &str,
        head_ref: &str,
        base_ref: &str,
        // Routed here as a trusted head (not a maintainer's `/live-ci plan`,
        // which may be a fork's): only then does the task give terraform the
        // private module sources' token (unless the module allows forks).
        trusted: bool,
    ) -> Result<Value, ReceiverError> {
        if !self.touches_matching_files(number).await? {
            // Required checks must pass on pull requests that never deploy.
            self.post_merge_lock(&merge_lock::not_applicable(head_sha))
                .await?;
            return Ok(json!({"ignored": format!(
                "pull request #{number} changes no file matching {:?}",
                self.config.file_pattern.as_str()
            )}));
        }
        let (lock, statuses) = self.read_lock_and_statuses().await?;
        self.post_merge_lock(&lock.status_for(head_sha)).await?;
        let planned = PlannedPullRequest {
            number,
            head_sha,
            base_ref,
            head_ref,
            trusted,
        };
        let spec = pr_plan_spec(&planned, delivery);
        let started = match self
            .ports
            .launcher()
            .start(&spec)
            .await
            .port("task launcher")
        {
            Ok(started) => started,
            Err(e) => {
                return Err(self
                    .not_started(&statuses, Check::PrPlan, head_sha, context::PR_PLAN, e)
                    .await);
            }
        };
        let mut s = CommitStatus::new(
            head_sha,
            StatusState::Pending,
            context::PR_PLAN,
            "planning the affected units",
        );
        s.target_url = task_link(&started);
        let warning = statuses.post(Check::PrPlan, &s).await;
        Ok(with_warnings(
            json!({
                "started": TaskKind::PrPlan.subcommand(),
                "pull_request": number,
                "commit": head_sha,
                "task_arn": started.task_arn,
                "merge_lock": lock.to_string(),
            }),
            warning,
        ))
    }

    /// A pull request whose code is not run on its own: the merge lock as for
    /// any pull request, and a pending `live-ci: plan` status saying how to
    /// have it planned (a later plan replaces it, being the same context).
    async fn not_planned(
        &self,
        number: u64,
        head_sha: &str,
        reason: &str,
    ) -> Result<Value, ReceiverError> {
        if !self.touches_matching_files(number).await? {
            return Ok(json!({"ignored": format!(
                "pull request #{number} changes no file matching {:?}",
                self.config.file_pattern.as_str()
            )}));
        }
        let (lock, statuses) = self.read_lock_and_statuses().await?;
        self.post_merge_lock(&lock.status_for(head_sha)).await?;
        let waiting = CommitStatus::new(head_sha, StatusState::Pending, context::PR_PLAN, reason);
        let warning = statuses.post(Check::PrPlan, &waiting).await;
        tracing::info!(
            pull_request = number,
            head_sha,
            reason,
            "pull request not planned"
        );
        Ok(with_warnings(
            json!({
                "not_planned": reason,
                "pull_request": number,
                "commit": head_sha,
                "merge_lock": lock.to_string(),
            }),
            warning,
        ))
    }

    /// A `/live-ci plan` comment: the commenter's permission is looked up (the
    /// payload's association only says they might have write access), then the
    /// pull request's current head is planned like a trusted one.
    async fn plan_requested(
        &self,
        delivery: &str,
        number: u64,
        commenter: &str,
        pinned_sha: Option<&str>,
    ) -> Result<Value, ReceiverError> {
        let permission = self
            .ports
            .github()
            .permission(commenter)
            .await
            .port("github")?;
        if !permission.may_request_plans() {
            tracing::warn!(
                commenter,
                permission = permission.as_str(),
                pull_request = number,
                "refused a plan request"
            );
            return Ok(json!({"ignored": format!(
                "{commenter:?} has {} permission on the repository; {PLAN_COMMAND:?} needs write",
                permission.as_str()
            )}));
        }
        let pr = self
            .ports
            .github()
            .pull_request(number)
            .await
            .port("github")?;
        if !pr.open {
            return Ok(json!({"ignored": format!("pull request #{number} is closed")}));
        }
        if pr.base_ref != self.config.trunk_branch {
            return Ok(json!({"ignored": format!(
                "pull request #{number} targets {:?}, not the trunk {:?}",
                pr.base_ref, self.config.trunk_branch
            )}));
        }
        if let Some(pin) = pinned_sha
            && !pr.head_sha.eq_ignore_ascii_case(pin)
        {
            return Ok(json!({"ignored": format!(
                "pull request #{number}'s head is {} now, not the reviewed {pin}; comment again to plan it",
                pr.head_sha
            )}));
        }
        tracing::info!(commenter, pull_request = number, head_sha = %pr.head_sha, "plan requested by a maintainer");
        let mut body = self
            .plan_pull_request(
                delivery,
                number,
                &pr.head_sha,
                &pr.head_ref,
                &pr.base_ref,
                false,
            )
            .await?;
        if let Value::Object(map) = &mut body {
            map.insert("requested_by".into(), json!(commenter));
        }
        Ok(body)
    }

    async fn deploy_merge(
        &self,
        number: u64,
        merge_commit: &str,
        spec: TaskSpec,
    ) -> Result<Value, ReceiverError> {
        if !self.touches_matching_files(number).await? {
            return Ok(json!({"ignored": format!(
                "pull request #{number} changes no file matching {:?}",
                self.config.file_pattern.as_str()
            )}));
        }
        let (lock, statuses) = self.read_lock_and_statuses().await?;
        let started = match self
            .ports
            .launcher()
            .start(&spec)
            .await
            .port("task launcher")
        {
            Ok(started) => started,
            Err(e) => {
                return Err(self
                    .not_started(
                        &statuses,
                        Check::CreateDeployStack,
                        merge_commit,
                        context::CREATE_DEPLOY_STACK,
                        e,
                    )
                    .await);
            }
        };
        // A held lock does not stop the task: create-deploy-stack queues the run
        // in the metadb behind the running one (merge order), instead of failing.
        let queued_behind = match lock {
            MergeLock::Held { pr } if pr != number => Some(pr),
            _ => None,
        };
        let description = match queued_behind {
            Some(pr) => format!("queued behind PR #{pr}; finding the affected units"),
            None => "finding the affected units".to_string(),
        };
        let mut s = CommitStatus::new(
            merge_commit,
            StatusState::Pending,
            context::CREATE_DEPLOY_STACK,
            &description,
        );
        s.target_url = task_link(&started);
        let warning = statuses.post(Check::CreateDeployStack, &s).await;
        Ok(with_warnings(
            json!({
                "started": TaskKind::CreateDeployStack.subcommand(),
                "pull_request": number,
                "commit": merge_commit,
                "task_arn": started.task_arn,
                "queued_behind": queued_behind,
            }),
            warning,
        ))
    }

    /// A task that could not be started at all (`RunTask` refused: no
    /// capacity, a missing task definition, a denied call): its status fails
    /// with the reason and links the service's page, since there is no task of
    /// its own to link; the delivery still fails, so that a redelivery retries.
    async fn not_started(
        &self,
        statuses: &Statuses<&Ports::GitHub>,
        check: Check,
        sha: &str,
        status_context: &str,
        error: live_ci_core::port::PortError,
    ) -> ReceiverError {
        tracing::error!(error = %error, sha, context = status_context, "the task could not be started");
        let mut s = CommitStatus::new(
            sha,
            StatusState::Failure,
            status_context,
            &format!("the task could not be started: {error}"),
        );
        s.target_url = self.ports.launcher().service_url();
        // Advisory like every unit status: a refusal is logged by `post`.
        statuses.post(check, &s).await;
        ReceiverError::from(error)
    }

    /// The `Merge Lock` status is the protection, not advisory (module doc).
    async fn post_merge_lock(&self, lock_status: &CommitStatus) -> Result<(), ReceiverError> {
        Ok(status::required(self.ports.github(), lock_status)
            .await
            .port("github")?)
    }

    /// Posts the current lock on every open pull request into the trunk (used
    /// when the lock changes hands; exposed for the tasks that take and release it).
    /// The receiver holds no pull request's units, so it posts the lock as a
    /// whole (`repo` scope): never freer than the `units` scope would be.
    pub async fn refresh_merge_lock(&self) -> Result<Vec<u64>, ReceiverError> {
        let (lock, _) = self.read_lock_and_statuses().await?;
        let refreshed = merge_lock::refresh_statuses(
            self.ports.github(),
            lock,
            merge_lock::Scope::Repo,
            &Default::default(),
            &self.config.trunk_branch,
            &self.config.file_pattern,
        )
        .await?;
        Ok(refreshed)
    }
}

/// Where a task's pending status links: its log stream, or the ECS task while
/// the launcher knows no log stream yet.
fn task_link(started: &StartedTask) -> Option<String> {
    started
        .logs_url
        .clone()
        .or_else(|| target::ecs_task(&started.task_arn))
}

/// The answer's body, plus the advisory statuses GitHub refused (they show in
/// the delivery's response on GitHub).
fn with_warnings(mut body: Value, warnings: impl IntoIterator<Item = String>) -> Value {
    let warnings: Vec<String> = warnings.into_iter().collect();
    if let (Value::Object(map), false) = (&mut body, warnings.is_empty()) {
        map.insert("warnings".into(), json!(warnings));
    }
    body
}

fn duplicate(delivery: &str) -> WebhookResponse {
    reply(
        200,
        json!({"ignored": format!("delivery {delivery:?} was already handled"), "duplicate": true}),
    )
}

fn reply(status: u16, body: Value) -> WebhookResponse {
    WebhookResponse { status, body }
}
