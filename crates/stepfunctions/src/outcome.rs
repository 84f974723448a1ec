//! How an ended execution reads: Step Functions has one FAILED status for a
//! rejection and for a broken plan, so the Fail states carry distinct error
//! names and `trigger_sf` classifies an execution by status and error.

use serde::{Deserialize, Serialize};

/// The state names, as in the template.
pub mod state {
    /// Task: terra-run's plan phase (ECS, waits for the task token).
    pub const PLAN: &str = "Plan";
    /// Choice: after the plan, approval or the end.
    pub const PLAN_CHANGES: &str = "Plan Changes";
    /// Succeed: the plan changes nothing and apply is skipped.
    pub const NO_CHANGES: &str = "No Changes";
    /// Task: publishes the approval request (SNS, waits for the task token).
    pub const REQUEST_APPROVAL: &str = "Request Approval";
    /// Choice: branches on the voters' decision.
    pub const APPROVAL_RESULTS: &str = "Approval Results";
    /// Task: terra-run's apply phase (ECS, waits for the task token).
    pub const APPLY: &str = "Apply";
    /// Succeed: applied.
    pub const SUCCESS: &str = "Success";
    /// Fail with [`super::REJECTED`].
    pub const REJECT: &str = "Reject";
    /// Fail with [`super::PLAN_FAILED`].
    pub const PLAN_FAILED: &str = "Plan Failed";
    /// Fail with [`super::APPROVAL_TIMED_OUT`].
    pub const APPROVAL_TIMED_OUT: &str = "Approval Timed Out";
    /// Fail with [`super::APPROVAL_FAILED`].
    pub const APPROVAL_FAILED: &str = "Approval Failed";
    /// Fail with [`super::INVALID_DECISION`].
    pub const INVALID_DECISION: &str = "Invalid Decision";
    /// Fail with [`super::APPLY_FAILED`].
    pub const APPLY_FAILED: &str = "Apply Failed";
}

/// The voters rejected the deployment (the Reject state's error). Also accepted
/// from SendTaskFailure on Request Approval.
pub const REJECTED: &str = "Rejected";
/// The plan task failed, timed out or stopped heartbeating (the Plan Failed state's error).
pub const PLAN_FAILED: &str = "PlanFailed";
/// The voters did not decide in time (the Approval Timed Out state's error).
pub const APPROVAL_TIMED_OUT: &str = "ApprovalTimedOut";
/// The approval request could not be handled, e.g. a refused mail (the
/// Approval Failed state's error).
pub const APPROVAL_FAILED: &str = "ApprovalFailed";
/// The decision sent back is neither approve nor reject (the Invalid Decision state's error).
pub const INVALID_DECISION: &str = "InvalidDecision";
/// The apply task failed, timed out or stopped heartbeating (the Apply Failed state's error).
pub const APPLY_FAILED: &str = "ApplyFailed";

/// The step a failed execution stopped at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailedStep {
    /// [`PLAN_FAILED`].
    Plan,
    /// [`APPROVAL_FAILED`] or [`INVALID_DECISION`].
    Approval,
    /// [`APPLY_FAILED`].
    Apply,
    /// FAILED with an error this state machine does not raise (e.g. an older
    /// definition, or a States.* error outside any Catch).
    Unknown,
}

/// An ended execution, as `trigger_sf` records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// SUCCEEDED: applied, or nothing to apply.
    Succeeded,
    /// The voters said no: the seed records it as a failure, but statuses and
    /// e-mails say "rejected".
    Rejected,
    /// The voters did not decide within the approval timeout.
    ApprovalTimedOut,
    /// FAILED for another reason than the voters.
    Failed {
        /// Where it stopped, from the error name.
        step: FailedStep,
        /// The execution's error name.
        error: String,
        /// The execution's cause text.
        cause: String,
    },
    /// ABORTED: stopped with StopExecution (the operator's abort, for one).
    Aborted,
    /// TIMED_OUT: the whole execution ran past its timeout.
    TimedOut,
}

