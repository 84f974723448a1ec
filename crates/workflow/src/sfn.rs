//! The workflow-engine port on AWS Step Functions: one state machine, one
//! execution per unit, named by the unit's `execution_id`.

use aws_sdk_sfn::Client;
use aws_sdk_sfn::error::DisplayErrorContext;
use live_ci_core::port::{ExecutionDescription, WorkflowEngine};

use crate::error::{Result, WorkflowError};

/// Starts and describes executions of `state_machine_arn`.
#[derive(Debug, Clone)]
pub struct SfnEngine {
    client: Client,
    state_machine_arn: String,
}

impl SfnEngine {
    pub fn new(client: Client, state_machine_arn: impl Into<String>) -> Self {
        SfnEngine {
            client,
            state_machine_arn: state_machine_arn.into(),
        }
    }

    pub fn state_machine_arn(&self) -> &str {
        &self.state_machine_arn
    }

    /// The ARN Step Functions gives the execution `name` of this state machine
    /// (`…:stateMachine:M` → `…:execution:M:name`), for finding an execution
    /// that already exists without listing them all.
    pub fn execution_arn(&self, name: &str) -> Result<String> {
        match self.state_machine_arn.split_once(":stateMachine:") {
            Some((prefix, machine)) => Ok(format!("{prefix}:execution:{machine}:{name}")),
            None => Err(WorkflowError::Sfn {
                operation: "ExecutionArn",
                message: format!(
                    "state machine arn {:?} has no \":stateMachine:\"",
                    self.state_machine_arn
                ),
            }),
        }
    }
}

fn sfn_error(operation: &'static str, err: impl std::error::Error) -> WorkflowError {
    WorkflowError::Sfn {
        operation,
        message: DisplayErrorContext(err).to_string(),
    }
}

/// Inputs are compared as JSON values: Step Functions may hand back the input
/// re-serialised, and key order or spacing is no difference.
fn same_json(a: &str, b: &str) -> bool {
    match (
        serde_json::from_str::<serde_json::Value>(a),
        serde_json::from_str::<serde_json::Value>(b),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

impl WorkflowEngine for SfnEngine {
    type Error = WorkflowError;

    async fn start_execution(&self, name: &str, input_json: &str) -> Result<String> {
        let started = self
            .client
            .start_execution()
            .state_machine_arn(&self.state_machine_arn)
            .name(name)
            .input(input_json)
            .send()
            .await;
        match started {
            Ok(out) => Ok(out.execution_arn),
            Err(err) => {
                // Step Functions accepts a repeat only while the first execution
                // runs; once it has ended the repeat is ExecutionAlreadyExists.
                // Same input: it is our earlier start, report it as success.
                let already = err
                    .as_service_error()
                    .is_some_and(|e| e.is_execution_already_exists());
                if !already {
                    return Err(sfn_error("StartExecution", err));
                }
                let arn = self.execution_arn(name)?;
                let existing = self
                    .client
                    .describe_execution()
                    .execution_arn(&arn)
                    .send()
                    .await
                    .map_err(|e| sfn_error("DescribeExecution", e))?;
                if same_json(existing.input().unwrap_or_default(), input_json) {
                    Ok(arn)
                } else {
                    Err(WorkflowError::Sfn {
                        operation: "StartExecution",
                        message: format!(
                            "execution {name:?} already exists with a different input"
                        ),
                    })
                }
            }
        }
    }

    async fn describe_execution(&self, arn: &str) -> Result<ExecutionDescription> {
        let out = self
            .client
            .describe_execution()
            .execution_arn(arn)
            .send()
            .await
            .map_err(|e| sfn_error("DescribeExecution", e))?;
        Ok(ExecutionDescription {
            arn: out.execution_arn.clone(),
            name: out.name.clone().unwrap_or_default(),
            status: out.status.as_str().to_owned(),
            error: out.error.clone(),
            cause: out.cause.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn execution_arn_follows_the_state_machine() {
        let conf = aws_sdk_sfn::Config::builder()
            .behavior_version(aws_sdk_sfn::config::BehaviorVersion::latest())
            .build();
        let engine = SfnEngine::new(
            Client::from_conf(conf),
            "arn:aws:states:us-east-1:1:stateMachine:deploy",
        );
        assert_eq!(
            engine.execution_arn("run-1-a").unwrap(),
            "arn:aws:states:us-east-1:1:execution:deploy:run-1-a"
        );
        let bad = SfnEngine::new(engine.client.clone(), "nope");
        assert!(
            bad.execution_arn("x")
                .unwrap_err()
                .to_string()
                .contains("\"nope\"")
        );
        assert!(same_json(r#"{"a":1,"b":2}"#, r#"{ "b": 2, "a": 1 }"#));
        assert!(!same_json(r#"{"a":1}"#, r#"{"a":2}"#));
    }
}
