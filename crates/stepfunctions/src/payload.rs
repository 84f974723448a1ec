//! The payloads that cross the state machine's boundaries, in their JSON shape:
//!
//! | from → to | payload |
//! |---|---|
//! | `trigger_sf` → StartExecution input | [`SfnInput`] (the seed's field names) |
//! | state machine → `terra-run` (container overrides) | the [`task_env`] variables |
//! | `terra-run plan` → SendTaskSuccess | [`PlanResult`], at `$.plan` |
//! | state machine → SNS → `approval_request` | [`ApprovalRequest`] |
//! | `approval_response` → SendTaskSuccess | [`ApprovalDecision`], at `$.approval` |
//! | `terra-run apply` → SendTaskSuccess | [`ApplyResult`], at `$.apply` |
//!
//! A rejection may also arrive as SendTaskFailure with error [`crate::outcome::REJECTED`].

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{Result, WorkflowError};

// The execution input, its status and action are the metadb's record types:
// one definition for the metadb, trigger_sf, the state machine and the task.
pub use live_ci_core::deploy::Action;
pub use live_ci_core::deploy::{ExecutionStatus, SfnInput};

/// What `terra-run` reports after planning (SendTaskSuccess output).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanResult {
    /// The deployment execution (metadb id) the plan belongs to.
    pub execution_id: String,
    /// Resources the plan creates.
    pub to_add: u32,
    /// Resources the plan updates in place.
    pub to_change: u32,
    /// Resources the plan destroys.
    pub to_destroy: u32,
    /// Replacements (already counted in `to_add` and `to_destroy`).
    #[serde(default)]
    pub to_replace: u32,
    /// Resources an `import` block adopts into the state.
    #[serde(default)]
    pub to_import: u32,
    /// Resources a `removed` block drops from the state without destroying them.
    #[serde(default)]
    pub to_forget: u32,
    /// Root module outputs the plan creates, changes or removes: a plan that
    /// only changes outputs still has to be applied (dependents read them).
    #[serde(default)]
    pub outputs_changed: Vec<String>,
    /// The plan changes nothing and the module skips unchanged units
    /// (`skip_unchanged`): the state machine ends without approval or apply.
    #[serde(default)]
    pub skip_apply: bool,
    /// Where the saved plan lives (e.g. `s3://bucket/key.tfplan`); Apply
    /// applies exactly this plan.
    pub plan_artifact: String,
    /// The CloudWatch log stream of the plan, linked from e-mails and statuses.
    pub logs_url: String,
    /// The plan's first resource changes, one line each (`create
    /// aws_instance.web`), at most [`FIRST_CHANGES`]: the mail shows them
    /// inline; the approval page shows the whole verified plan.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first_changes: Vec<String>,
    /// Resource changes beyond `first_changes`.
    #[serde(default)]
    pub more_changes: u32,
    /// The policy denials (`rule: message`) of a plan that goes to the vote
    /// anyway (`policy_override`): the mail shows them. The vote itself
    /// checks the ones the metadb recorded, never these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy_denials: Vec<String>,
}

/// How many resource changes a [`PlanResult`] carries for the mail (the
/// Step Functions payload stays small: at most 256 KiB).
pub const FIRST_CHANGES: usize = 10;

impl PlanResult {
    /// Whether applying the plan changes anything, outputs included.
    pub fn has_changes(&self) -> bool {
        self.to_add + self.to_change + self.to_destroy + self.to_import + self.to_forget > 0
            || !self.outputs_changed.is_empty()
    }

    /// The one-line summary voters and commit statuses see, e.g. `1 to add, 0
    /// to change, 0 to destroy`, `outputs change: url` or `no changes`.
    pub fn summary(&self) -> String {
        live_ci_core::terraform::plan_json::describe(
            live_ci_core::terraform::ChangeCounts {
                add: self.to_add,
                change: self.to_change,
                destroy: self.to_destroy,
            },
            self.to_replace,
            self.to_import,
            self.to_forget,
            &self.outputs_changed,
        )
    }
}

/// The SNS message of Request Approval, read by `approval_request`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// Sent back with the decision; never shown to voters (it completes the task).
    pub task_token: String,
    /// The Step Functions execution ARN.
    pub sfn_execution_arn: String,
    /// The execution's input, as given to StartExecution.
    pub execution: SfnInput,
    /// The Plan state's result: what the voters approve.
    pub plan: PlanResult,
}

// The task token approves the deployment: `{:?}` in a log line must not
// carry it.
impl std::fmt::Debug for ApprovalRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalRequest")
            .field("task_token", &"<redacted>")
            .field("sfn_execution_arn", &self.sfn_execution_arn)
            .field("execution", &self.execution)
            .field("plan", &self.plan)
            .finish()
    }
}

