//! The workspace's layout habits (issue 33 item 7): no Lambda (`lambdas/*`)
//! nor the task (`ecs-task`) depends on another of them, dev-dependencies
//! included: a test that needs two Lambdas is an end-to-end test
//! (`tests/e2e`), and test support two Lambdas share is the testkit's. Read
//! from `cargo metadata` (no dependency resolution, so offline and quick).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The entry points' packages (name, manifest dir) and their dependencies
/// (name, kind: "normal", "dev" or "build").
fn entry_points(metadata: &Value, root: &Path) -> Vec<(String, Vec<(String, String)>)> {
    let lambdas = root.canonicalize().unwrap().join("lambdas");
    let task = root.canonicalize().unwrap().join("ecs-task");
    metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            let dir = Path::new(p["manifest_path"].as_str().unwrap())
                .parent()
                .unwrap()
                .to_path_buf();
            dir.parent() == Some(lambdas.as_path()) || dir == task
        })
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| {
                    let kind = d["kind"].as_str().unwrap_or("normal").to_string();
                    (d["name"].as_str().unwrap().to_string(), kind)
                })
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

/// Each dependency of an entry point on another entry point, as
/// "package -> dependency (kind)".
fn crossings(packages: &[(String, Vec<(String, String)>)]) -> Vec<String> {
    let names: Vec<&str> = packages.iter().map(|(n, _)| n.as_str()).collect();
    let mut found = Vec::new();
    for (name, deps) in packages {
        for (dep, kind) in deps {
            if dep != name && names.contains(&dep.as_str()) {
                found.push(format!("{name} -> {dep} ({kind})"));
            }
        }
    }
    found
}

#[test]
fn no_lambda_nor_the_task_depends_on_another_of_them() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = workspace();
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .arg("--manifest-path")
        .arg(root.join("Cargo.toml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = entry_points(&metadata, &root);
    // The check sees them: the five Lambdas and the task at least.
    let names: Vec<&str> = packages.iter().map(|(n, _)| n.as_str()).collect();
    for expected in [
        "live-ci-approval-request",
        "live-ci-approval-response",
        "live-ci-notifier",
        "live-ci-receiver",
        "live-ci-task",
        "live-ci-trigger-sf",
    ] {
        assert!(names.contains(&expected), "{expected} not in {names:?}");
    }
    let found = crossings(&packages);
    assert!(
        found.is_empty(),
        "an entry point depends on another (move the test to tests/e2e, the shared support to crates/testkit): {found:?}"
    );
}
