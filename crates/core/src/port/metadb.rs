//! The metadb port: the pipeline's durable state (runs, executions, votes, the
//! merge lock). Every method is one guarded statement or one transaction, so
//! concurrent and repeated Lambda invocations are safe: a guarded update that
//! finds nothing to do reports so instead of failing.

use std::future::Future;

use super::SavedPlan;
use crate::account::Account;
use crate::deploy::{
    CreatedRun, ExecutionRecord, FinishOutcome, MergeLockRow, NewRollback, NewRun, Outcome,
    PendingUnit, RunFinish, RunId, RunProgress, RunRecord, Tally, Vote, VoteOutcome,
};
use crate::operate::StartFailure;
use crate::path::RepoPath;

/// The metadb. Implementations: `live-ci-metadb`'s PostgreSQL and RDS Data API
/// adapters, which share one SQL text.
pub trait Metadb: Send + Sync {
    type Error: crate::port::Classify;

    /// Stores the account configuration (replacing accounts of the same name).
    fn upsert_accounts(
        &self,
        accounts: &[Account],
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Creates a run and all its executions in one transaction, after
    /// [`NewRun::validate`] (bad input writes nothing). The run starts at once
    /// when no run holds the merge lock, otherwise it queues. When the lock is
    /// free, the queued run newest on the trunk (`trunk_seq`) starts and every
    /// other queued run is superseded by it (its range covers theirs), as is a
    /// queued run no newer than the last started one. A second call for the same commit writes
    /// nothing and returns the existing run.
    fn create_run(
        &self,
        run: &NewRun,
    ) -> impl Future<Output = Result<CreatedRun, Self::Error>> + Send;

    /// Runs that are not superseded, newest on the trunk first (`trunk_seq`,
    /// then `run_id`), at most `limit`: what a new merge is placed against.
    fn trunk_runs(
        &self,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<RunRecord>, Self::Error>> + Send;

    /// Records a merge another run covers as `superseded` by `by`, with no
    /// executions (`run.executions` is ignored): it is never applied. Returns
    /// the run id, or `None` when a run for the commit already exists.
    fn record_superseded(
        &self,
        run: &NewRun,
        by: RunId,
    ) -> impl Future<Output = Result<Option<RunId>, Self::Error>> + Send;

    /// Units whose latest (non-rollback) execution in a finished run failed or
    /// was aborted: they join the next run's set.
    fn pending_units(&self) -> impl Future<Output = Result<Vec<PendingUnit>, Self::Error>> + Send;

    fn run(
        &self,
        run_id: RunId,
    ) -> impl Future<Output = Result<Option<RunRecord>, Self::Error>> + Send;

    /// The run of a merge commit, if one was created.
    fn run_by_commit(
        &self,
        commit_id: &str,
    ) -> impl Future<Output = Result<Option<RunRecord>, Self::Error>> + Send;

    fn execution(
        &self,
        execution_id: &str,
    ) -> impl Future<Output = Result<Option<ExecutionRecord>, Self::Error>> + Send;

    /// Every execution of a run, highest priority first.
    fn executions(
        &self,
        run_id: RunId,
    ) -> impl Future<Output = Result<Vec<ExecutionRecord>, Self::Error>> + Send;

    /// Moves up to `limit` ready executions of a running run from `waiting` to
    /// `running` and returns them, highest priority first. Ready: every
    /// execution in its `wait_for` succeeded, every execution of its
    /// `wait_accounts` (same action) succeeded, and the run has a free slot
    /// under `max_parallel`. Concurrent callers never claim the same execution.
    fn claim_ready(
        &self,
        run_id: RunId,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<ExecutionRecord>, Self::Error>> + Send;

    /// Records the Step Functions execution started for a claim. False when the
    /// execution is not running or already has a different ARN.
    fn attach_execution_arn(
        &self,
        execution_id: &str,
        arn: &str,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// Puts a claim whose start failed back to `waiting`. Only a claim without an
    /// ARN is released; false otherwise.
    fn release_claim(
        &self,
        execution_id: &str,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// Records a failed start of a claim without an ARN: it goes back to
    /// waiting, unless this was attempt `max_attempts`, when it fails with the
    /// error as its reason (and its dependents are aborted, as for any
    /// failure) instead of being retried forever.
    fn record_start_failure(
        &self,
        execution_id: &str,
        error: &str,
        max_attempts: u32,
    ) -> impl Future<Output = Result<StartFailure, Self::Error>> + Send;

    /// The median duration in seconds (claim to end) of the earlier successful
    /// executions of each of `paths` (not rollbacks); units never deployed are
    /// left out. The critical-path priority ranks new runs with it.
    fn unit_durations(
        &self,
        paths: &[RepoPath],
    ) -> impl Future<Output = Result<Vec<(RepoPath, f64)>, Self::Error>> + Send;

    /// Records how a running execution ended. A failure aborts its transitive
    /// dependents (directory and account waits) with reason "ancestor failed",
    /// and with the run's fail-fast every waiting execution of the run, in the
    /// same transaction. Repeats change nothing.
    fn record_finished(
        &self,
        execution_id: &str,
        outcome: Outcome,
        reason: Option<&str>,
    ) -> impl Future<Output = Result<FinishOutcome, Self::Error>> + Send;

    /// Aborts every waiting transitive dependent of a failed execution (and with
    /// fail-fast every waiting execution of its run); returns the execution ids
    /// it aborted (none on a repeat). `record_finished` already does this; the
    /// sweep calls it to repair.
    fn abort_dependents(
        &self,
        execution_id: &str,
    ) -> impl Future<Output = Result<Vec<String>, Self::Error>> + Send;

    /// Stores the provider resources an apply created (for rollbacks).
    fn record_new_resources(
        &self,
        execution_id: &str,
        resources: &[String],
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// Records the plan the plan task saved for a running execution (a re-plan
    /// replaces it); false when the execution has ended.
    fn record_saved_plan(
        &self,
        execution_id: &str,
        plan: &SavedPlan,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// The plan recorded for the execution, if any.
    fn saved_plan(
        &self,
        execution_id: &str,
    ) -> impl Future<Output = Result<Option<SavedPlan>, Self::Error>> + Send;

    /// Adds rollback executions ([`crate::deploy::plan_rollbacks`]) to a
    /// running run whose other executions have all ended, after the same checks
    /// as a new run's executions, in one transaction. Returns the execution ids
    /// added: none when the run is not running, still has executions waiting or
    /// running, or already has rollbacks (repeats add nothing).
    fn add_rollbacks(
        &self,
        run_id: RunId,
        rollbacks: &[NewRollback],
    ) -> impl Future<Output = Result<Vec<String>, Self::Error>> + Send;

    fn run_progress(
        &self,
        run_id: RunId,
    ) -> impl Future<Output = Result<RunProgress, Self::Error>> + Send;

    /// Finishes a running run with nothing waiting or running (succeeded when
    /// every execution succeeded), hands the merge lock to the queued run
    /// newest on the trunk and starts it, superseding the other queued runs
    /// (see [`Metadb::create_run`]). A no-op when the run is not finishable.
    fn finish_run(
        &self,
        run_id: RunId,
    ) -> impl Future<Output = Result<RunFinish, Self::Error>> + Send;

    fn merge_lock(&self) -> impl Future<Output = Result<MergeLockRow, Self::Error>> + Send;

    /// Records that create-deploy-stack found nothing to deploy up to trunk
    /// commit `commit_id` (no run is created for it), so the sweep takes the
    /// commit as known. Repeats change nothing.
    fn record_no_op_merge(
        &self,
        commit_id: &str,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// The sweep's claim to launch create-deploy-stack for the trunk head
    /// `commit_id`: `Some(n)` (its n-th launch) when no run has the commit, no
    /// no-op merge is recorded for it and no launch for it is younger than
    /// `cooldown_secs`; `None` otherwise. Of concurrent callers at most one
    /// gets `Some`.
    fn claim_trunk_launch(
        &self,
        commit_id: &str,
        cooldown_secs: u32,
    ) -> impl Future<Output = Result<Option<u32>, Self::Error>> + Send;

    /// Running executions claimed more than `older_than_secs` ago that still
    /// have no ARN: their start was lost, the sweep releases or retries them.
    fn stale_claims(
        &self,
        older_than_secs: u32,
    ) -> impl Future<Output = Result<Vec<ExecutionRecord>, Self::Error>> + Send;

    /// Running executions with an ARN, oldest first: the sweep checks them
    /// against Step Functions for missed status-change events.
    fn running_with_arn(
        &self,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<ExecutionRecord>, Self::Error>> + Send;

    /// Stores (or changes) one voter's vote on a running execution until a
    /// decision is reached.
    fn cast_vote(
        &self,
        execution_id: &str,
        voter: &str,
        vote: Vote,
    ) -> impl Future<Output = Result<VoteOutcome, Self::Error>> + Send;

    fn tally(
        &self,
        execution_id: &str,
    ) -> impl Future<Output = Result<Option<Tally>, Self::Error>> + Send;

    /// Records the decision the votes reached, once: exactly one caller gets
    /// `Some` and sends the task token; everyone else gets `None`.
    fn decide(
        &self,
        execution_id: &str,
    ) -> impl Future<Output = Result<Option<Vote>, Self::Error>> + Send;
}
