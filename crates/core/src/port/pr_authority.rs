//! The git host's answers the receiver needs before acting on a maintainer's
//! `/plan` command: who the bot itself is, the commenter's permission and the
//! pull request's head.

use std::future::Future;

use crate::webhook::{PullRequestHead, RepoPermission};

/// What the receiver asks the git host to act on a maintainer's command.
/// Implemented by the GitHub adapter (`live-ci-github`).
pub trait PullRequestAuthority: Send + Sync {
    /// The adapter's error, classified retryable or permanent.
    type Error: super::Classify;

    /// The login live-ci's own comments are made by (a token's user, or an
    /// App's `<slug>[bot]`): its comments are never commands.
    fn bot_login(&self) -> impl Future<Output = Result<String, Self::Error>> + Send;

    /// `user`'s permission on the repository.
    fn permission(
        &self,
        user: &str,
    ) -> impl Future<Output = Result<RepoPermission, Self::Error>> + Send;

    /// The pull request's current head and base.
    fn pull_request(
        &self,
        number: u64,
    ) -> impl Future<Output = Result<PullRequestHead, Self::Error>> + Send;
}

/// A comment on a pull request, as the git host says it is now: who wrote it
/// and what it says. A vote is counted from this, never from a payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequestComment {
    /// The comment's id.
    pub id: u64,
    /// The pull request (issue) the comment is on.
    pub number: u64,
    /// The login of the comment's author.
    pub author: String,
    /// The comment's text as it is now.
    pub body: String,
}

/// What approval_response asks the git host to count a vote from the pull
/// request (issue 29): the comment by id, the pull request's merge commit,
/// team membership, and the one reply. Implemented by the GitHub adapter
/// (`live-ci-github`) and by the test kit's fake GitHub.
pub trait PullRequestVotes: Send + Sync {
    /// The adapter's error, classified retryable or permanent.
    type Error: super::Classify;

    /// The repository's issue comment `id` (`None`: GitHub knows none, e.g.
    /// deleted since).
    fn vote_comment(
        &self,
        id: u64,
    ) -> impl Future<Output = Result<Option<PullRequestComment>, Self::Error>> + Send;

    /// The merge commit of pull request `number`; `None` when it is not
    /// merged.
    fn merge_commit(
        &self,
        number: u64,
    ) -> impl Future<Output = Result<Option<String>, Self::Error>> + Send;

    /// Whether `login` is an active member of `org`'s team `team_slug`
    /// (`GET /orgs/{org}/teams/{team_slug}/memberships/{login}`, state
    /// "active"; a pending invitation is not membership).
    fn team_member(
        &self,
        org: &str,
        team_slug: &str,
        login: &str,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// Adds one comment to pull request `number` (the vote's answer).
    fn reply(
        &self,
        number: u64,
        body: &str,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;
}
