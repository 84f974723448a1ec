//! The operator's run-control port (the metadb in production): list, abort,
//! retry and unlock runs, and the log of what operators did.

use std::future::Future;

use crate::deploy::RunId;
use crate::operate::{
    AbortMarked, LoggedAction, OperatorAction, Refusal, RetryCreated, RunSummary, Unlocked,
};

/// The metadb side of the operator's controls. Each method is one transaction
/// under the merge lock row, so it cannot interleave with a run's creation or
/// hand-over.
pub trait RunControl: Send + Sync {
    /// The adapter's error, classified retryable or permanent.
    type Error: super::Classify;

    /// The newest `limit` runs, newest first, with their progress.
    fn runs(&self, limit: u32)
    -> impl Future<Output = Result<Vec<RunSummary>, Self::Error>> + Send;

    /// Aborts every waiting and running execution of a queued or running run
    /// (a queued run is finished as failed at once); returns what to stop.
    /// `Err(Refusal)` inside: the run is missing or already finished.
    fn mark_aborted(
        &self,
        run_id: RunId,
        reason: &str,
    ) -> impl Future<Output = Result<Result<AbortMarked, Refusal>, Self::Error>> + Send;

    /// Queues a new run at the same commit with the failed and aborted units of
    /// `run_id`, which must be the last run and finished. Edges between the
    /// retried units are kept; the ones to units that succeeded are done.
    fn retry_run(
        &self,
        run_id: RunId,
    ) -> impl Future<Output = Result<Result<RetryCreated, Refusal>, Self::Error>> + Send;

    /// Clears the merge lock row: only when no run is running, or with `force`.
    fn unlock(
        &self,
        force: bool,
    ) -> impl Future<Output = Result<Result<Unlocked, Refusal>, Self::Error>> + Send;

    /// Appends `action` to the operator log.
    fn log_action(
        &self,
        action: &OperatorAction,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// The newest `limit` logged actions, newest first.
    fn actions(
        &self,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<LoggedAction>, Self::Error>> + Send;
}
