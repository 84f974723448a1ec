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
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RefPayload {
    #[serde(rename = "ref")]
    pub name: String,
    pub sha: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RepositoryPayload {
    pub full_name: String,
    pub default_branch: Option<String>,
}
