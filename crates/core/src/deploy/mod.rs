//! Deployments as the metadb records them: runs (one per merged commit), their
//! executions (one Step Functions execution per unit, in the seed's field names),
//! votes, and the checks a run must pass before anything is written.

mod execution_id;
mod rollback;
mod trunk;
mod validate;

pub use rollback::{NewRollback, destroy_targets, plan_rollbacks, rollback_execution_id};
pub use trunk::{PendingUnit, TrunkPlace, place_on_trunk};
pub use validate::validate_executions;

use serde::{Deserialize, Serialize};

use crate::path::RepoPath;
use crate::port::CachedCheckout;
pub use execution_id::{MAX_EXECUTION_NAME_LEN, execution_id, is_valid_execution_name};

/// What the pipeline does to an affected unit.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Plan the unit and apply the plan (the default).
    #[default]
    Apply,
    /// Plan with `-destroy` and apply that: the change removed the unit.
    Destroy,
}

/// A run's number in the metadb; runs are numbered in merge order.
pub type RunId = i64;

/// Milliseconds since the Unix epoch (UTC): the metadb's one time format, so both
/// adapters decode the same JSON and the core needs no date library.
pub type UnixMillis = i64;

/// The status of one execution, spelled as the seed's `status` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutionStatus {
    /// Not started: waits for its run, its dependencies or a free slot.
    Waiting,
    /// Claimed: its Step Functions execution is starting or under way.
    Running,
    /// Its Step Functions execution succeeded.
    Succeeded,
    /// Its Step Functions execution failed, was aborted or timed out.
    Failed,
    /// Stopped by live-ci: an ancestor failed, fail-fast, or an operator's
    /// abort (`status_reason` says which).
    Aborted,
}

impl ExecutionStatus {
    /// The status as the seed and the metadb spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionStatus::Waiting => "waiting",
            ExecutionStatus::Running => "running",
            ExecutionStatus::Succeeded => "succeeded",
            ExecutionStatus::Failed => "failed",
            ExecutionStatus::Aborted => "aborted",
        }
    }

    /// True for the end states: succeeded, failed, aborted.
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            ExecutionStatus::Succeeded | ExecutionStatus::Failed | ExecutionStatus::Aborted
        )
    }
}

/// How a Step Functions execution ended, as far as the run is concerned: FAILED,
/// ABORTED and TIMED_OUT all count as a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The execution SUCCEEDED.
    Succeeded,
    /// The execution FAILED, was ABORTED or TIMED_OUT.
    Failed,
}

impl Outcome {
    /// The execution status that records this outcome.
    pub fn status(self) -> ExecutionStatus {
        match self {
            Outcome::Succeeded => ExecutionStatus::Succeeded,
            Outcome::Failed => ExecutionStatus::Failed,
        }
    }
}

/// A run waits in `queued` until the run before it (in merge order) has finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Waits for the run before it in merge order.
    Queued,
    /// Holds the merge lock; its executions are claimed as they become ready.
    Running,
    /// Finished with every execution succeeded.
    Succeeded,
    /// Finished with at least one execution not succeeded.
    Failed,
    /// Never applied: a run at a newer trunk commit covers its whole range.
    Superseded,
}

impl RunStatus {
    /// The status as the metadb spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Queued => "queued",
            RunStatus::Running => "running",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::Superseded => "superseded",
        }
    }
}

/// One voter's vote, and the decision a threshold of them reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Vote {
    /// For deploying the planned change.
    Approve,
    /// Against deploying the planned change.
    Reject,
}

impl Vote {
    /// The vote as the metadb spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Vote::Approve => "approve",
            Vote::Reject => "reject",
        }
    }
}

