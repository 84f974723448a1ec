//! The workflow-engine port: starts one deployment execution per unit and reads
//! back how it ended (AWS Step Functions in production). The state machine is
//! the adapter's configuration, so callers deal only in execution names.

use std::future::Future;

use serde::{Deserialize, Serialize};

/// One execution as the engine describes it. `status` keeps the engine's own
/// spelling (Step Functions: RUNNING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED,
/// PENDING_REDRIVE) so a status this version does not know still round-trips.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionDescription {
    pub arn: String,
    pub name: String,
    pub status: String,
    pub error: Option<String>,
    pub cause: Option<String>,
}

impl ExecutionDescription {
    /// Whether the execution has ended (anything but running or waiting to be
    /// redriven).
    pub fn has_ended(&self) -> bool {
        !matches!(self.status.as_str(), "RUNNING" | "PENDING_REDRIVE")
    }
}

/// The engine running the deployment state machine.
pub trait WorkflowEngine: Send + Sync {
    type Error: std::error::Error + Send + Sync + 'static;

    /// Starts an execution named `name` with `input_json` and returns its ARN.
    /// Idempotent: when an execution of that name already exists with the same
    /// input, its ARN is returned, so a retried start never fails or doubles.
    fn start_execution(
        &self,
        name: &str,
        input_json: &str,
    ) -> impl Future<Output = Result<String, Self::Error>> + Send;

    fn describe_execution(
        &self,
        arn: &str,
    ) -> impl Future<Output = Result<ExecutionDescription, Self::Error>> + Send;
}
