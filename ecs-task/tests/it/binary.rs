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

/// A subcommand started with several variables missing or wrong names all of
/// them in one error and does nothing: not even the GitHub token is read (the
/// parameter store's endpoint is a listener that must see no connection).
#[test]
fn every_missing_variable_is_named_at_once_and_nothing_is_done() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let out = task()
        .arg("create-deploy-stack")
        .env("AWS_ENDPOINT_URL", &endpoint)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("GITHUB_TOKEN_SSM_KEY", "/live-ci/github-token")
        .env("REPO_FULL_NAME", "acme/live")
        .env("MAX_PARALLEL", "0")
        .env("LIVE_CI_COMMIT", "abc")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for problem in [
        "environment variable MAX_PARALLEL=\"0\": must be at least 1",
        "environment variable TRIGGER_SF_FUNCTION_NAME is not set",
        "environment variable MERGE_LOCK_SSM_KEY is not set",
        "environment variable ACCOUNT_PARENT_CFG is not set",
        "environment variable METADB_URL is not set",
    ] {
        assert!(stderr.contains(problem), "{problem}: {stderr}");
    }
    // One error, on one line.
    let line = stderr
        .lines()
        .find(|l| l.contains("TRIGGER_SF_FUNCTION_NAME"))
        .unwrap();
    assert!(line.contains("METADB_URL"), "{stderr}");
    assert!(!stderr.contains("LIVE_CI_COMMIT"), "{stderr}");
    let accepted = listener.accept();
    assert!(
        matches!(&accepted, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the task called AWS before its configuration was complete: {accepted:?}"
    );
}
