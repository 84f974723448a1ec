//! The sweep port: the metadb queries trigger-sf's periodic sweep repairs
//! with, for events and starts that were lost (a claim without an ARN, a
//! missed status change, a trunk head no run knows). Nothing else calls them.

use std::future::Future;

use crate::deploy::ExecutionRecord;

/// The sweep's repair queries. Implementations: `live-ci-metadb`'s PostgreSQL
/// and RDS Data API adapters (one SQL text).
pub trait SweepStore: Send + Sync {
    /// The adapter's error, classified retryable or permanent.
    type Error: crate::port::Classify;

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
}
