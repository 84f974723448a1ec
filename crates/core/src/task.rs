//! The task launcher port (ECS Fargate in AWS, local processes in the local
//! cloud): which `live-ci-task` subcommand to run, with what environment.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The subcommands of the `live-ci-task` binary that run as tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskKind {
    /// Plans a pull request's head commit and comments the plan.
    PrPlan,
    /// Records a merge commit's run: affected units, executions, the lock.
    CreateDeployStack,
    /// Plans or applies one execution's unit for the state machine.
    TerraRun,
    /// The scheduled drift check of the trunk head (issue 32 item 4).
    Drift,
}

impl TaskKind {
    /// The `live-ci-task` subcommand that runs this kind.
    pub fn subcommand(self) -> &'static str {
        match self {
            TaskKind::PrPlan => "pr-plan",
            TaskKind::CreateDeployStack => "create-deploy-stack",
            TaskKind::TerraRun => "terra-run",
            TaskKind::Drift => "drift",
        }
    }
}

/// Environment variables the launchers set and the `live-ci-task` binary reads:
/// the written-down interface between them.
pub mod env {
    /// The pull request number.
    pub const PR_NUMBER: &str = "LIVE_CI_PR_NUMBER";
    /// The commit to work on: a PR's head commit (pr-plan) or a merge commit.
    pub const COMMIT: &str = "LIVE_CI_COMMIT";
    /// The pull request's base branch (the trunk).
    pub const BASE_REF: &str = "LIVE_CI_BASE_REF";
    /// The pull request's head branch.
    pub const HEAD_REF: &str = "LIVE_CI_HEAD_REF";
    /// The trunk commit the pull request was based on / merged into.
    pub const BASE_SHA: &str = "LIVE_CI_BASE_SHA";
    /// The pull request's last head commit.
    pub const HEAD_SHA: &str = "LIVE_CI_HEAD_SHA";
    /// The GitHub delivery that asked for the task (for tracing a run to its webhook).
    pub const DELIVERY_ID: &str = "LIVE_CI_DELIVERY_ID";
    /// `true` when the receiver started pr-plan by itself for a branch of the
    /// live repository by a trusted author; unset for a maintainer's
    /// `/live-ci plan` (a fork's or an untrusted author's code). Only a
    /// trusted head gets private module sources' token by default.
    pub const HEAD_TRUSTED: &str = "LIVE_CI_HEAD_TRUSTED";
}

/// One task to start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSpec {
    /// Which subcommand the task runs.
    pub kind: TaskKind,
    /// Environment overrides for the task's container.
    pub env: BTreeMap<String, String>,
    /// Idempotency token: starting the same token twice starts one task (ECS
    /// `clientToken`, at most 64 characters).
    pub client_token: String,
}

/// A started task: its id and where its logs go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartedTask {
    /// The started task's ARN, as the launcher reports it.
    pub task_arn: String,
    /// The console URL of the task's log stream, for commit statuses.
    pub logs_url: Option<String>,
}

/// The pull request a merge webhook names (the sweep, finding a trunk head
/// nobody announced, knows none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergedPullRequest {
    /// The pull request's number.
    pub number: u64,
    /// The branch it merged into.
    pub base_ref: String,
    /// The base commit the webhook names.
    pub base_sha: String,
    /// The merged branch.
    pub head_ref: String,
    /// The merged branch's last commit.
    pub head_sha: String,
}

/// create-deploy-stack for a trunk commit, as the receiver (a merge webhook)
/// and trigger_sf's sweep (a trunk head no webhook announced) both launch it:
/// one spec, so the two launches cannot drift apart. `trigger` (the delivery
/// id, or the sweep's launch name) is logged by the task and, cut to ECS's
/// limit, the idempotency token.
pub fn create_deploy_stack_spec(
    commit: &str,
    pull_request: Option<&MergedPullRequest>,
    trigger: &str,
) -> TaskSpec {
    let mut task_env = BTreeMap::from([
        (env::COMMIT.to_string(), commit.to_string()),
        (env::DELIVERY_ID.to_string(), trigger.to_string()),
    ]);
    if let Some(pr) = pull_request {
        task_env.extend([
            (env::PR_NUMBER.to_string(), pr.number.to_string()),
            (env::BASE_REF.to_string(), pr.base_ref.clone()),
            (env::BASE_SHA.to_string(), pr.base_sha.clone()),
            (env::HEAD_REF.to_string(), pr.head_ref.clone()),
            (env::HEAD_SHA.to_string(), pr.head_sha.clone()),
        ]);
    }
    TaskSpec {
        kind: TaskKind::CreateDeployStack,
        env: task_env,
        client_token: client_token(trigger),
    }
}

/// The pull request a pr-plan task plans: what the receiver read from a
/// `pull_request` event (or a `/live-ci plan` comment) on the repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedPullRequest<'a> {
    /// The pull request's number.
    pub number: u64,
    /// The commit to plan: the pull request's head.
    pub head_sha: &'a str,
    /// The branch the pull request merges into.
    pub base_ref: &'a str,
    /// The pull request's own branch.
    pub head_ref: &'a str,
    /// Routed as a trusted head (a `pull_request` event, not a maintainer's
    /// `/live-ci plan` comment, which may be a fork's): only then does the
    /// task give terraform the private module sources' token (unless the
    /// module allows forks).
    pub trusted: bool,
}

