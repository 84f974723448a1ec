//! The git host's ports (GitHub in production): commit statuses, pull-request
//! files and comments, open pull requests, where a branch points and which
//! merged pull request produced a commit.

use std::future::Future;

use crate::status::{CommitStatus, PullRequest};
use crate::task::MergedPullRequest;

/// The git host. Implemented by the GitHub adapter (`live-ci-github`) and by
/// recording fakes in tests.
pub trait GitHost: Send + Sync {
    /// The adapter's error, classified retryable or permanent.
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

    /// The body of the bot's own comment on the pull request that contains
    /// `marker` (the one [`upsert_comment`](Self::upsert_comment) keeps), if
    /// there is one. Only the bot's: anyone can write a marker.
    fn bot_comment(
        &self,
        number: u64,
        marker: &str,
    ) -> impl Future<Output = Result<Option<String>, Self::Error>> + Send;

    /// Whether a status's `text` (a unit's plan) reaches the host: true when
    /// statuses go out as GitHub check runs, whose output shows it. A caller
    /// renders the text only then (a commit status has no room for it).
    fn shows_status_text(&self) -> bool {
        false
    }
}

/// The git host's issues, for the drift check (issue 32 item 4): one issue
/// per drifted unit, found again by a hidden marker in its body, edited while
/// the drift lasts and closed when it is gone. A trait of its own beside
/// [`GitHost`] so that only the job that files issues needs them (and its
/// GitHub token the issues permission).
pub trait IssueHost: Send + Sync {
    /// The adapter's error, classified retryable or permanent.
    type Error: super::Classify;

    /// The open issue the bot itself opened whose body contains `marker`
    /// (anyone can write a marker into an issue of theirs: never theirs).
    fn find_bot_issue(
        &self,
        marker: &str,
    ) -> impl Future<Output = Result<Option<u64>, Self::Error>> + Send;

    /// Opens an issue; returns its number.
    fn create_issue(
        &self,
        title: &str,
        body: &str,
    ) -> impl Future<Output = Result<u64, Self::Error>> + Send;

    /// Replaces an issue's title and body.
    fn update_issue(
        &self,
        number: u64,
        title: &str,
        body: &str,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Comments `comment` on the issue, then closes it.
    fn close_issue(
        &self,
        number: u64,
        comment: &str,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// The issue's web address, for the notification.
    fn issue_url(&self, number: u64) -> Option<String>;
}

/// Where a branch of the repository points now, and what put it there.
/// Implemented by the GitHub adapter; the sweep compares the trunk's head with
/// what the metadb knows, so a merge whose webhook was lost is still deployed
/// (and only a merge: a head no merged pull request produced is not).
pub trait BranchHead: Send + Sync {
    /// The adapter's error, classified retryable or permanent.
    type Error: super::Classify;

    /// The commit `branch` points at.
    fn branch_head(&self, branch: &str)
    -> impl Future<Output = Result<String, Self::Error>> + Send;

    /// The pull requests the host associates with commit `sha` (GitHub's
    /// `GET /repos/{owner}/{repo}/commits/{sha}/pulls`): for a commit on the
    /// default branch, the merged one that introduced it.
    fn commit_pull_requests(
        &self,
        sha: &str,
    ) -> impl Future<Output = Result<Vec<CommitPullRequest>, Self::Error>> + Send;
}

/// A pull request associated with a commit, as the git host lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitPullRequest {
    /// The pull request's number.
    pub number: u64,
    /// When it was merged; `None` while open or when closed unmerged.
    pub merged_at: Option<String>,
    /// The commit its merge made on the base (merge, squash or last rebased
    /// commit); GitHub fills it for open pull requests too (a test merge).
    pub merge_commit_sha: Option<String>,
    /// The branch it merges into.
    pub base_ref: String,
    /// The base branch's commit as GitHub records it for the pull request.
    pub base_sha: String,
    /// The branch it merges.
    pub head_ref: String,
    /// The head branch's latest commit.
    pub head_sha: String,
}

/// The merged pull request that produced commit `sha`: merged, and whose merge
/// commit is `sha` itself (a commit merely contained in a pull request, or
/// its test merge while open, is not). `None`: `sha` came from a direct push.
pub fn merge_that_produced(sha: &str, pulls: &[CommitPullRequest]) -> Option<MergedPullRequest> {
    pulls
        .iter()
        .find(|p| {
            p.merged_at.as_deref().is_some_and(|m| !m.is_empty())
                && p.merge_commit_sha
                    .as_deref()
                    .is_some_and(|m| m.eq_ignore_ascii_case(sha))
        })
        .map(|p| MergedPullRequest {
            number: p.number,
            base_ref: p.base_ref.clone(),
            base_sha: p.base_sha.clone(),
            head_ref: p.head_ref.clone(),
            head_sha: p.head_sha.clone(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pull(number: u64, merged: bool, merge_commit: &str) -> CommitPullRequest {
        CommitPullRequest {
            number,
            merged_at: merged.then(|| "2026-11-26T05:00:00Z".to_string()),
            merge_commit_sha: Some(merge_commit.to_string()),
            base_ref: "main".into(),
            base_sha: "b".into(),
            head_ref: format!("pr-{number}"),
            head_sha: "h".into(),
        }
    }

    #[test]
    fn only_a_merged_pull_request_whose_merge_commit_is_the_head_produced_it() {
        let sha = "6dcb09b5b57875f334f61aebed695e2e4193db5e";
        let found = merge_that_produced(
            sha,
            &[
                pull(1, true, "1111"),
                pull(2, false, sha),
                pull(3, true, sha),
            ],
        )
        .unwrap();
        assert_eq!((found.number, found.head_ref.as_str()), (3, "pr-3"));
        // a pull request that contains the commit, one not merged, none at all
        assert_eq!(merge_that_produced(sha, &[pull(1, true, "1111")]), None);
        assert_eq!(merge_that_produced(sha, &[pull(2, false, sha)]), None);
        assert_eq!(merge_that_produced(sha, &[]), None);
    }
}