/// The voters' verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// The approval threshold was reached.
    Approve,
    /// The rejection threshold was reached.
    Reject,
}

/// What `approval_response` sends back with SendTaskSuccess once a threshold
/// is reached; Approval Results branches on `decision`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalDecision {
    /// Which threshold was reached.
    pub decision: Decision,
    /// The voters who approved, as identified when they voted.
    #[serde(default)]
    pub approval_voters: Vec<String>,
    /// The voters who rejected.
    #[serde(default)]
    pub rejection_voters: Vec<String>,
}

/// What `terra-run` reports after applying (SendTaskSuccess output).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApplyResult {
    /// The deployment execution (metadb id) that was applied.
    pub execution_id: String,
    /// Resources the apply created.
    pub added: u32,
    /// Resources the apply updated in place.
    pub changed: u32,
    /// Resources the apply destroyed.
    pub destroyed: u32,
    /// Resources of providers new in this change that the apply created: what a
    /// rollback destroys (the seed's `new_resources`).
    #[serde(default)]
    pub new_resources: Vec<String>,
    /// The CloudWatch log stream of the apply.
    pub logs_url: String,
}

/// Decodes a payload, naming it in the error.
pub fn decode<T: DeserializeOwned>(payload: &'static str, json: &str) -> Result<T> {
    serde_json::from_str(json).map_err(|source| WorkflowError::Payload { payload, source })
}

/// The environment the state machine gives the `terra-run` container.
pub mod task_env {
    /// `plan` or `apply`.
    pub const PHASE: &str = "LIVE_CI_PHASE";
    /// The token to send with SendTaskSuccess / SendTaskFailure / SendTaskHeartbeat.
    pub const TASK_TOKEN: &str = "LIVE_CI_TASK_TOKEN";
    /// The deployment execution's metadb id.
    pub const EXECUTION_ID: &str = "LIVE_CI_EXECUTION_ID";
    /// The Step Functions execution's ARN.
    pub const SFN_EXECUTION_ARN: &str = "LIVE_CI_SFN_EXECUTION_ARN";
    /// The unit's directory, repository-relative (the input's `cfg_path`).
    pub const CFG_PATH: &str = "LIVE_CI_CFG_PATH";
    /// The record's `plan_command` or `apply_command`.
    pub const COMMAND: &str = "LIVE_CI_COMMAND";
    /// The record's `plan_role_arn` or `apply_role_arn`.
    pub const ROLE_ARN: &str = "LIVE_CI_ROLE_ARN";
    /// Apply only: the [`super::PlanResult::plan_artifact`] to apply.
    pub const PLAN_ARTIFACT: &str = "LIVE_CI_PLAN_ARTIFACT";
    /// Every variable the plan phase sets.
    pub const PLAN: [&str; 7] = [
        PHASE,
        TASK_TOKEN,
        EXECUTION_ID,
        SFN_EXECUTION_ARN,
        CFG_PATH,
        COMMAND,
        ROLE_ARN,
    ];
    /// Every variable the apply phase sets.
    pub const APPLY: [&str; 8] = [
        PHASE,
        TASK_TOKEN,
        EXECUTION_ID,
        SFN_EXECUTION_ARN,
        CFG_PATH,
        COMMAND,
        ROLE_ARN,
        PLAN_ARTIFACT,
    ];
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// `{:?}` of the stored SNS fixture's request shows everything but the token.
    #[test]
    fn debug_never_shows_the_task_token() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/sns/approval-request.json"
        );
        let event: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let message = event["Records"][0]["Sns"]["Message"].as_str().unwrap();
        let request: ApprovalRequest = serde_json::from_str(message).unwrap();
        assert!(!request.task_token.is_empty());
        let debug = format!("{request:?} {request:#?}");
        assert!(!debug.contains(&request.task_token), "{debug}");
        assert!(debug.contains("<redacted>") && debug.contains(&request.sfn_execution_arn));
    }

    /// A payload that does not decode names the payload, and keeps the
    /// decoder's error (line, column, category) as the source.
    #[test]
    fn a_bad_payload_keeps_the_decoders_error() {
        let err = decode::<ApplyResult>("apply result", "{\n  \"added\": \"three\"\n}")
            .err()
            .unwrap();
        assert!(
            err.to_string()
                .starts_with("apply result: invalid json: invalid type: string \"three\""),
            "{err}"
        );
        let json = std::error::Error::source(&err)
            .and_then(|s| s.downcast_ref::<serde_json::Error>())
            .unwrap();
        assert_eq!((json.line(), json.column()), (2, 18));
        assert_eq!(json.classify(), serde_json::error::Category::Data);
        assert_eq!(
            live_ci_core::port::Classify::kind(&err),
            live_ci_core::port::ErrorKind::Permanent
        );
    }
}