/// The input of one Step Functions execution, field for field the seed's sample
/// plus `action` (the state machine and the ECS task read exactly these names).
/// The one definition: `live-ci-stepfunctions` re-exports it for the state machine side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SfnInput {
    /// The execution's unique name, also its Step Functions execution name ([`execution_id()`]).
    pub execution_id: String,
    /// True for a rollback execution ([`plan_rollbacks`]).
    pub is_rollback: bool,
    /// The merged pull request's number.
    pub pr_id: u64,
    /// The merge commit deployed.
    pub commit_id: String,
    /// The pull request's base branch (the trunk), e.g. `refs/heads/master`.
    pub base_ref: String,
    /// The pull request's head branch.
    pub head_ref: String,
    /// The unit's directory in the repository.
    pub cfg_path: RepoPath,
    /// The directories of the units this unit depends on.
    pub cfg_deps: Vec<RepoPath>,
    /// The execution's status when the input was made.
    pub status: ExecutionStatus,
    /// The shell command that plans the unit (with `-destroy` for a destroy).
    pub plan_command: String,
    /// The shell command that applies the unit's saved plan.
    pub apply_command: String,
    /// Provider addresses new to the unit in this change (e.g. `registry.terraform.io/hashicorp/null`); empty for a destroy.
    pub new_providers: Vec<String>,
    /// Resources of `new_providers` the apply created: what a rollback destroys.
    pub new_resources: Vec<String>,
    /// The unit's account (`name` in the accounts file).
    pub account_name: String,
    /// The account's directory in the repository.
    pub account_path: String,
    /// The names of the accounts this account depends on.
    pub account_deps: Vec<String>,
    /// The account's voters' e-mail addresses.
    pub voters: Vec<String>,
    /// The voters who approved so far.
    pub approval_voters: Vec<String>,
    /// Approvals that approve the execution.
    pub min_approval_count: u32,
    /// The voters who rejected so far.
    pub rejection_voters: Vec<String>,
    /// Rejections that reject the execution.
    pub min_rejection_count: u32,
    /// The IAM role the plan runs as.
    pub plan_role_arn: String,
    /// The IAM role the apply runs as.
    pub apply_role_arn: String,
    /// Apply, or destroy for a unit the change removed (absent in the seed's
    /// sample: apply).
    #[serde(default)]
    pub action: Action,
}

/// A run to create: one merged commit and every execution it deploys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewRun {
    /// The merged pull request's number.
    pub pr_id: u64,
    /// The merge commit.
    pub commit_id: String,
    /// The pull request's base branch (the trunk).
    pub base_ref: String,
    /// The pull request's head branch.
    pub head_ref: String,
    /// The commits the change was measured between (merge-base semantics).
    pub base_sha: String,
    /// The pull request's head commit (the other end of `base_sha`).
    pub head_sha: String,
    /// Executions running at once.
    pub max_parallel: u32,
    /// A failure aborts every unit of the run not yet started, not only its dependents.
    pub fail_fast: bool,
    /// The merge commit's depth on the trunk's first-parent chain: queued runs
    /// start in this order, whatever order they were created in.
    pub trunk_seq: u64,
    /// The merge commit's packed checkout, when create-deploy-stack stored
    /// one: recorded with the run, so it is there before any execution starts.
    #[serde(default)]
    pub checkout: Option<CachedCheckout>,
    /// The units to deploy, with their order and approvals.
    pub executions: Vec<NewExecution>,
}

/// One execution of a new run. The run's `pr_id`, `commit_id`, `base_ref` and
/// `head_ref` complete its Step Function input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewExecution {
    /// The execution's unique name ([`execution_id()`]).
    pub execution_id: String,
    /// True for a rollback execution ([`plan_rollbacks`]).
    pub is_rollback: bool,
    /// The unit's directory in the repository.
    pub cfg_path: RepoPath,
    /// The directories of the units this unit depends on.
    pub cfg_deps: Vec<RepoPath>,
    /// Apply, or destroy for a unit the change removed.
    pub action: Action,
    /// The shell command that plans the unit.
    pub plan_command: String,
    /// The shell command that applies the unit's saved plan.
    pub apply_command: String,
    /// Provider addresses new to the unit in this change; empty for a destroy.
    pub new_providers: Vec<String>,
    /// The unit's account (`name` in the accounts file).
    pub account_name: String,
    /// The account's directory in the repository.
    pub account_path: String,
    /// The names of the accounts this account depends on.
    pub account_deps: Vec<String>,
    /// The account's voters' e-mail addresses.
    pub voters: Vec<String>,
    /// Approvals that approve the execution.
    pub min_approval_count: u32,
    /// Rejections that reject the execution.
    pub min_rejection_count: u32,
    /// The IAM role the plan runs as.
    pub plan_role_arn: String,
    /// The IAM role the apply runs as.
    pub apply_role_arn: String,
    /// The runner pool starts the highest first (`PlannedUnit::priority`).
    pub priority: f64,
    /// Execution ids of this run that must succeed first. Stored as given, so the
    /// metadb need not know that destroys run dependents-first
    /// (`PlannedUnit::dependencies` mapped to execution ids).
    pub wait_for: Vec<String>,
    /// Accounts every execution of which (in this run, with the same action) must
    /// succeed first (`PlannedUnit::waits_for_accounts`).
    pub wait_accounts: Vec<String>,
    /// The account's `max_parallel`: at most this many of the run's executions
    /// in the account run at once (the claim enforces it; `None`: the run's cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_max_parallel: Option<u32>,
}

