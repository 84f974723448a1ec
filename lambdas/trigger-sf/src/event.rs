//! The three ways trigger_sf is invoked: EventBridge's "Step Functions
//! Execution Status Change" event, a direct invoke naming a run
//! (create-deploy-stack after it created the run), the scheduled sweep, and
//! the scheduled drift check (`{"drift": true}`, issue 32 item 4).

use aws_lambda_events::event::cloudwatch_events::CloudWatchEvent;
use live_ci_core::deploy::RunId;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::handler::error::TriggerError;

/// The `detail-type` of a Step Functions status-change event.
pub(crate) const STATUS_CHANGE: &str = "Step Functions Execution Status Change";
/// The `detail-type` EventBridge schedules send.
pub(crate) const SCHEDULED: &str = "Scheduled Event";

/// The `detail` of a status-change event (the fields trigger_sf reads).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusChangeDetail {
    /// The execution that ended: recorded against the claim, and compared
    /// with it so another state machine's namesake is not taken for ours.
    pub execution_arn: String,
    /// The state machine the execution ran in; not consulted, since the
    /// execution's own ARN is what is compared.
    #[serde(default)]
    pub state_machine_arn: String,
    /// The execution's name: the unit's `execution_id`.
    pub name: String,
    /// Step Functions' status: `SUCCEEDED`, `FAILED`, `TIMED_OUT` and
    /// `ABORTED` end the execution; any other is no end.
    pub status: String,
    /// The error a failed execution ended with: which step failed, and why.
    #[serde(default)]
    pub error: Option<String>,
    /// The failed step's cause (terraform's last words), part of the reason.
    #[serde(default)]
    pub cause: Option<String>,
    /// The final state document of a SUCCEEDED execution (JSON text): tells a
    /// unit whose plan changed nothing from one that was applied.
    #[serde(default)]
    pub output: Option<String>,
}

/// One invocation, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// An execution ended: record it and advance its run.
    StatusChange(StatusChangeDetail),
    /// A run to advance: create-deploy-stack hands over the run it created.
    Run(RunId),
    /// The schedule's repair pass over missed events and the trunk head.
    Sweep,
    /// Launch the drift task; `tick` names the schedule's firing (the
    /// event's `time` when the rule passes it), else the invocation's minute.
    Drift {
        /// The task's idempotency token: one task per firing.
        tick: Option<String>,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunInvoke {
    run_id: RunId,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepInvoke {
    sweep: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DriftInvoke {
    drift: bool,
    #[serde(default)]
    time: Option<String>,
}

fn invalid(message: impl Into<String>) -> TriggerError {
    TriggerError::Input(message.into())
}

/// Decodes an invocation payload; anything else is an error naming what was
/// expected, so a misrouted event fails loudly instead of being dropped.
pub fn parse_input(payload: &Value) -> Result<Input, TriggerError> {
    if let Some(detail_type) = payload.get("detail-type").and_then(Value::as_str) {
        return match detail_type {
            STATUS_CHANGE => {
                let event: CloudWatchEvent<StatusChangeDetail> =
                    serde_json::from_value(payload.clone())
                        .map_err(|e| invalid(format!("{STATUS_CHANGE:?} event: {e}")))?;
                event
                    .detail
                    .map(Input::StatusChange)
                    .ok_or_else(|| invalid(format!("{STATUS_CHANGE:?} event without detail")))
            }
            SCHEDULED => Ok(Input::Sweep),
            other => Err(invalid(format!("unexpected event detail-type {other:?}"))),
        };
    }
    if let Ok(run) = serde_json::from_value::<RunInvoke>(payload.clone()) {
        return Ok(Input::Run(run.run_id));
    }
    if let Ok(SweepInvoke { sweep: true }) = serde_json::from_value(payload.clone()) {
        return Ok(Input::Sweep);
    }
    if let Ok(DriftInvoke { drift: true, time }) = serde_json::from_value(payload.clone()) {
        return Ok(Input::Drift { tick: time });
    }
    Err(invalid(format!(
        "payload {payload} is neither a status-change event, {{\"run_id\": N}}, {{\"sweep\": true}} nor {{\"drift\": true}}"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decodes_each_input() {
        let event = json!({
            "version": "0", "id": "315c1398", "detail-type": STATUS_CHANGE,
            "source": "aws.states", "account": "123456789012",
            "time": "2019-02-26T19:42:21Z", "region": "us-east-1",
            "resources": ["arn:aws:states:us-east-1:123456789012:execution:deploy:run-1-a"],
            "detail": {
                "executionArn": "arn:aws:states:us-east-1:123456789012:execution:deploy:run-1-a",
                "stateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:deploy",
                "name": "run-1-a", "status": "FAILED", "startDate": 1551225271984_u64,
                "stopDate": 1551225271984_u64, "input": "{}", "output": null,
                "error": "PlanFailed", "cause": "boom"
            }
        });
        let Input::StatusChange(d) = parse_input(&event).unwrap() else {
            panic!("not a status change")
        };
        assert_eq!(d.name, "run-1-a");
        assert_eq!(d.status, "FAILED");
        assert_eq!(d.error.as_deref(), Some("PlanFailed"));
        assert_eq!(parse_input(&json!({"run_id": 4})).unwrap(), Input::Run(4));
        assert_eq!(parse_input(&json!({"sweep": true})).unwrap(), Input::Sweep);
        let scheduled = json!({
            "version": "0", "id": "x", "detail-type": SCHEDULED, "source": "aws.events",
            "account": "1", "time": "2019-02-26T19:42:21Z", "region": "us-east-1",
            "resources": [], "detail": {}
        });
        assert_eq!(parse_input(&scheduled).unwrap(), Input::Sweep);
        let err = parse_input(&json!({"run": 4})).unwrap_err().to_string();
        assert!(err.contains(r#"{"run":4}"#), "{err}");
        assert!(parse_input(&json!({"sweep": false})).is_err());
        assert_eq!(
            parse_input(&json!({"drift": true})).unwrap(),
            Input::Drift { tick: None }
        );
        assert_eq!(
            parse_input(&json!({"drift": true, "time": "2026-11-27T09:00:00Z"})).unwrap(),
            Input::Drift {
                tick: Some("2026-11-27T09:00:00Z".into())
            }
        );
        assert!(parse_input(&json!({"drift": false})).is_err());
        assert!(parse_input(&json!({"drift": true, "sweep": true})).is_err());
        assert!(parse_input(&json!({"detail-type": "EC2 Thing"})).is_err());
    }
}
