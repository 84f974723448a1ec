//! The merge lock: while a run deploys, open pull requests into the trunk show a
//! pending "Merge Lock" status so they cannot be merged (with branch protection).
//! The metadb row is the truth; the parameter store mirrors it for the receiver.

use std::fmt;

use crate::status::{CommitStatus, StatusState};

use crate::port::GitHost;
use crate::webhook::FilePattern;

/// The commit-status context GitHub branch protection requires.
pub const CONTEXT: &str = "Merge Lock";

/// The parameter's value when no run holds the lock (as the seed design stores it).
pub const FREE: &str = "none";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeLock {
    Free,
    /// Held by the run deploying this pull request.
    Held {
        pr: u64,
    },
}

impl MergeLock {
    /// Reads the parameter store's value: `none` or a pull-request number.
    pub fn parse(value: &str) -> Result<Self, String> {
        let v = value.trim();
        if v.eq_ignore_ascii_case(FREE) || v.is_empty() {
            return Ok(MergeLock::Free);
        }
        v.trim_start_matches('#')
            .parse::<u64>()
            .map(|pr| MergeLock::Held { pr })
            .map_err(|_| {
                format!("merge lock value {value:?} is neither \"none\" nor a pull request number")
            })
    }

    /// The status every open pull request's head should show.
    pub fn status_for(&self, sha: &str) -> CommitStatus {
        match self {
            MergeLock::Free => CommitStatus::new(
                sha,
                StatusState::Success,
                CONTEXT,
                "unlocked: free to merge",
            ),
            // PR 0: the sweep's run of a trunk head whose webhook was lost.
            MergeLock::Held { pr: 0 } => CommitStatus::new(
                sha,
                StatusState::Pending,
                CONTEXT,
                "locked while the trunk deploys; merge after it finishes",
            ),
            MergeLock::Held { pr } => CommitStatus::new(
                sha,
                StatusState::Pending,
                CONTEXT,
                &format!("locked by PR #{pr} while it deploys; merge after it finishes"),
            ),
        }
    }
}

/// The status of a pull request that changes no infrastructure file: such a
/// pull request never deploys, so the lock does not apply to it, and a
/// success lets "Merge Lock" be a required check without blocking it forever.
pub fn not_applicable(sha: &str) -> CommitStatus {
    CommitStatus::new(
        sha,
        StatusState::Success,
        CONTEXT,
        "no infrastructure file changed: not locked",
    )
}

impl fmt::Display for MergeLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MergeLock::Free => f.write_str(FREE),
            MergeLock::Held { pr } => write!(f, "{pr}"),
        }
    }
}

/// Posts the lock's status on the head of every open pull request into `trunk`
/// that touches files matching `pattern`, so no stale "free" status lets a pull
/// request merge during a deploy. Returns the pull requests updated.
pub async fn refresh_statuses<H: GitHost>(
    host: &H,
    lock: MergeLock,
    trunk: &str,
    pattern: &FilePattern,
) -> Result<Vec<u64>, H::Error> {
    let mut updated = Vec::new();
    for pr in host.open_pull_requests(trunk).await? {
        let files = host.pull_request_files(pr.number).await?;
        if pattern.matches_any(&files) {
            host.set_status(&lock.status_for(&pr.head_sha)).await?;
            updated.push(pr.number);
        }
    }
    Ok(updated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_parameter() {
        assert_eq!(MergeLock::parse("none"), Ok(MergeLock::Free));
        assert_eq!(MergeLock::parse(" 42\n"), Ok(MergeLock::Held { pr: 42 }));
        assert!(MergeLock::parse("maybe").unwrap_err().contains("\"maybe\""));
        assert_eq!(MergeLock::Held { pr: 7 }.to_string(), "7");
        let s = MergeLock::Held { pr: 7 }.status_for("abc");
        assert_eq!(s.state, StatusState::Pending);
        assert!(s.description.contains("PR #7"));
        let sweep = MergeLock::Held { pr: 0 }.status_for("abc");
        assert_eq!(sweep.state, StatusState::Pending);
        assert!(!sweep.description.contains("#0"), "{}", sweep.description);
    }
}
