//! The webhook handler: size, signature, de-duplication, routing, then the
//! pull-request plan or the merge deploy.

use std::collections::BTreeMap;

use live_ci_core::merge_lock::{self, MergeLock};
use live_ci_core::params::ParamStore;
use live_ci_core::status::{CommitStatus, CommitStatusConfig, GitHost, StatusState, context};
use live_ci_core::task::{TaskKind, TaskLauncher, TaskSpec, env};
use live_ci_core::webhook::{Route, WebhookError, route, verify_signature};
use serde_json::{Value, json};

use crate::config::HandlerConfig;
use crate::dedupe::SeenDeliveries;
use crate::http::{WebhookRequest, WebhookResponse};

/// Failures of the services behind the handler; each becomes a 500 so GitHub
/// marks the delivery failed and it can be redelivered.
#[derive(Debug, thiserror::Error)]
pub enum ReceiverError {
    #[error("parameter store: {0}")]
    Params(String),
    #[error("github: {0}")]
    GitHub(String),
    #[error("task launcher: {0}")]
    Launcher(String),
}

/// The handler with its clients; built once per cold start.
#[derive(Debug)]
pub struct Receiver<P, G, L> {
    config: HandlerConfig,
    params: P,
    github: G,
    launcher: L,
    secret: Vec<u8>,
    seen: SeenDeliveries,
}

