//! The workflow-engine port on AWS Step Functions: one state machine, one
//! execution per unit, named by the unit's `execution_id`.

use aws_sdk_sfn::Client;
use aws_sdk_sfn::config::http::HttpResponse;
use aws_sdk_sfn::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use live_ci_core::port::{
    ErrorKind, ExecutionDescription, TaskTokens, TokenDelivery, WorkflowEngine,
};

use crate::error::{Result, WorkflowError};

/// Starts and describes executions of `state_machine_arn`.
#[derive(Debug, Clone)]
pub struct SfnEngine {
    client: Client,
    state_machine_arn: String,
}

impl SfnEngine {
    /// An engine starting and reading executions of `state_machine_arn`.
    pub fn new(client: Client, state_machine_arn: impl Into<String>) -> Self {
        SfnEngine {
            client,
            state_machine_arn: state_machine_arn.into(),
        }
    }

    /// The deployment state machine's ARN.
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
                kind: ErrorKind::Permanent,
                source: None,
            }),
        }
    }
}

fn sfn_error<E>(operation: &'static str, err: SdkError<E, HttpResponse>) -> WorkflowError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    WorkflowError::Sfn {
        operation,
        kind: ErrorKind::of_aws_call(
            !matches!(err, SdkError::ConstructionFailure(_)),
            err.code(),
            err.raw_response().map(|r| r.status().as_u16()),
        ),
        message: DisplayErrorContext(&err).to_string(),
        source: Some(Box::new(err)),
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
                        kind: ErrorKind::Permanent,
                        source: None,
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
            output: out.output.clone(),
        })
    }
    async fn stop_execution(&self, arn: &str, error: &str, cause: &str) -> Result<()> {
        // StopExecution of an execution that has already ended succeeds and
        // changes nothing, so a repeated abort is safe.
        self.client
            .stop_execution()
            .execution_arn(arn)
            .error(error)
            .cause(cause)
            .send()
            .await
            .map_err(|e| sfn_error("StopExecution", e))?;
        Ok(())
    }
}

/// Sends task tokens back to Step Functions (`SendTaskSuccess`,
/// `SendTaskFailure`, `SendTaskHeartbeat`).
#[derive(Debug, Clone)]
pub struct SfnTaskTokens {
    client: Client,
}

impl SfnTaskTokens {
    /// Task-token calls through `client`.
    pub fn new(client: Client) -> Self {
        SfnTaskTokens { client }
    }
}

/// Step Functions caps a failure's error name at 256 and its cause at 32,768
/// characters; a longer one would make the failure report itself fail.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => text[..end].to_owned(),
        None => text.to_owned(),
    }
}

/// A token the execution no longer waits for is an answer, not an error: the
/// caller shows it (the vote page) or stops (the task), nothing is retried.
fn delivery<E>(
    operation: &'static str,
    result: std::result::Result<(), aws_sdk_sfn::error::SdkError<E>>,
) -> Result<TokenDelivery>
where
    E: aws_sdk_sfn::error::ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match result {
        Ok(()) => Ok(TokenDelivery::Delivered),
        Err(err) => {
            let gone = err.as_service_error().and_then(|e| {
                let code = e.code()?;
                matches!(code, "TaskTimedOut" | "TaskDoesNotExist" | "InvalidToken")
                    .then(|| format!("{code}: {}", e.message().unwrap_or("no message")))
            });
            match gone {
                Some(reason) => Ok(TokenDelivery::Gone { reason }),
                None => Err(sfn_error(operation, err)),
            }
        }
    }
}

impl live_ci_core::port::TaskFailures for SfnTaskTokens {
    type Error = WorkflowError;

    async fn send_failure(&self, token: &str, error: &str, cause: &str) -> Result<TokenDelivery> {
        TaskTokens::send_failure(self, token, error, cause).await
    }
}

impl TaskTokens for SfnTaskTokens {
    type Error = WorkflowError;

    async fn send_success(&self, token: &str, output_json: &str) -> Result<TokenDelivery> {
        let sent = self
            .client
            .send_task_success()
            .task_token(token)
            .output(output_json)
            .send()
            .await
            .map(|_| ());
        delivery("SendTaskSuccess", sent)
    }

    async fn send_failure(&self, token: &str, error: &str, cause: &str) -> Result<TokenDelivery> {
        let sent = self
            .client
            .send_task_failure()
            .task_token(token)
            .error(clip(error, 256))
            .cause(clip(cause, 32_768))
            .send()
            .await
            .map(|_| ());
        delivery("SendTaskFailure", sent)
    }

    async fn heartbeat(&self, token: &str) -> Result<TokenDelivery> {
        let sent = self
            .client
            .send_task_heartbeat()
            .task_token(token)
            .send()
            .await
            .map(|_| ());
        delivery("SendTaskHeartbeat", sent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_texts_are_clipped_to_what_step_functions_accepts() {
        assert_eq!(clip("abc", 2), "ab");
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(clip("ééé", 2), "éé");
    }

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