/// pr-plan for a pull request's head, as the receiver launches it; beside
/// [`create_deploy_stack_spec`] so every task spec is built in one place.
/// `delivery` (the webhook's delivery id) is logged by the task and, cut to
/// ECS's limit, the idempotency token.
pub fn pr_plan_spec(pr: &PlannedPullRequest<'_>, delivery: &str) -> TaskSpec {
    let mut task_env = BTreeMap::from([
        (env::PR_NUMBER.to_string(), pr.number.to_string()),
        (env::COMMIT.to_string(), pr.head_sha.to_string()),
        (env::BASE_REF.to_string(), pr.base_ref.to_string()),
        (env::HEAD_REF.to_string(), pr.head_ref.to_string()),
        (env::DELIVERY_ID.to_string(), delivery.to_string()),
    ]);
    if pr.trusted {
        task_env.insert(env::HEAD_TRUSTED.to_string(), "true".to_string());
    }
    TaskSpec {
        kind: TaskKind::PrPlan,
        env: task_env,
        client_token: client_token(delivery),
    }
}

/// The scheduled drift check (issue 32 item 4), as trigger-sf launches it
/// for the module's `drift_schedule_expression`: the drift task and nothing
/// else. No commit (it plans the trunk's head when it starts), no pull
/// request, and nothing that names the merge lock: a drift launch never
/// takes it. `tick` names the schedule's firing (EventBridge's event time),
/// so a delivery EventBridge repeats starts one task (the idempotency token).
pub fn drift_spec(tick: &str) -> TaskSpec {
    let trigger = format!("drift-{tick}");
    TaskSpec {
        kind: TaskKind::Drift,
        env: BTreeMap::from([(env::DELIVERY_ID.to_string(), trigger.clone())]),
        client_token: client_token(&trigger),
    }
}

/// ECS takes at most 64 characters of `[a-zA-Z0-9_-]` as a client token;
/// GitHub's delivery ids are 36-character GUIDs, kept as they are.
pub fn client_token(trigger: &str) -> String {
    trigger
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(64)
        .collect()
}

/// The CloudWatch console URL of a log stream. The console double-encodes the
/// group and stream inside its fragment (`/` → `$252F`), so a plain URL encoder
/// does not produce a working link.
pub fn cloudwatch_logs_url(region: &str, group: &str, stream: &str) -> String {
    fn enc(s: &str) -> String {
        let mut out = String::with_capacity(s.len() * 2);
        for b in s.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.') {
                out.push(b as char);
            } else {
                out.push_str(&format!("$25{b:02X}"));
            }
        }
        out
    }
    format!(
        "https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}#logsV2:log-groups/log-group/{}/log-events/{}",
        enc(group),
        enc(stream)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_launch_names_no_pull_request() {
        let pr = MergedPullRequest {
            number: 42,
            base_ref: "main".into(),
            base_sha: "b".into(),
            head_ref: "feature".into(),
            head_sha: "h".into(),
        };
        let merge = create_deploy_stack_spec("m1", Some(&pr), "1b2c-3d4e");
        assert_eq!(merge.kind, TaskKind::CreateDeployStack);
        assert_eq!(merge.env[env::PR_NUMBER], "42");
        assert_eq!(merge.env[env::BASE_SHA], "b");
        assert_eq!(merge.client_token, "1b2c-3d4e");
        let sweep = create_deploy_stack_spec("m2", None, "sweep:m2/1");
        assert_eq!(
            sweep.env.keys().map(String::as_str).collect::<Vec<_>>(),
            [env::COMMIT, env::DELIVERY_ID]
        );
        assert_eq!(sweep.client_token, "sweepm21");
        assert_eq!(client_token(&"x".repeat(80)).len(), 64);
    }

    #[test]
    fn a_drift_launch_is_the_drift_task_with_its_tick_only() {
        let drift = drift_spec("2026-11-27T09:00:00Z");
        assert_eq!(drift.kind, TaskKind::Drift);
        assert_eq!(drift.kind.subcommand(), "drift");
        assert_eq!(
            drift.env,
            BTreeMap::from([(
                env::DELIVERY_ID.to_string(),
                "drift-2026-11-27T09:00:00Z".to_string()
            )])
        );
        assert_eq!(drift.client_token, "drift-2026-11-27T090000Z");
    }

    #[test]
    fn log_urls_use_the_consoles_double_encoding() {
        assert_eq!(
            cloudwatch_logs_url("eu-west-1", "/live-ci/tasks", "pr-plan/task/abc123"),
            "https://eu-west-1.console.aws.amazon.com/cloudwatch/home?region=eu-west-1#logsV2:log-groups/log-group/$252Flive-ci$252Ftasks/log-events/pr-plan$252Ftask$252Fabc123"
        );
    }
}
