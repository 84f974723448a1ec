//! The `live-ci-task` binary itself: its contract output for the Terraform
//! module's tests, and a clear failure naming a missing variable.
#![allow(clippy::unwrap_used)]

use std::process::Command;

use serde_json::Value;

fn task() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_live-ci-task"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("AWS_REGION", "us-east-1");
    cmd
}

#[test]
fn contract_lists_the_environment_and_the_iam_actions() {
    let out = task().arg("contract").output().unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = v["env_vars"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(names, live_ci_task::ENV_VARS);
    for name in [
        "ACCOUNT_PARENT_CFG",
        "PLAN_BUCKET",
        "LIVE_CI_TASK_TOKEN",
        "LIVE_CI_COMMIT",
    ] {
        assert!(names.contains(&name), "{name}");
    }
    let actions = v["aws_actions"].as_array().unwrap();
    assert!(actions.iter().any(|a| a == "s3:PutObject"));
}

#[test]
fn a_missing_variable_fails_naming_it() {
    let out = task()
        .arg("terra-run")
        .env("REPO_CLONE_URL", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("environment variable METADB_URL is not set"),
        "{stderr}"
    );
    let out = task()
        .arg("create-deploy-stack")
        .env("SCAN_TYPE", "diff")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("SCAN_TYPE=\"diff\""), "{stderr}");
}