impl Outcome {
    /// Classifies an execution from DescribeExecution's (or the status-change
    /// event's) `status`, `error` and `cause`; `None` while it is still running
    /// or for a status this version does not know.
    pub fn classify(status: &str, error: Option<&str>, cause: Option<&str>) -> Option<Outcome> {
        match status {
            "SUCCEEDED" => Some(Outcome::Succeeded),
            "ABORTED" => Some(Outcome::Aborted),
            "TIMED_OUT" => Some(Outcome::TimedOut),
            "FAILED" => {
                let error = error.unwrap_or_default();
                let step = match error {
                    REJECTED => return Some(Outcome::Rejected),
                    APPROVAL_TIMED_OUT => return Some(Outcome::ApprovalTimedOut),
                    PLAN_FAILED => FailedStep::Plan,
                    APPROVAL_FAILED | INVALID_DECISION => FailedStep::Approval,
                    APPLY_FAILED => FailedStep::Apply,
                    _ => FailedStep::Unknown,
                };
                Some(Outcome::Failed {
                    step,
                    error: error.to_owned(),
                    cause: cause.unwrap_or_default().to_owned(),
                })
            }
            _ => None,
        }
    }

    /// Whether the unit's deployment succeeded (dependents may start).
    pub fn is_success(&self) -> bool {
        matches!(self, Outcome::Succeeded)
    }
}

/// The status reason of a unit whose plan changed nothing and that ended at
/// `No Changes` without approval or apply.
pub const NO_CHANGES_REASON: &str = "no changes";

/// Whether a SUCCEEDED execution's output (the state machine's final state
/// document) is that of a plan that changed nothing: `plan.skip_apply` set and
/// no apply result. Output that is not such a document reads as "applied".
pub fn ended_without_changes(output: &str) -> bool {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(output) else {
        return false;
    };
    value.pointer("/plan/skip_apply") == Some(&serde_json::Value::Bool(true))
        && value.get("apply").is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_each_end() {
        assert_eq!(
            Outcome::classify("SUCCEEDED", None, None),
            Some(Outcome::Succeeded)
        );
        assert_eq!(
            Outcome::classify("FAILED", Some("Rejected"), Some("x")),
            Some(Outcome::Rejected)
        );
        assert_eq!(
            Outcome::classify("FAILED", Some("ApprovalTimedOut"), None),
            Some(Outcome::ApprovalTimedOut)
        );
        assert_eq!(
            Outcome::classify("FAILED", Some("PlanFailed"), Some("TerraformFailed: boom")),
            Some(Outcome::Failed {
                step: FailedStep::Plan,
                error: "PlanFailed".into(),
                cause: "TerraformFailed: boom".into()
            })
        );
        assert!(matches!(
            Outcome::classify("FAILED", Some("States.Runtime"), None),
            Some(Outcome::Failed {
                step: FailedStep::Unknown,
                ..
            })
        ));
        assert_eq!(
            Outcome::classify("ABORTED", None, None),
            Some(Outcome::Aborted)
        );
        assert_eq!(
            Outcome::classify("TIMED_OUT", None, None),
            Some(Outcome::TimedOut)
        );
        assert_eq!(Outcome::classify("RUNNING", None, None), None);
        assert!(!Outcome::Rejected.is_success());
    }

    #[test]
    fn a_skipped_plan_reads_from_the_output() {
        assert!(ended_without_changes(
            r#"{"execution_id":"x","plan":{"skip_apply":true,"to_add":0}}"#
        ));
        assert!(!ended_without_changes(
            r#"{"plan":{"skip_apply":false},"apply":{"added":0}}"#
        ));
        assert!(!ended_without_changes(r#"{"plan":{"to_add":1}}"#));
        assert!(!ended_without_changes("not json"));
    }
}
