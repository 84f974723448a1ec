//! The git host's ports (GitHub in production): commit statuses, pull-request
//! files and comments, open pull requests, and where a branch points.

use std::future::Future;

use crate::status::{CommitStatus, PullRequest};

/// The git host. Implemented by the GitHub adapter (`live-ci-github`) and by
/// recording fakes in tests.
pub trait GitHost: Send + Sync {
    type Error: super::Classify;

    /// Creates a commit status (GitHub keeps the newest per context).
    fn set_status(
        &self,
        status: &CommitStatus,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Every file a pull request changes (all pages).
    fn pull_request_files(
        &self,
        number: u64,
    ) -> impl Future<Output = Result<Vec<String>, Self::Error>> + Send;

    /// Every open pull request against `base` (all pages).
    fn open_pull_requests(
        &self,
        base: &str,
    ) -> impl Future<Output = Result<Vec<PullRequest>, Self::Error>> + Send;

    /// Creates the pull request's comment that contains `marker`, or updates it
    /// in place, so new pushes refresh one comment instead of adding more.
    fn upsert_comment(
        &self,
        number: u64,
        marker: &str,
        body: &str,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;
}

/// Where a branch of the repository points now. Implemented by the GitHub
/// adapter; the sweep compares the trunk's head with what the metadb knows, so
/// a merge whose webhook was lost is still deployed.
pub trait BranchHead: Send + Sync {
    type Error: super::Classify;

    /// The commit `branch` points at.
    fn branch_head(&self, branch: &str)
    -> impl Future<Output = Result<String, Self::Error>> + Send;
}
