//! Commit statuses and pull-request comments: what live-ci tells the git host
//! (GitHub), every status context, and the service that posts them
//! ([`Statuses`]) through the git host port ([`crate::port::GitHost`]).

mod service;

pub use service::{Check, NoGitHost, Statuses, advisory, required, target};

use serde::{Deserialize, Serialize};

/// GitHub's limit on a status description, in characters.
pub const MAX_DESCRIPTION: usize = 140;

/// The state of one commit status, as GitHub names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StatusState {
    /// Under way, or waiting (the merge lock while held).
    Pending,
    /// Passed.
    Success,
    /// Failed (a failed plan or apply, a rejection).
    Failure,
    /// Reached no verdict (e.g. a unit aborted because an ancestor failed).
    Error,
}

/// One commit status: a named check (`context`) on a commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitStatus {
    /// The commit the status is on.
    pub sha: String,
    /// Pending, success, failure or error.
    pub state: StatusState,
    /// The check's name ([`context`]); a newer status of the same context replaces it.
    pub context: String,
    /// One line, at most [`MAX_DESCRIPTION`] characters.
    pub description: String,
    /// Where the status links to: the CloudWatch log stream of the task behind it.
    pub target_url: Option<String>,
    /// Markdown shown with the status where the host can (a check run's
    /// `output.text`: the unit's plan, [`crate::plan_text::fit_plan`]);
    /// a commit status has no room for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl CommitStatus {
    /// A status whose description is cut to GitHub's limit (with an ellipsis), so
    /// a long error message never makes the whole status call fail.
    pub fn new(sha: &str, state: StatusState, context: &str, description: &str) -> Self {
        CommitStatus {
            sha: sha.to_string(),
            state,
            context: context.to_string(),
            description: truncate_chars(description, MAX_DESCRIPTION),
            target_url: None,
            text: None,
        }
    }

    /// The status with [`CommitStatus::text`] set.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// The status with [`CommitStatus::target_url`] set.
    pub fn with_target_url(mut self, url: impl Into<String>) -> Self {
        self.target_url = Some(url.into());
        self
    }
}

