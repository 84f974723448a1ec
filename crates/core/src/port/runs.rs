//! The runs port: runs, their place on the trunk and the merge lock, in the
//! metadb. create-deploy-stack creates runs, trigger-sf advances and finishes
//! them, the receiver and the CLI read the lock. Every method is one guarded
//! statement or one transaction, so concurrent and repeated invocations are
//! safe: a guarded update that finds nothing to do reports so instead of
//! failing.

use std::future::Future;

use crate::account::Account;
use crate::deploy::{
    CreatedRun, MergeLockRow, NewRollback, NewRun, PendingUnit, RunEnd, RunFinish, RunId,
    RunProgress, RunRecord,
};
use crate::path::RepoPath;

/// Runs and the merge lock. Implementations: `live-ci-metadb`'s PostgreSQL and
/// RDS Data API adapters, which share one SQL text (as for
/// [`super::ExecutionStore`], [`super::SweepStore`] and
/// [`super::ApprovalStore`]).
pub trait RunStore: Send + Sync {
    /// The adapter's error, classified retryable or permanent.
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

    /// The run with that id, if any.
    fn run(
        &self,
        run_id: RunId,
    ) -> impl Future<Output = Result<Option<RunRecord>, Self::Error>> + Send;

    /// The runs `by` superseded (merges it deploys together with newer trunk
    /// commits), oldest on the trunk first: their commits learn how `by` ended.
    fn superseded_runs(
        &self,
        by: RunId,
    ) -> impl Future<Output = Result<Vec<RunRecord>, Self::Error>> + Send;

    /// The run of a merge commit, if one was created.
    fn run_by_commit(
        &self,
        commit_id: &str,
    ) -> impl Future<Output = Result<Option<RunRecord>, Self::Error>> + Send;

    /// The median duration in seconds (claim to end) of the earlier successful
    /// executions of each of `paths` (not rollbacks); units never deployed are
    /// left out. The critical-path priority ranks new runs with it.
    fn unit_durations(
        &self,
        paths: &[RepoPath],
    ) -> impl Future<Output = Result<Vec<(RepoPath, f64)>, Self::Error>> + Send;

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

    /// The run's executions counted by status.
    fn run_progress(
        &self,
        run_id: RunId,
    ) -> impl Future<Output = Result<RunProgress, Self::Error>> + Send;

    /// Finishes a running run with nothing waiting or running (succeeded when
    /// every execution succeeded), hands the merge lock to the queued run
    /// newest on the trunk and starts it, superseding the other queued runs
    /// (see [`RunStore::create_run`]). A no-op when the run is not finishable.
    fn finish_run(
        &self,
        run_id: RunId,
    ) -> impl Future<Output = Result<RunFinish, Self::Error>> + Send;

    /// [`finish_run`](Self::finish_run), with the run, its counts, the runs it
    /// superseded and the merge lock as they are after it, in one round trip.
    fn end_run(&self, run_id: RunId) -> impl Future<Output = Result<RunEnd, Self::Error>> + Send;

    /// The merge lock row as it is now.
    fn merge_lock(&self) -> impl Future<Output = Result<MergeLockRow, Self::Error>> + Send;

    /// The units (configuration paths) of the running and queued runs, sorted:
    /// what a pull request must not touch to merge under the `units` merge
    /// lock scope (`merge_lock::Scope::status_for`).
    fn busy_units(&self) -> impl Future<Output = Result<Vec<String>, Self::Error>> + Send;

    /// Records that create-deploy-stack found nothing to deploy up to trunk
    /// commit `commit_id` (no run is created for it), so the sweep takes the
    /// commit as known. Repeats change nothing.
    fn record_no_op_merge(
        &self,
        commit_id: &str,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;
}
