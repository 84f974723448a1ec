//! trigger_sf's input decoding over the stored EventBridge fixtures.
#![allow(clippy::unwrap_used)] // test set-up panics by design

use live_ci_trigger_sf::{Input, parse_input};
use serde_json::Value;

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/../../tests/fixtures/eventbridge/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn status_change(name: &str) -> (String, Option<String>, Option<String>) {
    match parse_input(&fixture(name)).unwrap() {
        Input::StatusChange(d) => {
            assert_eq!(d.name, "run-42-6cb9-shared-vpc-318");
            assert_eq!(
                d.execution_arn,
                "arn:aws:states:eu-west-1:123456789012:execution:live-ci-deployment:run-42-6cb9-shared-vpc-318"
            );
            (d.status, d.error, d.cause)
        }
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn status_changes_decode_with_status_error_and_cause() {
    assert_eq!(status_change("sfn_status_running.json").0, "RUNNING");
    assert_eq!(
        status_change("sfn_status_succeeded.json"),
        ("SUCCEEDED".into(), None, None)
    );
    assert_eq!(
        status_change("sfn_status_failed_rejected.json"),
        (
            "FAILED".into(),
            Some("Rejected".into()),
            Some("rejected by platform-lead@example.com".into())
        )
    );
    let (status, error, _) = status_change("sfn_status_failed_plan.json");
    assert_eq!(
        (status.as_str(), error.as_deref()),
        ("FAILED", Some("PlanFailed"))
    );
    assert_eq!(status_change("sfn_status_timed_out.json").0, "TIMED_OUT");
}

#[test]
fn the_schedule_is_a_sweep_and_other_events_are_refused() {
    assert_eq!(
        parse_input(&fixture("scheduled_sweep.json")).unwrap(),
        Input::Sweep
    );
    let mut other = fixture("scheduled_sweep.json");
    other["detail-type"] = Value::from("EC2 Instance State-change Notification");
    let err = parse_input(&other).unwrap_err().to_string();
    assert!(
        err.contains("\"EC2 Instance State-change Notification\""),
        "{err}"
    );
    let mut broken = fixture("sfn_status_failed_plan.json");
    broken["detail"] = serde_json::json!({"status": "FAILED"});
    assert!(parse_input(&broken).is_err());
}
