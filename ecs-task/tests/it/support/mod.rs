//! Test support for the task's integration tests.

#![allow(dead_code, clippy::unwrap_used)]

pub(crate) mod fakes;
pub(crate) use live_ci_testkit::pg;
pub(crate) mod repo;

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use live_ci_task::FromLookup;

/// A subcommand's configuration (the type asked for) from name/value pairs
/// (nothing from the process environment). The tests run plain terraform, so the show command is
/// terraform's unless a test sets another.
pub(crate) fn config<C: FromLookup>(pairs: &[(&str, &str)]) -> C {
    let mut map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    map.entry("SHOW_COMMAND".into())
        .or_insert_with(|| repo::SHOW_COMMAND.into());
    C::from_lookup(move |k| map.get(k).cloned()).unwrap()
}

/// Role assumption through LocalStack's STS.
pub(crate) fn sts() -> live_ci_aws::StsRoleAssumer {
    live_ci_aws::StsRoleAssumer::new(live_ci_aws::sdk::sts::Client::new(
        &live_ci_testkit::aws::sdk_config(),
    ))
}

/// Whether the calling test runs its body in this process. A test that
/// signals its own process (the task's SIGTERM) would reach the other tests'
/// commands too. So the harness's call runs the same test again, alone, in a
/// new process of this test binary, asserts that it passed, and returns
/// false; in that process it returns true. `test` is the test's full name,
/// e.g. `terra_run::name`.
pub(crate) fn alone_in_process(test: &str) -> bool {
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
pub(crate) fn s3_client() -> aws_sdk_s3::Client {
    let conf = aws_sdk_s3::config::Builder::from(&live_ci_testkit::aws::sdk_config())
        .force_path_style(true)
        .build();
    aws_sdk_s3::Client::from_conf(conf)
}

/// A new bucket named after `prefix`, unversioned.
pub(crate) async fn new_bucket(client: &aws_sdk_s3::Client, prefix: &str) -> String {
    let bucket = live_ci_testkit::unique(prefix).to_lowercase();
    client.create_bucket().bucket(&bucket).send().await.unwrap();
    bucket
}

/// ECS's StopTask, sent to this process (the task) once the command under
/// test has written `started`: SIGTERM, as ECS sends before its SIGKILL.
pub(crate) async fn stop_this_task_once_started(started: &Path) {
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

/// Makes `command` the execution's recorded `plan_command` or
/// `apply_command` (`phase`): terra-run runs only the record's command, and
/// refuses a `LIVE_CI_COMMAND` that differs from it.
pub(crate) async fn record_command(db_url: &str, id: &str, phase: &str, command: &str) {
    let column = match phase {
        "plan" => "plan_command",
        "apply" => "apply_command",
        other => panic!("no phase {other:?}"),
    };
    let updated = live_ci_metadb::connect(db_url)
        .await
        .unwrap()
        .execute(
            &format!("UPDATE executions SET {column} = $2 WHERE execution_id = $1"),
            &[&id, &command],
        )
        .await
        .unwrap();
    assert_eq!(updated, 1, "execution {id:?}");
}

/// The execution approved by its voters as the approval path records it
/// (`cast_vote` of enough voters, then `decide`), after it was started: its
/// run becomes the running one (any other running run has finished) and the
/// execution running, as when the state machine reaches Apply. terra-run
/// applies nothing without this (`ExecutionRecord::apply_refusal`).
pub(crate) async fn approve(db_url: &str, metadb: &live_ci_metadb::PgMetadb, id: &str) {
    use live_ci_core::deploy::Vote;
    use live_ci_core::port::ApprovalStore;
    let client = live_ci_metadb::connect(db_url).await.unwrap();
    client
        .batch_execute(&format!(
            "UPDATE runs SET status = 'succeeded', finished_at = now() \
               WHERE status = 'running' AND run_id <> \
                 (SELECT run_id FROM executions WHERE execution_id = '{id}'); \
             UPDATE runs SET status = 'running', started_at = coalesce(started_at, now()) \
               WHERE run_id = (SELECT run_id FROM executions WHERE execution_id = '{id}'); \
             UPDATE executions SET status = 'running', claimed_at = coalesce(claimed_at, now()) \
               WHERE execution_id = '{id}' AND status = 'waiting'"
        ))
        .await
        .unwrap();
    let record = live_ci_core::port::ExecutionStore::execution(metadb, id)
        .await
        .unwrap()
        .unwrap();
    if record.decision == Some(Vote::Approve) {
        return;
    }
    for voter in record
        .voters
        .iter()
        .take(record.min_approval_count as usize)
    {
        metadb.cast_vote(id, voter, Vote::Approve).await.unwrap();
    }
    assert_eq!(metadb.decide(id).await.unwrap(), Some(Vote::Approve));
}
