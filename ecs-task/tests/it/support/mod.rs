//! Test support for the task's integration tests.

#![allow(dead_code, clippy::unwrap_used)]

pub mod fakes;
pub use live_ci_testkit::pg;
pub mod repo;

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use live_ci_task::FromLookup;

/// A subcommand's configuration (the type asked for) from name/value pairs
/// (nothing from the process environment). The tests run plain terraform, so the show command is
/// terraform's unless a test sets another.
pub fn config<C: FromLookup>(pairs: &[(&str, &str)]) -> C {
    let mut map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    map.entry("SHOW_COMMAND".into())
        .or_insert_with(|| repo::SHOW_COMMAND.into());
    C::from_lookup(move |k| map.get(k).cloned()).unwrap()
}

/// Role assumption through LocalStack's STS.
pub fn sts() -> live_ci_aws::StsRoleAssumer {
    live_ci_aws::StsRoleAssumer::new(live_ci_aws::sdk::sts::Client::new(
        &live_ci_testkit::aws::sdk_config(),
    ))
}

/// Whether the calling test runs its body in this process. A test whose task
/// waits for its apply makes its process the child subreaper and kills every
/// child that process has when the plan is done (`live_ci_task::leftovers`):
/// beside other tests it would take their commands for leftovers. So the
/// harness's call runs the same test again, alone, in a new process of this
/// test binary, asserts that it passed, and returns false; in that process it
/// returns true. `test` is the test's full name, e.g. `apply_handoff::name`.
pub fn alone_in_process(test: &str) -> bool {
    const ALONE: &str = "LIVE_CI_TEST_ALONE";
    if std::env::var(ALONE).as_deref() == Ok(test) {
        return true;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads", "1"])
        .env(ALONE, test)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{test} alone in its process: {}",
        out.status
    );
    false
}

/// An S3 client for the project's LocalStack (path-style: no bucket DNS here).
pub fn s3_client() -> aws_sdk_s3::Client {
    let conf = aws_sdk_s3::config::Builder::from(&live_ci_testkit::aws::sdk_config())
        .force_path_style(true)
        .build();
    aws_sdk_s3::Client::from_conf(conf)
}

/// A new bucket named after `prefix`, unversioned.
pub async fn new_bucket(client: &aws_sdk_s3::Client, prefix: &str) -> String {
    let bucket = live_ci_testkit::unique(prefix).to_lowercase();
    client.create_bucket().bucket(&bucket).send().await.unwrap();
    bucket
}

/// ECS's StopTask, sent to this process (the task) once the command under
/// test has written `started`: SIGTERM, as ECS sends before its SIGKILL.
pub async fn stop_this_task_once_started(started: &Path) {
    for _ in 0..1200 {
        if started.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(started.exists(), "the command never started");
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &std::process::id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}
