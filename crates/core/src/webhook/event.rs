//! The parts of GitHub's webhook payloads live-ci reads (unknown fields ignored,
//! so GitHub adding fields never breaks a delivery).

use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PingEvent {
    pub zen: Option<String>,
    pub hook_id: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequestEvent {
    pub action: String,
    pub number: u64,
    pub pull_request: PullRequestPayload,
    pub repository: RepositoryPayload,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequestPayload {
    pub number: u64,
    pub html_url: String,
    pub state: String,
    #[serde(default)]
    pub draft: bool,
    #[serde(default)]
    pub merged: bool,
    pub merge_commit_sha: Option<String>,
    pub head: RefPayload,
    pub base: RefPayload,
    /// The author's relation to the repository (`OWNER`, `MEMBER`,
    /// `COLLABORATOR`, `CONTRIBUTOR`, `FIRST_TIME_CONTRIBUTOR`, `NONE`, …).
    #[serde(default)]
    pub author_association: String,
    pub user: Option<UserPayload>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RefPayload {
    #[serde(rename = "ref")]
    pub name: String,
    pub sha: String,
    /// The repository the branch lives in: a fork's for a fork's pull request,
    /// null when that fork was deleted.
    #[serde(default)]
    pub repo: Option<RepositoryPayload>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct UserPayload {
    pub login: String,
    /// `User`, `Bot` (a GitHub App or other bot account), `Organization`.
    #[serde(rename = "type", default)]
    pub kind: String,
}

/// An `issue_comment` delivery (pull requests are issues to GitHub: their
/// comments arrive here, with `issue.pull_request` set).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IssueCommentEvent {
    pub action: String,
    pub issue: IssuePayload,
    pub comment: CommentPayload,
    pub repository: RepositoryPayload,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IssuePayload {
    pub number: u64,
    /// Present only when the issue is a pull request.
    #[serde(default)]
    pub pull_request: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CommentPayload {
    /// The comment's id: what a vote is counted from (approval_response
    /// reads the comment again by it; `0` when absent).
    #[serde(default)]
    pub id: u64,
    #[serde(default)]
    pub body: String,
    pub user: UserPayload,
    #[serde(default)]
    pub author_association: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RepositoryPayload {
    pub full_name: String,
    pub default_branch: Option<String>,
}