impl<P, G, L> Receiver<P, G, L>
where
    P: ParamStore,
    G: GitHost,
    L: TaskLauncher,
{
    /// Reads the webhook secret once: a cold start pays one SSM call, warm
    /// invocations none.
    pub async fn new(
        config: HandlerConfig,
        params: P,
        github: G,
        launcher: L,
    ) -> Result<Self, ReceiverError> {
        let secret = params
            .get(&config.webhook_secret_param)
            .await
            .map_err(|e| ReceiverError::Params(e.to_string()))?;
        Ok(Receiver {
            config,
            params,
            github,
            launcher,
            secret: secret.into_bytes(),
            seen: SeenDeliveries::new(4096),
        })
    }

    /// The task launcher (tests inspect what was started).
    pub fn launcher(&self) -> &L {
        &self.launcher
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
        if let Err(e) = verify_signature(&self.secret, &req.body, req.header("x-hub-signature-256"))
        {
            tracing::warn!(error = %e, "refused an unsigned or wrongly signed delivery");
            return reply(401, json!({"error": e.to_string()}));
        }
        let Some(event) = req.header("x-github-event") else {
            return reply(400, json!({"error": "missing X-GitHub-Event header"}));
        };
        let Some(delivery) = req.header("x-github-delivery").filter(|d| !d.is_empty()) else {
            return reply(400, json!({"error": "missing X-GitHub-Delivery header"}));
        };
        if self.seen.contains(delivery) {
            return reply(
                200,
                json!({"ignored": format!("delivery {delivery:?} was already handled")}),
            );
        }
        let routed = match route(
            event,
            &req.body,
            &self.config.trunk_branch,
            Some(&self.config.repository),
        ) {
            Ok(r) => r,
            Err(e @ WebhookError::MalformedPayload { .. }) => {
                return reply(400, json!({"error": e.to_string()}));
            }
            Err(e) => return reply(400, json!({"error": e.to_string()})),
        };
        let outcome = match routed {
            Route::Ping => Ok(json!({"pong": true})),
            Route::Ignore(reason) => Ok(json!({"ignored": reason})),
            Route::PlanPullRequest {
                number,
                head_sha,
                head_ref,
                base_ref,
                ..
            } => {
                self.plan_pull_request(delivery, number, &head_sha, &head_ref, &base_ref)
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
                let task_env = BTreeMap::from([
                    (env::PR_NUMBER.to_string(), number.to_string()),
                    (env::COMMIT.to_string(), merge_commit_sha.clone()),
                    (env::BASE_REF.to_string(), base_ref),
                    (env::BASE_SHA.to_string(), base_sha),
                    (env::HEAD_REF.to_string(), head_ref),
                    (env::HEAD_SHA.to_string(), head_sha),
                    (env::DELIVERY_ID.to_string(), delivery.to_string()),
                ]);
                self.deploy_merge(delivery, number, &merge_commit_sha, task_env)
                    .await
            }
        };
        match outcome {
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

    async fn touches_matching_files(&self, number: u64) -> Result<bool, ReceiverError> {
        let files = self
            .github
            .pull_request_files(number)
            .await
            .map_err(|e| ReceiverError::GitHub(e.to_string()))?;
        Ok(self.config.file_pattern.matches_any(&files))
    }

    async fn read_lock_and_status_config(
        &self,
    ) -> Result<(MergeLock, CommitStatusConfig), ReceiverError> {
        let lock_value = self
            .params
            .get(&self.config.merge_lock_param)
            .await
            .map_err(|e| ReceiverError::Params(e.to_string()))?;
        let lock = MergeLock::parse(&lock_value).map_err(ReceiverError::Params)?;
        let status_json = self
            .params
            .get(&self.config.commit_status_config_param)
            .await
            .map_err(|e| ReceiverError::Params(e.to_string()))?;
        let statuses = CommitStatusConfig::parse(&status_json).map_err(ReceiverError::Params)?;
        Ok((lock, statuses))
    }

    async fn plan_pull_request(
        &self,
        delivery: &str,
        number: u64,
        head_sha: &str,
        head_ref: &str,
        base_ref: &str,
    ) -> Result<Value, ReceiverError> {
        if !self.touches_matching_files(number).await? {
            // Required checks must pass on pull requests that never deploy.
            self.set_status(&merge_lock::not_applicable(head_sha))
                .await?;
            return Ok(json!({"ignored": format!(
                "pull request #{number} changes no file matching {:?}",
                self.config.file_pattern.as_str()
            )}));
        }
        let (lock, statuses) = self.read_lock_and_status_config().await?;
        self.set_status(&lock.status_for(head_sha)).await?;
        let spec = TaskSpec {
            kind: TaskKind::PrPlan,
            env: BTreeMap::from([
                (env::PR_NUMBER.to_string(), number.to_string()),
                (env::COMMIT.to_string(), head_sha.to_string()),
                (env::BASE_REF.to_string(), base_ref.to_string()),
                (env::HEAD_REF.to_string(), head_ref.to_string()),
                (env::DELIVERY_ID.to_string(), delivery.to_string()),
            ]),
            client_token: client_token(delivery),
        };
        let started = self
            .launcher
            .start(&spec)
            .await
            .map_err(|e| ReceiverError::Launcher(e.to_string()))?;
        if statuses.pr_plan {
            let mut s = CommitStatus::new(
                head_sha,
                StatusState::Pending,
                context::PR_PLAN,
                "planning the affected units",
            );
            s.target_url = started.logs_url.clone();
            self.set_status(&s).await?;
        }
        Ok(json!({
            "started": TaskKind::PrPlan.subcommand(),
            "pull_request": number,
            "commit": head_sha,
            "task_arn": started.task_arn,
            "merge_lock": lock.to_string(),
        }))
    }

    async fn deploy_merge(
        &self,
        delivery: &str,
        number: u64,
        merge_commit: &str,
        task_env: BTreeMap<String, String>,
    ) -> Result<Value, ReceiverError> {
        if !self.touches_matching_files(number).await? {
            return Ok(json!({"ignored": format!(
                "pull request #{number} changes no file matching {:?}",
                self.config.file_pattern.as_str()
            )}));
        }
        let (lock, statuses) = self.read_lock_and_status_config().await?;
        let spec = TaskSpec {
            kind: TaskKind::CreateDeployStack,
            env: task_env,
            client_token: client_token(delivery),
        };
        let started = self
            .launcher
            .start(&spec)
            .await
            .map_err(|e| ReceiverError::Launcher(e.to_string()))?;
        // A held lock does not stop the task: create-deploy-stack queues the run
        // in the metadb behind the running one (merge order), instead of failing.
        let queued_behind = match lock {
            MergeLock::Held { pr } if pr != number => Some(pr),
            _ => None,
        };
        if statuses.create_deploy_stack {
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
            s.target_url = started.logs_url.clone();
            self.set_status(&s).await?;
        }
        Ok(json!({
            "started": TaskKind::CreateDeployStack.subcommand(),
            "pull_request": number,
            "commit": merge_commit,
            "task_arn": started.task_arn,
            "queued_behind": queued_behind,
        }))
    }

    async fn set_status(&self, status: &CommitStatus) -> Result<(), ReceiverError> {
        self.github
            .set_status(status)
            .await
            .map_err(|e| ReceiverError::GitHub(e.to_string()))
    }

    /// Posts the current lock on every open pull request into the trunk (used
    /// when the lock changes hands; exposed for the tasks that take and release it).
    pub async fn refresh_merge_lock(&self) -> Result<Vec<u64>, ReceiverError> {
        let (lock, _) = self.read_lock_and_status_config().await?;
        merge_lock::refresh_statuses(
            &self.github,
            lock,
            &self.config.trunk_branch,
            &self.config.file_pattern,
        )
        .await
        .map_err(|e| ReceiverError::GitHub(e.to_string()))
    }
}

/// ECS takes at most 64 characters of `[a-zA-Z0-9_-]`-ish token; GitHub's
/// delivery ids are 36-character GUIDs, kept as they are.
fn client_token(delivery: &str) -> String {
    delivery
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(64)
        .collect()
}

fn reply(status: u16, body: Value) -> WebhookResponse {
    WebhookResponse { status, body }
}
