//! Drift detection (issue 32 item 4): what a scheduled check of the trunk head
//! found per unit, and the pure decisions that follow from it — which state a
//! unit's plan means, and what to do with the unit's GitHub issue. The job
//! (`live-ci-task drift`) plans, the metadb ([`crate::port::DriftStore`])
//! records, this module decides; nothing here does I/O.
//!
//! "A merge during a check wins": a unit that a running or queued run deploys
//! is recorded [`DriftState::Superseded`], whatever its plan showed, because
//! that plan compares the cloud with a commit the deploy is about to replace.

use serde::{Deserialize, Serialize};

use crate::escape::markdown;
use crate::path::RepoPath;
use crate::terraform::ChangeCounts;

/// What one unit's plan in a drift check showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DriftState {
    /// The plan would change something: the cloud differs from the code.
    Drifted,
    /// The plan changes nothing.
    Clean,
    /// The plan could not be made (its message says why): no verdict.
    Failed,
    /// A running or queued run deploys the unit: its plan is not a verdict.
    Superseded,
}

impl DriftState {
    /// The name the metadb stores and the CLI prints.
    pub fn as_str(self) -> &'static str {
        match self {
            DriftState::Drifted => "drifted",
            DriftState::Clean => "clean",
            DriftState::Failed => "failed",
            DriftState::Superseded => "superseded",
        }
    }
}

impl std::fmt::Display for DriftState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One unit's result in a check, as the job hands it to the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnitDrift {
    /// The unit checked.
    pub unit: RepoPath,
    /// What its plan means.
    pub state: DriftState,
    /// Why the plan failed (only for [`DriftState::Failed`]).
    pub message: Option<String>,
    /// The plan's counts (zero when it failed).
    pub counts: ChangeCounts,
}

/// The outcome of one unit's plan as the job sees it: the counts and whether
/// applying changes anything (outputs included), or the failure.
pub type PlanVerdict = Result<(ChangeCounts, bool), String>;

/// The state a unit's plan means. `busy` (the unit is in a running or queued
/// run) wins over everything: a merge during a check wins.
pub fn classify(unit: RepoPath, plan: PlanVerdict, busy: bool) -> UnitDrift {
    let (state, message, counts) = match (busy, plan) {
        (true, Ok((counts, _))) => (DriftState::Superseded, None, counts),
        (true, Err(_)) => (DriftState::Superseded, None, ChangeCounts::default()),
        (false, Ok((counts, true))) => (DriftState::Drifted, None, counts),
        (false, Ok((counts, false))) => (DriftState::Clean, None, counts),
        (false, Err(message)) => (DriftState::Failed, Some(message), ChangeCounts::default()),
    };
    UnitDrift {
        unit,
        state,
        message,
        counts,
    }
}

/// A recorded result: the latest per unit is what `live-ci drift` lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriftResult {
    /// The check (one job run) that recorded it.
    pub check_id: i64,
    /// The trunk commit the check planned.
    pub commit_id: String,
    /// The unit checked.
    pub unit: RepoPath,
    /// What its plan meant.
    pub state: DriftState,
    /// Why the plan failed (only for [`DriftState::Failed`]).
    pub message: Option<String>,
    /// The plan's counts (zero when it failed).
    pub counts: ChangeCounts,
    /// RFC 3339, as the metadb wrote it.
    pub checked_at: String,
    /// The unit's open drift issue, if any.
    pub issue: Option<u64>,
}

/// What to do with a unit's drift issue after a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IssueAction {
    /// New drift: open an issue.
    Open,
    /// Still drifted: edit the open issue (never a second one).
    Update(u64),
    /// The drift is gone: close the open issue.
    Close(u64),
    /// Nothing to do.
    Keep,
}

/// The decision for one unit from its new state and its open issue. A failed
/// or superseded plan says nothing about drift: the issue stays as it is.
pub fn issue_action(state: DriftState, open_issue: Option<u64>) -> IssueAction {
    match (state, open_issue) {
        (DriftState::Drifted, None) => IssueAction::Open,
        (DriftState::Drifted, Some(n)) => IssueAction::Update(n),
        (DriftState::Clean, Some(n)) => IssueAction::Close(n),
        (DriftState::Clean, None) | (DriftState::Failed | DriftState::Superseded, _) => {
            IssueAction::Keep
        }
    }
}

