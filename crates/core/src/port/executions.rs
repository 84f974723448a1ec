//! The executions port: one row per unit deployment of a run, and the
//! scheduler's moves on it (claim, start, finish, abort dependents) plus what
//! the plan and apply tasks record. trigger-sf schedules, the terra-run task
//! records plans and new resources. Every method is one guarded statement or
//! one transaction, so concurrent and repeated invocations are safe.

use std::future::Future;

use super::SavedPlan;
use crate::deploy::{
    Claimed, ExecutionRecord, FinishOutcome, Outcome, RunId, Settled, StatusChange,
};
use crate::operate::StartFailure;

/// Executions and their scheduling. Implementations: `live-ci-metadb`'s
/// PostgreSQL and RDS Data API adapters (one SQL text).
pub trait ExecutionStore: Send + Sync {
    /// The adapter's error, classified retryable or permanent.
    type Error: crate::port::Classify;

    /// The execution with that id, if any.
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

    /// [`claim_ready`](Self::claim_ready) and the run's counts right after it,
    /// as one round trip.
    fn claim_next(
        &self,
        run_id: RunId,
        limit: u32,
    ) -> impl Future<Output = Result<Claimed, Self::Error>> + Send;

    /// A Step Functions status change as one round trip and one transaction:
    /// the execution it names; unless another ARN is recorded for it, its end
    /// recorded as [`record_finished`](Self::record_finished) does (when the
    /// change is an end), then its run claimed as
    /// [`claim_next`](Self::claim_next) does, with up to `claim_limit`.
    fn settle(
        &self,
        change: &StatusChange<'_>,
        claim_limit: u32,
    ) -> impl Future<Output = Result<Settled, Self::Error>> + Send;

    /// Records the Step Functions execution started for a claim. False when the
    /// execution is not running or already has a different ARN.
    fn attach_execution_arn(
        &self,
        execution_id: &str,
        arn: &str,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// [`attach_execution_arn`](Self::attach_execution_arn) for a batch of
    /// `(execution id, ARN)` in one round trip; returns the ids attached.
    fn attach_execution_arns(
        &self,
        started: &[(String, String)],
    ) -> impl Future<Output = Result<Vec<String>, Self::Error>> + Send;

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

    /// Records the policy denials (`rule: message`, not empty) of the plan
    /// whose hash is `plan_sha256`, before that plan is recorded: with
    /// `policy_override` on, the plan goes to the vote with them, and they
    /// apply only while it is the execution's recorded plan.
    fn record_policy_denials(
        &self,
        execution_id: &str,
        plan_sha256: &str,
        denials: &[String],
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// The plan recorded for the execution, if any.
    fn saved_plan(
        &self,
        execution_id: &str,
    ) -> impl Future<Output = Result<Option<SavedPlan>, Self::Error>> + Send;
}
