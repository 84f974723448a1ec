//! The git host's answers the receiver needs before acting on a maintainer's
//! `/plan` command: who the bot itself is, the commenter's permission and the
//! pull request's head.

use std::future::Future;

use crate::webhook::{PullRequestHead, RepoPermission};

/// What the receiver asks the git host to act on a maintainer's command.
/// Implemented by the GitHub adapter (`live-ci-github`).
pub trait PullRequestAuthority: Send + Sync {
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
