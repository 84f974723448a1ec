//! The deploy comment's port: which pull requests a run's comment goes to,
//! and the digest of the body last written on each, so trigger-sf edits a
//! comment only when its rendered body changed.

use std::future::Future;

use crate::deploy::RunId;

/// One pull request a run's deploy comment goes to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct CommentTarget {
    /// The pull request's number.
    pub pr_number: u64,
    /// The SHA-256 of the body last written there
    /// ([`crate::deploy_comment::digest`]); `None` when nothing was written
    /// or the last write failed.
    pub digest: Option<String>,
}

/// Where deploy comments go and what they last said. Implementations:
/// `live-ci-metadb`'s PostgreSQL and RDS Data API adapters (one SQL text).
pub trait DeployCommentStore: Send + Sync {
    /// The adapter's error, classified retryable or permanent.
    type Error: crate::port::Classify;

    /// The pull requests run `run_id` deploys: its own first, then those of
    /// the runs it superseded, transitively (a coalesced run deploys their
    /// changes too), at most `limit`; pull request 0 (a direct push) never.
    /// Empty for an unknown run.
    fn deploy_comment_targets(
        &self,
        run_id: RunId,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<CommentTarget>, Self::Error>> + Send;

    /// Compare-and-set before the write: records `digest` for (run, pull
    /// request) and returns true only when it differs from the stored one, so
    /// of callers holding the same render exactly one writes it.
    fn claim_deploy_comment(
        &self,
        run_id: RunId,
        pr_number: u64,
        digest: &str,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// After a failed write: clears the stored digest if it is still
    /// `digest`, so the next event writes the comment again.
    fn release_deploy_comment(
        &self,
        run_id: RunId,
        pr_number: u64,
        digest: &str,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;
}