/// The hidden marker that finds a unit's issue again among the repository's
/// open issues. The unit is JSON-quoted, so no path can end the comment
/// (`-->` cannot appear: `>` is not escaped by JSON, hence the `\u003e`).
pub fn issue_marker(unit: &RepoPath) -> String {
    let quoted = serde_json::Value::String(unit.to_string())
        .to_string()
        .replace('>', "\\u003e")
        .replace('-', "\\u002d");
    format!("<!-- live-ci-drift unit={quoted} -->")
}

/// The issue's title: the unit, visible as text.
pub fn issue_title(unit: &RepoPath) -> String {
    format!("Drift in {}", crate::escape::text::visible(unit.as_str()))
}

/// The issue's body for a drifted unit: the marker first, then what the check
/// found. Every value from the repository is escaped for Markdown.
pub fn issue_body(unit: &RepoPath, commit_id: &str, counts: ChangeCounts) -> String {
    format!(
        "{marker}\nlive-ci's drift check planned {unit} at trunk commit {commit} and the plan is not empty: the cloud differs from the code.\n\n| to add | to change | to destroy |\n|---|---|---|\n| {add} | {change} | {destroy} |\n\nThis issue is updated by each check that still finds drift and closed by the first that finds none.\n",
        marker = issue_marker(unit),
        unit = markdown::code(unit.as_str()),
        commit = markdown::code(commit_id),
        add = counts.add,
        change = counts.change,
        destroy = counts.destroy,
    )
}

/// The comment left when a check finds the unit clean again.
pub fn closing_comment(commit_id: &str) -> String {
    format!(
        "live-ci's drift check at trunk commit {} finds no drift any more: closing.",
        markdown::code(commit_id)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(p: &str) -> RepoPath {
        RepoPath::new(p).unwrap()
    }

    fn counts(add: u32, change: u32, destroy: u32) -> ChangeCounts {
        ChangeCounts {
            add,
            change,
            destroy,
        }
    }

    #[test]
    fn a_busy_unit_is_superseded_whatever_its_plan() {
        let u = unit("prod/app");
        for plan in [
            Ok((counts(1, 0, 0), true)),
            Ok((counts(0, 0, 0), false)),
            Err("boom".to_string()),
        ] {
            assert_eq!(
                classify(u.clone(), plan, true).state,
                DriftState::Superseded
            );
        }
    }

    #[test]
    fn plans_classify_by_their_changes_outputs_included() {
        let u = unit("dev/app");
        assert_eq!(
            classify(u.clone(), Ok((counts(0, 1, 0), true)), false).state,
            DriftState::Drifted
        );
        // Only outputs change: still drift.
        assert_eq!(
            classify(u.clone(), Ok((counts(0, 0, 0), true)), false).state,
            DriftState::Drifted
        );
        assert_eq!(
            classify(u.clone(), Ok((counts(0, 0, 0), false)), false).state,
            DriftState::Clean
        );
        let failed = classify(u, Err("no credentials".into()), false);
        assert_eq!(failed.state, DriftState::Failed);
        assert_eq!(failed.message.as_deref(), Some("no credentials"));
    }

    #[test]
    fn issues_open_on_new_drift_update_on_old_close_when_gone() {
        assert_eq!(issue_action(DriftState::Drifted, None), IssueAction::Open);
        assert_eq!(
            issue_action(DriftState::Drifted, Some(7)),
            IssueAction::Update(7)
        );
        assert_eq!(
            issue_action(DriftState::Clean, Some(7)),
            IssueAction::Close(7)
        );
        assert_eq!(issue_action(DriftState::Clean, None), IssueAction::Keep);
        for state in [DriftState::Failed, DriftState::Superseded] {
            assert_eq!(issue_action(state, Some(7)), IssueAction::Keep);
            assert_eq!(issue_action(state, None), IssueAction::Keep);
        }
    }

    #[test]
    fn the_marker_cannot_be_closed_by_a_path() {
        let m = issue_marker(&unit("a-->b/x"));
        assert_eq!(m, r#"<!-- live-ci-drift unit="a\u002d\u002d\u003eb/x" -->"#);
        assert_eq!(m.matches("-->").count(), 1);
        assert!(m.ends_with("-->"));
    }

    #[test]
    fn the_body_starts_with_the_marker_and_escapes_the_unit() {
        let u = unit("prod/`app`");
        let body = issue_body(&u, "abc123", counts(1, 2, 3));
        assert!(body.starts_with(&issue_marker(&u)));
        assert!(body.contains("| 1 | 2 | 3 |"));
        assert!(body.contains(&markdown::code("prod/`app`")));
    }
}
