//! The drift port: what each drift check found per unit, the latest result
//! per unit (`live-ci drift`), and each unit's open drift issue, in the
//! metadb. The drift job writes through it with its own restricted metadb
//! role (migration 0020): it never touches runs, executions or the merge lock.

use std::future::Future;

use crate::drift::{DriftResult, UnitDrift};
use crate::path::RepoPath;

/// Drift checks and their results. Implementations: `live-ci-metadb`'s
/// PostgreSQL and RDS Data API adapters (one SQL text).
pub trait DriftStore: Send + Sync {
    /// The adapter's error, classified retryable or permanent.
    type Error: crate::port::Classify;

    /// Records a check of trunk commit `commit_id` with every unit's result,
    /// in one transaction; returns the check's id.
    fn record_drift_check(
        &self,
        commit_id: &str,
        results: &[UnitDrift],
    ) -> impl Future<Output = Result<i64, Self::Error>> + Send;

    /// The latest result of every unit ever checked, sorted by unit, with the
    /// unit's open drift issue.
    fn latest_drift(&self) -> impl Future<Output = Result<Vec<DriftResult>, Self::Error>> + Send;

    /// The unit's open drift issue, if one is recorded.
    fn drift_issue(
        &self,
        unit: &RepoPath,
    ) -> impl Future<Output = Result<Option<u64>, Self::Error>> + Send;

    /// The newest run's id (0 when there is none): a drift check's start
    /// mark. Run ids only grow, so every run made after the mark has a
    /// greater id ([`Self::units_of_runs_after`]).
    fn latest_run_id(&self) -> impl Future<Output = Result<i64, Self::Error>> + Send;

    /// The units of every run whose id is greater than `run_id`, whatever
    /// its status: the runs made since a check's start mark, including one
    /// that started and finished while the check planned ("a merge during a
    /// check wins", which the running and queued runs alone would miss).
    fn units_of_runs_after(
        &self,
        run_id: i64,
    ) -> impl Future<Output = Result<Vec<String>, Self::Error>> + Send;

    /// Records `issue` as the unit's open drift issue (`None`: closed).
    fn set_drift_issue(
        &self,
        unit: &RepoPath,
        issue: Option<u64>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;
}