/// A run as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The run's number (merge order).
    pub run_id: RunId,
    /// The merged pull request's number.
    pub pr_id: u64,
    /// The merge commit deployed.
    pub commit_id: String,
    /// The pull request's base branch (the trunk).
    pub base_ref: String,
    /// The pull request's head branch.
    pub head_ref: String,
    /// See [`NewRun::base_sha`].
    pub base_sha: String,
    /// See [`NewRun::head_sha`].
    pub head_sha: String,
    /// Where the run is in its life.
    pub status: RunStatus,
    /// See [`NewRun::max_parallel`].
    pub max_parallel: u32,
    /// See [`NewRun::fail_fast`].
    pub fail_fast: bool,
    /// See [`NewRun::trunk_seq`].
    #[serde(default)]
    pub trunk_seq: u64,
    /// The run that deploys this merge's changes instead (status `superseded`).
    #[serde(default)]
    pub superseded_by: Option<RunId>,
    /// See [`NewRun::checkout`].
    #[serde(default)]
    pub checkout: Option<CachedCheckout>,
    /// When the run was created.
    pub created_at: UnixMillis,
    /// When it took the merge lock and started; `None` while queued.
    pub started_at: Option<UnixMillis>,
    /// When it finished; `None` before.
    pub finished_at: Option<UnixMillis>,
}

/// An execution as stored: the seed's fields plus what the pipeline tracks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutionRecord {
    /// The execution's run.
    pub run_id: RunId,
    /// The execution's unique name ([`execution_id()`]).
    pub execution_id: String,
    /// True for a rollback execution ([`plan_rollbacks`]).
    pub is_rollback: bool,
    /// The merged pull request's number.
    pub pr_id: u64,
    /// The merge commit deployed.
    pub commit_id: String,
    /// The pull request's base branch (the trunk).
    pub base_ref: String,
    /// The pull request's head branch.
    pub head_ref: String,
    /// The unit's directory in the repository.
    pub cfg_path: RepoPath,
    /// The directories of the units this unit depends on.
    pub cfg_deps: Vec<RepoPath>,
    /// Apply, or destroy for a unit the change removed.
    pub action: Action,
    /// Where the execution is in its life.
    pub status: ExecutionStatus,
    /// Why it ended as it did, e.g. "ancestor failed".
    pub status_reason: Option<String>,
    /// The shell command that plans the unit.
    pub plan_command: String,
    /// The shell command that applies the unit's saved plan.
    pub apply_command: String,
    /// Provider addresses new to the unit in this change.
    pub new_providers: Vec<String>,
    /// Resources of `new_providers` the apply created (a rollback's targets).
    pub new_resources: Vec<String>,
    /// The unit's account (`name` in the accounts file).
    pub account_name: String,
    /// The account's directory in the repository.
    pub account_path: String,
    /// The names of the accounts this account depends on.
    pub account_deps: Vec<String>,
    /// The account's voters' e-mail addresses: who is mailed and may vote.
    pub voters: Vec<String>,
    /// The GitHub voters (`github:<login>`) whose vote from the pull request
    /// was counted: approval_response checked each against the account's
    /// `github_voters` and admitted it with the vote (migration 0018). Not
    /// mailed; counted by [`Self::apply_refusal`] like `voters`.
    #[serde(default)]
    pub github_voters: Vec<String>,
    /// The voters (e-mail or `github:<login>`) whose approval is recorded.
    pub approval_voters: Vec<String>,
    /// Approvals that approve the execution.
    pub min_approval_count: u32,
    /// The voters (e-mail or `github:<login>`) whose rejection is recorded.
    pub rejection_voters: Vec<String>,
    /// Rejections that reject the execution.
    pub min_rejection_count: u32,
    /// The IAM role the plan runs as.
    pub plan_role_arn: String,
    /// The IAM role the apply runs as.
    pub apply_role_arn: String,
    /// See [`NewExecution::priority`].
    pub priority: f64,
    /// See [`NewExecution::wait_for`].
    pub wait_for: Vec<String>,
    /// See [`NewExecution::wait_accounts`].
    pub wait_accounts: Vec<String>,
    /// The Step Functions execution started for it, once known.
    pub sfn_execution_arn: Option<String>,
    /// The voters' decision, once a threshold was reached.
    pub decision: Option<Vote>,
    /// The run's packed checkout ([`NewRun::checkout`]), read with the record
    /// so that terra-run needs no other round trip for it.
    #[serde(default)]
    pub checkout: Option<CachedCheckout>,
    /// When the execution was created.
    pub created_at: UnixMillis,
    /// When a claim moved it to `running`; `None` before.
    pub claimed_at: Option<UnixMillis>,
    /// When it ended; `None` before.
    pub finished_at: Option<UnixMillis>,
    /// When the row last changed.
    pub updated_at: UnixMillis,
}

