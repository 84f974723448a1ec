//! Votes from the pull request with GitHub absent from the responder's
//! ports: the invoke fails before anything is read. The votes counted
//! through GitHub are live-ci-e2e's (`tests/e2e/tests/approval/github_votes.rs`:
//! they mail through approval_request first).
#![allow(clippy::unwrap_used)]

use live_ci_approval_response::{GitHubVoteError, GitHubVoteRequest, GitHubVoting};
use live_ci_core::account::Accounts;
use live_ci_core::voter_identity::VoterLogins;
use live_ci_metadb::PgMetadb;

use crate::pages::responder;

#[tokio::test]
async fn a_github_vote_without_github_in_the_ports_fails_naming_the_missing_setting() {
    // Nothing listens on port 1: a metadb read would be a port error, not
    // this one.
    let db = PgMetadb::connect("postgresql://live_ci@127.0.0.1:1/live_ci", 1).unwrap();
    let r = responder(&db).await;
    let voting = GitHubVoting {
        repository: "acme/live".into(),
        accounts: Accounts::from_json("ACCOUNT_PARENT_CFG", "[]").unwrap(),
        logins: VoterLogins::default(),
    };
    let request = GitHubVoteRequest {
        repository: "acme/live".into(),
        pull_request: 43,
        comment_id: 9,
    };
    let err = r.github_vote(&voting, &request).await.unwrap_err();
    assert!(matches!(err, GitHubVoteError::NotConfigured), "{err:?}");
    assert_eq!(
        err.to_string(),
        "a github_vote invoke, but votes from the pull request are not configured (REPO_FULL_NAME unset)"
    );
    assert!(r.tokens.calls().is_empty());
}
