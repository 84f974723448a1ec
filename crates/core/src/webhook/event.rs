//! The parts of GitHub's webhook payloads live-ci reads (unknown fields ignored,
//! so GitHub adding fields never breaks a delivery).

use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct PingEvent {
    pub(crate) zen: Option<String>,
    pub(crate) hook_id: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct PullRequestEvent {
    pub(crate) action: String,
    pub(crate) number: u64,
    pub(crate) pull_request: PullRequestPayload,
    pub(crate) repository: RepositoryPayload,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct PullRequestPayload {
    pub(crate) number: u64,
    pub(crate) html_url: String,
    pub(crate) state: String,
    #[serde(default)]
    pub(crate) draft: bool,
    #[serde(default)]
    pub(crate) merged: bool,
    pub(crate) merge_commit_sha: Option<String>,
    pub(crate) head: RefPayload,
    pub(crate) base: RefPayload,
    /// The author's relation to the repository (`OWNER`, `MEMBER`,
    /// `COLLABORATOR`, `CONTRIBUTOR`, `FIRST_TIME_CONTRIBUTOR`, `NONE`, …).
    #[serde(default)]
    pub(crate) author_association: String,
    pub(crate) user: Option<UserPayload>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct RefPayload {
    #[serde(rename = "ref")]
    pub(crate) name: String,
    pub(crate) sha: String,
    /// The repository the branch lives in: a fork's for a fork's pull request,
    /// null when that fork was deleted.
    #[serde(default)]
    pub(crate) repo: Option<RepositoryPayload>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct UserPayload {
    pub(crate) login: String,
    /// `User`, `Bot` (a GitHub App or other bot account), `Organization`.
    #[serde(rename = "type", default)]
    pub(crate) kind: String,
}

/// An `issue_comment` delivery (pull requests are issues to GitHub: their
/// comments arrive here, with `issue.pull_request` set).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct IssueCommentEvent {
    pub(crate) action: String,
    pub(crate) issue: IssuePayload,
    pub(crate) comment: CommentPayload,
    pub(crate) repository: RepositoryPayload,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct IssuePayload {
    pub(crate) number: u64,
    /// Present only when the issue is a pull request.
    #[serde(default)]
    pub(crate) pull_request: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct CommentPayload {
    /// The comment's id: what a vote is counted from (approval_response
    /// reads the comment again by it; `0` when absent).
    #[serde(default)]
    pub(crate) id: u64,
    #[serde(default)]
    pub(crate) body: String,
    pub(crate) user: UserPayload,
    #[serde(default)]
    pub(crate) author_association: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct RepositoryPayload {
    pub(crate) full_name: String,
    pub(crate) default_branch: Option<String>,
}
