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
    /// The execution's ARN.
    pub arn: String,
    /// The execution's name (live-ci's execution id).
    pub name: String,
    /// The engine's status, in the engine's spelling.
    pub status: String,
    /// The error name of a failed execution, if the engine gave one.
    pub error: Option<String>,
    /// The human-readable cause of a failed execution, if given.
    pub cause: Option<String>,
    /// The final state document of a SUCCEEDED execution.
    pub output: Option<String>,
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
    /// The adapter's error, classified retryable or permanent.
    type Error: crate::port::Classify;

    /// Starts an execution named `name` with `input_json` and returns its ARN.
    /// Idempotent: when an execution of that name already exists with the same
    /// input, its ARN is returned, so a retried start never fails or doubles.
    fn start_execution(
        &self,
        name: &str,
        input_json: &str,
    ) -> impl Future<Output = Result<String, Self::Error>> + Send;

    /// The execution's current state.
    fn describe_execution(
        &self,
        arn: &str,
    ) -> impl Future<Output = Result<ExecutionDescription, Self::Error>> + Send;

    /// Stops a running execution with `error` and `cause`; an execution that
    /// has already ended is left as it is (not an error).
    fn stop_execution(
        &self,
        arn: &str,
        error: &str,
        cause: &str,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;
}

/// What became of a task token sent back to the engine; the approval store
/// keeps it as `{"outcome": "delivered"}` or `{"outcome": "gone", "reason": …}`
/// (its `delivery` column is `delivered` or `gone`, the reason beside it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "lowercase")]
pub enum TokenDelivery {
    /// The waiting state received it.
    Delivered,
    /// The engine no longer waits for this token (the task timed out, the
    /// execution ended, or the token is not one of its own): nothing to retry.
    /// `reason` is the engine's error code and message.
    Gone {
        /// The engine's error code and message.
        reason: String,
    },
}

impl TokenDelivery {
    /// The stored outcome (`delivered`, `gone`) and the engine's reason.
    pub fn parts(&self) -> (&'static str, Option<&str>) {
        match self {
            TokenDelivery::Delivered => ("delivered", None),
            TokenDelivery::Gone { reason } => ("gone", Some(reason)),
        }
    }
}

/// Callbacks into a state waiting for a task token (Step Functions'
/// `.waitForTaskToken` integrations): the ECS task reports its plan or apply,
/// the approval Lambda sends the voters' decision.
pub trait TaskTokens: Send + Sync {
    /// The adapter's error, classified retryable or permanent.
    type Error: crate::port::Classify;

    /// Completes the waiting state with `output_json` as its result.
    fn send_success(
        &self,
        token: &str,
        output_json: &str,
    ) -> impl Future<Output = Result<TokenDelivery, Self::Error>> + Send;

    /// Fails the waiting state with `error` (a name the state machine's Catch
    /// and Retry fields match) and a human-readable `cause`.
    fn send_failure(
        &self,
        token: &str,
        error: &str,
        cause: &str,
    ) -> impl Future<Output = Result<TokenDelivery, Self::Error>> + Send;

    /// Tells the engine the task is alive (resets `HeartbeatSeconds`).
    fn heartbeat(
        &self,
        token: &str,
    ) -> impl Future<Output = Result<TokenDelivery, Self::Error>> + Send;
}

/// The one callback approval_request makes: failing the waiting approval state
/// when a voter can never be mailed (SES refused the address for good), so the
/// execution ends at once instead of at the approval timeout. A port of its own
/// so that handler cannot complete the state: only the voters' decision, through
/// approval_response, does (its role holds no `states:SendTaskSuccess` either).
pub trait TaskFailures: Send + Sync {
    /// The adapter's error, classified retryable or permanent.
    type Error: crate::port::Classify;

    /// Fails the waiting state with `error` and a human-readable `cause`.
    fn send_failure(
        &self,
        token: &str,
        error: &str,
        cause: &str,
    ) -> impl Future<Output = Result<TokenDelivery, Self::Error>> + Send;
}