fn truncate_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Which commit statuses live-ci posts (the module's `commit_status_config`,
/// kept as JSON in the parameter store so it can be edited without a deploy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "PascalCase")]
pub struct CommitStatusConfig {
    /// Post pull requests' plan statuses ([`Check::PrPlan`]); on by default.
    #[serde(default = "yes")]
    pub pr_plan: bool,
    /// Post create-deploy-stack's status on merge commits; on by default.
    #[serde(default = "yes")]
    pub create_deploy_stack: bool,
    /// Post each unit's plan status in a deployment; on by default.
    #[serde(default = "yes")]
    pub plan: bool,
    /// Post each unit's apply and rollback statuses; on by default.
    #[serde(default = "yes")]
    pub apply: bool,
}

fn yes() -> bool {
    true
}

impl Default for CommitStatusConfig {
    fn default() -> Self {
        CommitStatusConfig {
            pr_plan: true,
            create_deploy_stack: true,
            plan: true,
            apply: true,
        }
    }
}

impl CommitStatusConfig {
    /// Parses the parameter; an unknown key is an error naming it, so a typo
    /// does not silently turn statuses on or off.
    pub fn parse(json: &str) -> Result<Self, String> {
        serde_json::from_str(json).map_err(|e| format!("commit status config: {e}"))
    }
}

/// Status contexts, one per kind of check live-ci posts: every name is built
/// here.
pub mod context {
    use crate::terraform::Phase;

    /// The merge lock's status on open pull requests (what branch protection
    /// requires).
    pub const MERGE_LOCK: &str = "Merge Lock";
    /// A pull request's plan, and the "not planned: …" status of a pull
    /// request that waits for a maintainer's `/live-ci plan`: one name, so the
    /// plan that follows replaces the waiting status (issue 12).
    pub const PR_PLAN: &str = "live-ci: plan";
    /// create-deploy-stack's work on a merge commit.
    pub const CREATE_DEPLOY_STACK: &str = "live-ci: create-deploy-stack";
    /// A run's overall result on its merge commit.
    pub const DEPLOY: &str = "live-ci: deploy";
    /// Units a merge removed that are not destroyed (`allow_destroy` is off).
    pub const DESTROY: &str = "live-ci: destroy";

    /// One unit's deployment on the merge commit: one context per unit, so a
    /// later unit's status never hides an earlier failure.
    pub fn deploy_unit(cfg_path: &str) -> String {
        format!("{DEPLOY} {cfg_path}")
    }

    /// One unit's plan on a pull request's head.
    pub fn pr_plan_unit(cfg_path: &str) -> String {
        format!("{PR_PLAN} {cfg_path}")
    }

    /// One unit's plan or apply in a deployment, on the merge commit.
    pub fn phase_unit(phase: Phase, cfg_path: &str) -> String {
        format!("live-ci: {} {cfg_path}", phase.as_str())
    }

    /// The rollback of one unit's new provider resources after a failed run.
    pub fn rollback_unit(cfg_path: &str) -> String {
        format!("live-ci: rollback {cfg_path}")
    }
}

/// The deploy status of a merge that run `by` (at the newer trunk commit
/// `by_commit`) superseded: the superseded merge never runs itself, so it
/// shares how `by` is doing.
pub fn superseded(
    commit: &str,
    by: crate::deploy::RunId,
    by_commit: &str,
    outcome: crate::deploy::RunStatus,
) -> CommitStatus {
    use crate::deploy::RunStatus;
    let short = by_commit.get(..7).unwrap_or(by_commit);
    let (state, description) = match outcome {
        RunStatus::Succeeded => (
            StatusState::Success,
            format!("deployed by run #{by} (commit {short}) with the newer trunk commits"),
        ),
        RunStatus::Failed | RunStatus::Superseded => (
            StatusState::Failure,
            format!("superseded by run #{by} (commit {short}), which failed"),
        ),
        RunStatus::Queued | RunStatus::Running => (
            StatusState::Pending,
            format!("superseded by run #{by} (commit {short}), which deploys it"),
        ),
    };
    CommitStatus::new(commit, state, context::DEPLOY, &description)
}

/// An open pull request, as far as the merge lock needs to know it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequest {
    /// The pull request's number.
    pub number: u64,
    /// Its head commit: where the lock's status goes.
    pub head_sha: String,
    /// The branch it merges into.
    pub base_ref: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_config_defaults_and_rejects_typos() {
        assert_eq!(
            CommitStatusConfig::parse("{}").unwrap(),
            CommitStatusConfig::default()
        );
        let c = CommitStatusConfig::parse(r#"{"PrPlan": false, "Apply": true}"#).unwrap();
        assert!(!c.pr_plan && c.apply && c.plan);
        let err = CommitStatusConfig::parse(r#"{"PrPaln": false}"#).unwrap_err();
        assert!(err.contains("unknown field `PrPaln`"), "{err}");
    }

    #[test]
    fn contexts_are_built_in_one_place() {
        assert_eq!(context::pr_plan_unit("dev/app"), "live-ci: plan dev/app");
        assert_eq!(
            context::phase_unit(crate::terraform::Phase::Plan, "dev/app"),
            "live-ci: plan dev/app"
        );
        assert_eq!(
            context::phase_unit(crate::terraform::Phase::Apply, "dev/app"),
            "live-ci: apply dev/app"
        );
        assert_eq!(context::deploy_unit("dev/app"), "live-ci: deploy dev/app");
        assert_eq!(
            context::rollback_unit("dev/app"),
            "live-ci: rollback dev/app"
        );
        assert_eq!(context::MERGE_LOCK, "Merge Lock");
    }

    #[test]
    fn long_descriptions_are_cut_to_githubs_limit() {
        let long = "é".repeat(300);
        let s = CommitStatus::new("abc", StatusState::Failure, "live-ci/plan", &long);
        assert_eq!(s.description.chars().count(), MAX_DESCRIPTION);
        assert!(s.description.ends_with('…'));
        let short = CommitStatus::new("abc", StatusState::Success, "c", "fine");
        assert_eq!(short.description, "fine");
    }

    #[test]
    fn a_superseded_merge_shares_the_outcome_of_the_run_that_covered_it() {
        let ok = superseded(
            "c6",
            12,
            "0123456789abcdef",
            crate::deploy::RunStatus::Succeeded,
        );
        assert_eq!(
            (ok.sha.as_str(), ok.context.as_str()),
            ("c6", context::DEPLOY)
        );
        assert_eq!(ok.state, StatusState::Success);
        assert_eq!(
            ok.description,
            "deployed by run #12 (commit 0123456) with the newer trunk commits"
        );
        let failed = superseded(
            "c6",
            12,
            "0123456789abcdef",
            crate::deploy::RunStatus::Failed,
        );
        assert_eq!(failed.state, StatusState::Failure);
        assert_eq!(
            failed.description,
            "superseded by run #12 (commit 0123456), which failed"
        );
        let going = superseded(
            "c6",
            12,
            "0123456789abcdef",
            crate::deploy::RunStatus::Running,
        );
        assert_eq!(going.state, StatusState::Pending);
    }
}