impl ExecutionRecord {
    /// Why this execution may not be applied now (`None`: it may), from the
    /// metadb alone: the execution and its run (`run_status`) are running —
    /// not aborted, failed, finished or superseded — and its voters approved
    /// it at its threshold. The decision is recomputed from the recorded votes
    /// of its own voters, so a `decision` column set by hand (or a vote from
    /// someone who is not a voter) does not approve it. terra-run asks this
    /// before it applies: nothing in the state machine's input can stand in
    /// for the voters.
    pub fn apply_refusal(&self, run_status: RunStatus) -> Option<String> {
        let id = &self.execution_id;
        if self.status != ExecutionStatus::Running {
            return Some(format!(
                "execution {id:?} is {}, not running",
                self.status.as_str()
            ));
        }
        if run_status != RunStatus::Running {
            return Some(format!(
                "the run #{} of execution {id:?} is {}, not running",
                self.run_id,
                run_status.as_str()
            ));
        }
        let of_voters = |votes: &[String]| -> Vec<String> {
            let mut counted: Vec<String> = votes
                .iter()
                .filter(|v| self.voters.contains(v) || self.github_voters.contains(v))
                .cloned()
                .collect();
            counted.sort();
            counted.dedup();
            counted
        };
        let tally = Tally {
            approval_voters: of_voters(&self.approval_voters),
            rejection_voters: of_voters(&self.rejection_voters),
            min_approval_count: self.min_approval_count,
            min_rejection_count: self.min_rejection_count,
            decision: self.decision,
        };
        match (self.decision, tally.reached()) {
            (Some(Vote::Approve), Some(Vote::Approve)) => None,
            (decision, Some(Vote::Reject)) | (decision @ Some(Vote::Reject), _) => Some(format!(
                "execution {id:?} was rejected by its voters (decision {:?}, {} of {} rejections needed)",
                decision.map(Vote::as_str),
                tally.rejection_voters.len(),
                self.min_rejection_count
            )),
            (decision, _) => Some(format!(
                "execution {id:?} is not approved: {} of the {} approvals it needs are recorded (decision {:?})",
                tally.approval_voters.len(),
                self.min_approval_count,
                decision.map(Vote::as_str)
            )),
        }
    }

    /// The Step Function input for this execution.
    pub fn sfn_input(&self) -> SfnInput {
        SfnInput {
            execution_id: self.execution_id.clone(),
            is_rollback: self.is_rollback,
            pr_id: self.pr_id,
            commit_id: self.commit_id.clone(),
            base_ref: self.base_ref.clone(),
            head_ref: self.head_ref.clone(),
            cfg_path: self.cfg_path.clone(),
            cfg_deps: self.cfg_deps.clone(),
            status: self.status,
            plan_command: self.plan_command.clone(),
            apply_command: self.apply_command.clone(),
            new_providers: self.new_providers.clone(),
            new_resources: self.new_resources.clone(),
            account_name: self.account_name.clone(),
            account_path: self.account_path.clone(),
            account_deps: self.account_deps.clone(),
            voters: self.voters.clone(),
            approval_voters: self.approval_voters.clone(),
            min_approval_count: self.min_approval_count,
            rejection_voters: self.rejection_voters.clone(),
            min_rejection_count: self.min_rejection_count,
            plan_role_arn: self.plan_role_arn.clone(),
            apply_role_arn: self.apply_role_arn.clone(),
            action: self.action,
        }
    }
}

