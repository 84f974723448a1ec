//! A git host fake (the commit-status and pull-request port) that records what
//! the code under test posts; `live_ci_core::status::NoGitHost` is the
//! do-nothing one.

use std::collections::BTreeMap;
use std::sync::Mutex;

use live_ci_core::status::{CommitStatus, PullRequest};

use live_ci_core::port::GitHost;

use crate::params::{FakeError, lock};

/// Records statuses and keeps comments by marker, as GitHub's adapter does
/// (one comment per marker, updated in place); lists the open pull requests
/// and the files it was given.
#[derive(Debug, Default)]
pub struct RecordingGitHost {
    /// Every status posted, in order.
    pub statuses: Mutex<Vec<CommitStatus>>,
    /// The current comment per (pull request, marker).
    pub comments: Mutex<BTreeMap<(u64, String), String>>,
    /// How many comment writes there were (creates and updates).
    pub comment_writes: Mutex<u32>,
    /// What `open_pull_requests` answers, whatever the base.
    pub open: Vec<PullRequest>,
    /// What `pull_request_files` answers for every pull request.
    pub files: Vec<String>,
    /// What `shows_status_text` answers: a host whose statuses are check
    /// runs (their output shows a status's text).
    pub shows_text: bool,
}

impl RecordingGitHost {
    /// A host with `open` pull requests, each touching `files`.
    pub fn with_open(open: Vec<PullRequest>, files: &[&str]) -> Self {
        RecordingGitHost {
            open,
            files: files.iter().map(|f| f.to_string()).collect(),
            ..RecordingGitHost::default()
        }
    }

    /// The statuses posted so far.
    pub fn statuses(&self) -> Vec<CommitStatus> {
        lock(&self.statuses).clone()
    }

    /// The current comments by (pull request, marker).
    pub fn comments(&self) -> BTreeMap<(u64, String), String> {
        lock(&self.comments).clone()
    }
}

impl GitHost for RecordingGitHost {
    type Error = FakeError;

    fn shows_status_text(&self) -> bool {
        self.shows_text
    }

    async fn set_status(&self, status: &CommitStatus) -> Result<(), FakeError> {
        lock(&self.statuses).push(status.clone());
        Ok(())
    }

    async fn pull_request_files(&self, _number: u64) -> Result<Vec<String>, FakeError> {
        Ok(self.files.clone())
    }

    async fn open_pull_requests(&self, _base: &str) -> Result<Vec<PullRequest>, FakeError> {
        Ok(self.open.clone())
    }

    async fn upsert_comment(&self, number: u64, marker: &str, body: &str) -> Result<(), FakeError> {
        assert!(body.contains(marker), "the comment must carry its marker");
        lock(&self.comments).insert((number, marker.to_string()), body.to_string());
        *lock(&self.comment_writes) += 1;
        Ok(())
    }

    async fn bot_comment(&self, number: u64, marker: &str) -> Result<Option<String>, FakeError> {
        Ok(lock(&self.comments)
            .get(&(number, marker.to_string()))
            .cloned())
    }
}

/// One issue as [`RecordingIssues`] keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeIssue {
    /// The number the fake assigned (from 100).
    pub number: u64,
    /// Who opened it: [`RecordingIssues::BOT`] for every issue the code
    /// under test creates.
    pub author: String,
    /// Its title now.
    pub title: String,
    /// Its body now.
    pub body: String,
    /// False once closed.
    pub open: bool,
    /// The comments posted on it (the closing comment included), in order.
    pub comments: Vec<String>,
}

/// The issues port's fake (the drift check's): keeps issues as GitHub does
/// and records every call, in order, for exact assertions.
#[derive(Debug, Default)]
pub struct RecordingIssues {
    /// Every issue, by number.
    pub issues: Mutex<BTreeMap<u64, FakeIssue>>,
    /// Every call: `find <marker>`, `create <title>`, `update #<n>`,
    /// `close #<n>`.
    pub calls: Mutex<Vec<String>>,
}

impl RecordingIssues {
    /// The bot's login: the author of the issues the code creates.
    pub const BOT: &'static str = "live-ci[bot]";

    /// An issue someone opened (a forged marker, an earlier one).
    pub fn add(&self, author: &str, title: &str, body: &str) -> u64 {
        let mut issues = lock(&self.issues);
        let number = 100 + issues.len() as u64;
        issues.insert(
            number,
            FakeIssue {
                number,
                author: author.to_string(),
                title: title.to_string(),
                body: body.to_string(),
                open: true,
                comments: vec![],
            },
        );
        number
    }

    /// Every issue as it stands, by number.
    pub fn issues(&self) -> Vec<FakeIssue> {
        lock(&self.issues).values().cloned().collect()
    }

    /// Every call so far, in order: `find <marker>`, `create <title>`,
    /// `update #<n>`, `close #<n>`.
    pub fn calls(&self) -> Vec<String> {
        lock(&self.calls).clone()
    }

    fn call(&self, c: String) {
        lock(&self.calls).push(c);
    }
}

impl live_ci_core::port::IssueHost for RecordingIssues {
    type Error = FakeError;

    async fn find_bot_issue(&self, marker: &str) -> Result<Option<u64>, FakeError> {
        self.call(format!("find {marker}"));
        Ok(lock(&self.issues)
            .values()
            .find(|i| i.open && i.author == Self::BOT && i.body.contains(marker))
            .map(|i| i.number))
    }

    async fn create_issue(&self, title: &str, body: &str) -> Result<u64, FakeError> {
        self.call(format!("create {title}"));
        let mut issues = lock(&self.issues);
        let number = 100 + issues.len() as u64;
        issues.insert(
            number,
            FakeIssue {
                number,
                author: Self::BOT.to_string(),
                title: title.to_string(),
                body: body.to_string(),
                open: true,
                comments: vec![],
            },
        );
        Ok(number)
    }

    async fn update_issue(&self, number: u64, title: &str, body: &str) -> Result<(), FakeError> {
        self.call(format!("update #{number}"));
        let mut issues = lock(&self.issues);
        let issue = issues
            .get_mut(&number)
            .ok_or_else(|| FakeError(format!("no issue {number:?}")))?;
        issue.title = title.to_string();
        issue.body = body.to_string();
        Ok(())
    }

    async fn close_issue(&self, number: u64, comment: &str) -> Result<(), FakeError> {
        self.call(format!("close #{number}"));
        let mut issues = lock(&self.issues);
        let issue = issues
            .get_mut(&number)
            .ok_or_else(|| FakeError(format!("no issue {number:?}")))?;
        issue.comments.push(comment.to_string());
        issue.open = false;
        Ok(())
    }

    fn issue_url(&self, number: u64) -> Option<String> {
        Some(format!("https://github.com/acme/live/issues/{number}"))
    }
}
