//! Benchmark of the approval page's plan rendering: a generated `show -json`
//! of 5,000 resource changes (10 attributes each, sensitive and unknown
//! values among them) parsed into a [`PlanView`] and rendered to HTML, as the
//! approval_response Lambda does per GET. Prints the JSON and HTML sizes and
//! min / median / max milliseconds of parse + render over 15 rounds.
//!
//! Run with `cargo run -p live-ci-core --example bench_plan_view [resources]`,
//! or time the whole process with
//! `farm-bench -- target/debug/examples/bench_plan_view 5000`.

use std::time::Instant;

use live_ci_core::plan_view::PlanView;
use serde_json::{Value, json};

fn plan(resources: usize) -> Vec<u8> {
    let types = [
        "aws_s3_bucket",
        "aws_iam_role",
        "aws_instance",
        "aws_security_group_rule",
        "aws_ssm_parameter",
    ];
    let changes: Vec<Value> = (0..resources)
        .map(|i| {
            let ty = types[i % types.len()];
            let action = ["create", "update", "delete"][i % 3];
            let attrs = |v: &str| {
                json!({
                    "name": format!("{ty}-{i}-{v}"),
                    "description": "x".repeat(300),
                    "tags": {"Env": "prod", "Owner": format!("team-{v}"), "Index": i},
                    "ports": [80, 443, i % 1000],
                    "secret": format!("hunter2-{i}"),
                    "enabled": v == "after",
                })
            };
            let (before, after) = match action {
                "create" => (Value::Null, attrs("after")),
                "delete" => (attrs("before"), Value::Null),
                _ => (attrs("before"), attrs("after")),
            };
            json!({
                "address": format!("module.m{}.{ty}.r{i}", i % 40),
                "type": ty,
                "change": {
                    "actions": [action],
                    "before": before,
                    "after": after,
                    "after_unknown": if action == "delete" { json!({}) } else { json!({"arn": true, "id": true}) },
                    "before_sensitive": {"secret": true},
                    "after_sensitive": {"secret": true},
                }
            })
        })
        .collect();
    json!({"format_version": "1.2", "resource_changes": changes})
        .to_string()
        .into_bytes()
}

fn main() -> Result<(), String> {
    let resources: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().map_err(|e| format!("resources {a:?}: {e}")))
        .transpose()?
        .unwrap_or(5000);
    let json = plan(resources);
    let mut times = Vec::new();
    let mut html_len = 0;
    for _ in 0..15 {
        let start = Instant::now();
        let view = PlanView::from_show_json(&json)?;
        let html = view.to_html();
        times.push(start.elapsed().as_secs_f64() * 1000.0);
        html_len = html.len();
        assert_eq!(view.resource_count(), resources);
        assert!(!html.contains("hunter2"));
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{resources} resources: plan JSON {:.1} MB, page HTML {:.1} MB; parse+render ms min {:.1} median {:.1} max {:.1} ({} build)",
        json.len() as f64 / 1e6,
        html_len as f64 / 1e6,
        times[0],
        times[times.len() / 2],
        times[times.len() - 1],
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
    Ok(())
}