/// What `create_run` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatedRun {
    /// The run for the commit (the existing one when `created` is false).
    pub run_id: RunId,
    /// False when a run for this commit already existed (a redelivered merge
    /// event): nothing was written.
    pub created: bool,
    /// True when the run took the merge lock and is running; otherwise it is
    /// queued behind the running one.
    pub started: bool,
}

/// What recording a finished execution did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FinishOutcome {
    /// This call moved the execution out of `running`; `aborted` lists the
    /// execution ids it aborted as a consequence (dependents, or with fail-fast
    /// every unstarted unit of the run).
    Recorded {
        /// The execution ids this finish aborted.
        aborted: Vec<String>,
    },
    /// Nothing changed: the execution is not running (a repeated event, or a
    /// claim that was released); `None` when no such execution exists.
    Unchanged {
        /// The execution's status; `None` when it does not exist.
        status: Option<ExecutionStatus>,
    },
}

/// An execution a failure aborted, as its commit status needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbortedUnit {
    /// The aborted execution's unique name.
    pub execution_id: String,
    /// The unit's directory in the repository.
    pub cfg_path: RepoPath,
    /// True for a rollback execution.
    pub is_rollback: bool,
    /// "ancestor failed" or "fail-fast".
    pub status_reason: Option<String>,
}

/// One claim of a run and the run's counts right after it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Claimed {
    /// The executions moved to `running`, highest priority first.
    pub claimed: Vec<ExecutionRecord>,
    /// The run's counts after the claim.
    pub progress: RunProgress,
}

/// A Step Functions status change, as the metadb settles it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusChange<'a> {
    /// The execution's name: its execution id.
    pub execution_id: &'a str,
    /// The event's execution ARN.
    pub execution_arn: &'a str,
    /// How it ended and the reason to store; `None` for a status that is not
    /// an end (the run is still advanced).
    pub ended: Option<(Outcome, Option<&'a str>)>,
}

/// What settling one status change did.
#[derive(Debug, Clone, PartialEq)]
pub enum Settled {
    /// No execution has the event's name: not ours.
    Unknown,
    /// The execution has a different Step Functions ARN recorded: another
    /// state machine's execution sharing the name. Nothing changed.
    Foreign {
        /// The execution recorded under that name.
        execution: ExecutionRecord,
    },
    /// The end was recorded (when the event was one) and the run claimed.
    Advanced {
        /// The execution as it was before its end was recorded.
        execution: ExecutionRecord,
        /// What recording the end did; `None` for a status that is not an end.
        finish: Option<FinishOutcome>,
        /// The first (up to 1000, in creation order) of the executions the
        /// finish aborted, with what their statuses need; the rest are only in
        /// `finish`'s ids.
        aborted_units: Vec<AbortedUnit>,
        /// The claim of the execution's run after the finish.
        next: Claimed,
    },
}

/// Counts of a run's executions by status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunProgress {
    /// Executions not started yet.
    pub waiting: u64,
    /// Executions under way.
    pub running: u64,
    /// Executions that succeeded.
    pub succeeded: u64,
    /// Executions that failed.
    pub failed: u64,
    /// Executions aborted (an ancestor failed, fail-fast, an operator's abort).
    pub aborted: u64,
}

impl RunProgress {
    /// Every execution of the run.
    pub fn total(&self) -> u64 {
        self.waiting + self.running + self.succeeded + self.failed + self.aborted
    }

    /// Nothing left to start or wait for.
    pub fn is_done(&self) -> bool {
        self.waiting == 0 && self.running == 0
    }
}

/// What `finish_run` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunFinish {
    /// The status this call gave the run; `None` when it was not finishable
    /// (work left, or already finished by another caller).
    pub finished: Option<RunStatus>,
    /// The queued run this call started (it now holds the merge lock).
    pub next_run: Option<RunId>,
}

/// A run's end as one call gives it: what `finish_run` did, and what the
/// run's statuses and the merge lock's mirror need, read in the same
/// transaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEnd {
    /// What `finish_run` did.
    #[serde(flatten)]
    pub finish: RunFinish,
    /// The run (`None` for an unknown id).
    pub run: Option<RunRecord>,
    /// The run's counts by status after the finish.
    pub progress: RunProgress,
    /// The runs it superseded, oldest on the trunk first.
    pub superseded: Vec<RunRecord>,
    /// The merge lock after the hand-over.
    pub merge_lock: MergeLockRow,
}

/// The metadb's merge lock row, owned by the lock's module; named here too
/// because every record the metadb hands back is a `deploy` type.
pub use crate::merge_lock::MergeLockRow;

