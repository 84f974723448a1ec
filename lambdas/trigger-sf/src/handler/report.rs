//! What one invocation did, returned to the caller and logged.

use live_ci_core::deploy::{RunEnd, RunId, RunStatus};
use live_ci_core::status::CommitStatus;
use serde::Serialize;

/// What one invocation did, returned to the caller and logged.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    /// Executions this invocation recorded as ended (a repeat records none).
    pub recorded: Vec<String>,
    /// Executions aborted because an ancestor failed.
    pub aborted: Vec<String>,
    /// Executions started (ARN attached).
    pub started: Vec<String>,
    /// Rollback executions added to failed runs (started like any other).
    pub rollbacks: Vec<String>,
    /// Claims put back to waiting because their start failed; the sweep or the
    /// next event retries them.
    pub released: Vec<String>,
    /// Claims whose start failed for the last allowed time: failed with the
    /// error as their reason instead of being retried forever.
    pub start_failed: Vec<String>,
    /// Runs this invocation finished, with their status.
    pub finished: Vec<(RunId, RunStatus)>,
    /// The value the sweep rewrote the merge lock parameter to, when it did
    /// not match the metadb (a lost or failed write).
    pub lock_repaired: Option<String>,
    /// create-deploy-stack launched by the sweep for a trunk head the metadb
    /// did not know (a merge whose webhook was lost).
    pub trunk_launch: Option<TrunkLaunch>,
    /// The drift task the schedule's `{"drift": true}` launched (its ARN).
    pub drift_launch: Option<String>,
    /// A trunk head no merged pull request produced (a direct push), not
    /// deployed: its commit got a failure status saying why.
    pub direct_push: Option<String>,
    /// Problems that did not stop the invocation (commit statuses).
    pub warnings: Vec<String>,
    /// Runs this invocation advanced, whose deploy comments are written once
    /// its work is done (`deploy_comment.rs`).
    #[serde(skip)]
    pub(crate) touched_runs: Vec<RunId>,
    /// The runs this invocation finished (the metadb's transition, so a
    /// repeated event finishes none): announced once its work is done
    /// (`notify.rs`).
    #[serde(skip)]
    pub(crate) ended_runs: Vec<RunEnd>,
    /// Commit statuses to post once the invocation's metadb and Step Functions
    /// work is done: a status is advisory, and a GitHub round trip (100–300 ms
    /// in AWS) must not delay the start of the next unit.
    #[serde(skip)]
    pub(crate) queued_statuses: Vec<CommitStatus>,
}

/// One launch of create-deploy-stack by the sweep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrunkLaunch {
    /// The trunk head no run knew.
    pub commit: String,
    /// The merged pull request that produced the head (`None` only for a
    /// direct push deployed under `deploy_direct_pushes`).
    pub pull_request: Option<u64>,
    /// The how-manieth launch for this commit (one per cool-down).
    pub attempt: u32,
    /// The started task, to find its logs.
    pub task_arn: String,
}