/// The votes on one execution against its thresholds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// The voters who approved.
    pub approval_voters: Vec<String>,
    /// The voters who rejected.
    pub rejection_voters: Vec<String>,
    /// Approvals needed to approve.
    pub min_approval_count: u32,
    /// Rejections needed to reject.
    pub min_rejection_count: u32,
    /// The decision recorded, once a threshold was reached.
    pub decision: Option<Vote>,
}

impl Tally {
    /// The decision the votes reach, if any. Rejection wins a tie: when both
    /// thresholds are met, deploying is the riskier choice.
    pub fn reached(&self) -> Option<Vote> {
        if self.rejection_voters.len() as u64 >= u64::from(self.min_rejection_count) {
            Some(Vote::Reject)
        } else if self.approval_voters.len() as u64 >= u64::from(self.min_approval_count) {
            Some(Vote::Approve)
        } else {
            None
        }
    }
}

/// What casting a vote did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum VoteOutcome {
    /// The vote is stored (new or changed); the tally after it.
    Recorded(Tally),
    /// Voting is over: a decision was reached or the execution is not running.
    Closed {
        /// The execution's status.
        status: ExecutionStatus,
        /// The decision reached, if voting ended on one.
        decision: Option<Vote>,
    },
    /// The voter is not one of the execution's voters.
    NotAVoter,
    /// No execution has that id.
    UnknownExecution,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seed's sample input, verbatim apart from the redacted voter address.
    const SEED_SAMPLE: &str = r#"{
 "execution_id": "run-1-c8c5-dev-baz-729",
 "is_rollback": false,
 "pr_id": 1,
 "commit_id": "c8c5f6afc7345bd21cd79acaf740dc18b60755e3",
 "base_ref": "refs/heads/master",
 "head_ref": "refs/heads/feature-5320d796-6511-4b05-8adf-47382b46afe2",
 "cfg_path": "directory_dependency/dev-account/us-west-2/env-one/baz",
 "cfg_deps": [
   "directory_dependency/dev-account/global"
 ],
 "status": "running",
 "plan_command": "terragrunt plan --terragrunt-working-dir directory_dependency/dev-account/us-west-2/env-one/baz",
 "apply_command": "terragrunt apply --terragrunt-working-dir directory_dependency/dev-account/us-west-2/env-one/baz -auto-approve",
 "new_providers": ["registry.terraform.io/hashicorp/null"],
 "new_resources": ["null_resource.this"],
 "account_name": "dev",
 "account_path": "directory_dependency/dev-account",
 "account_deps": [
   "shared_services"
 ],
 "voters": [
   "voter@example.com"
 ],
 "approval_voters": [],
 "min_approval_count": 1,
 "rejection_voters": [],
 "min_rejection_count": 1,
 "plan_role_arn": "arn:aws:iam::111111111111:role/terraform-aws-infrastructure-live-ci-plan",
 "apply_role_arn": "arn:aws:iam::111111111111:role/terraform-aws-infrastructure-live-ci-apply"
}"#;

    #[test]
    fn sfn_input_round_trips_the_seed_sample_in_its_field_order() {
        let input: SfnInput = serde_json::from_str(SEED_SAMPLE).unwrap();
        assert_eq!(input.status, ExecutionStatus::Running);
        assert_eq!(
            input.cfg_deps[0].as_str(),
            "directory_dependency/dev-account/global"
        );
        assert_eq!(input.action, Action::Apply);
        // Ours is the seed's sample with `action` added at the end.
        let ours = serde_json::to_value(&input).unwrap();
        let mut theirs: serde_json::Value = serde_json::from_str(SEED_SAMPLE).unwrap();
        theirs["action"] = serde_json::json!("apply");
        assert_eq!(ours, theirs);
        let keys = |s: &str| -> Vec<String> {
            s.lines()
                .filter_map(|l| {
                    l.trim()
                        .strip_prefix('"')?
                        .split_once("\":")
                        .map(|(k, _)| k.to_string())
                })
                .collect()
        };
        let mut expected = keys(SEED_SAMPLE);
        expected.push("action".into());
        assert_eq!(
            keys(&serde_json::to_string_pretty(&input).unwrap()),
            expected
        );
    }

    fn approved_record() -> ExecutionRecord {
        let voters: Vec<String> = ["a@x", "b@x", "c@x"].map(String::from).to_vec();
        ExecutionRecord {
            run_id: 3,
            execution_id: "run-3-x".into(),
            is_rollback: false,
            pr_id: 7,
            commit_id: "abcd".into(),
            base_ref: "main".into(),
            head_ref: "feature".into(),
            cfg_path: RepoPath::new("dev/app").unwrap(),
            cfg_deps: Vec::new(),
            action: Action::Apply,
            status: ExecutionStatus::Running,
            status_reason: None,
            plan_command: "plan".into(),
            apply_command: "apply".into(),
            new_providers: Vec::new(),
            new_resources: Vec::new(),
            account_name: "dev".into(),
            account_path: "dev".into(),
            account_deps: Vec::new(),
            approval_voters: voters[..2].to_vec(),
            voters,
            github_voters: Vec::new(),
            min_approval_count: 2,
            rejection_voters: Vec::new(),
            min_rejection_count: 1,
            plan_role_arn: "arn:plan".into(),
            apply_role_arn: "arn:apply".into(),
            priority: 1.0,
            wait_for: Vec::new(),
            wait_accounts: Vec::new(),
            sfn_execution_arn: None,
            decision: Some(Vote::Approve),
            checkout: None,
            created_at: 0,
            claimed_at: None,
            finished_at: None,
            updated_at: 0,
        }
    }

    /// A GitHub vote counts at the apply only for a voter admitted into
    /// `github_voters` with it (migration 0018); a `github:` vote of anyone
    /// else does not.
    #[test]
    fn an_admitted_github_voter_counts_at_the_apply_and_no_one_else() {
        let mut e = approved_record();
        e.approval_voters = vec!["a@x".into(), "github:alice".into()];
        assert!(e.apply_refusal(RunStatus::Running).is_some());
        e.github_voters = vec!["github:alice".into()];
        assert_eq!(e.apply_refusal(RunStatus::Running), None);
        e.approval_voters = vec!["a@x".into(), "github:mallory".into()];
        assert!(e.apply_refusal(RunStatus::Running).is_some());
    }

    /// Each way an execution may not be applied is refused with its reason;
    /// only a running execution of a running run, approved by enough of its
    /// own voters, passes.
    #[test]
    fn only_an_approved_running_execution_may_be_applied() {
        let ok = approved_record();
        assert_eq!(ok.apply_refusal(RunStatus::Running), None);
        let refusal = |change: &dyn Fn(&mut ExecutionRecord), run: RunStatus| {
            let mut e = approved_record();
            change(&mut e);
            e.apply_refusal(run).expect("refused")
        };
        let none = |_: &mut ExecutionRecord| {};
        assert_eq!(
            refusal(&none, RunStatus::Superseded),
            "the run #3 of execution \"run-3-x\" is superseded, not running"
        );
        assert_eq!(
            refusal(&|e| e.status = ExecutionStatus::Aborted, RunStatus::Running),
            "execution \"run-3-x\" is aborted, not running"
        );
        assert_eq!(
            refusal(
                &|e| {
                    e.decision = Some(Vote::Reject);
                    e.rejection_voters = vec!["c@x".into()];
                },
                RunStatus::Running
            ),
            "execution \"run-3-x\" was rejected by its voters (decision Some(\"reject\"), 1 of 1 rejections needed)"
        );
        // No decision recorded, though the votes would reach one.
        assert!(
            refusal(&|e| e.decision = None, RunStatus::Running).contains(
                "is not approved: 2 of the 2 approvals it needs are recorded (decision None)"
            )
        );
        // A decision set by hand, below the threshold; votes of non-voters and
        // repeated votes do not count.
        assert!(
            refusal(
                &|e| e.approval_voters = vec!["a@x".into(), "a@x".into(), "mallory@x".into()],
                RunStatus::Running
            )
            .contains("1 of the 2 approvals it needs are recorded (decision Some(\"approve\"))")
        );
    }

    #[test]
    fn tally_rejection_wins_a_tie() {
        let mut t = Tally {
            approval_voters: vec!["a".into()],
            rejection_voters: vec![],
            min_approval_count: 2,
            min_rejection_count: 1,
            decision: None,
        };
        assert_eq!(t.reached(), None);
        t.approval_voters.push("b".into());
        assert_eq!(t.reached(), Some(Vote::Approve));
        t.rejection_voters.push("c".into());
        assert_eq!(t.reached(), Some(Vote::Reject));
    }
}
