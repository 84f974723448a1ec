//! `live-ci status` over a real metadb (scripts/pg.sh): the run's units as a
//! table under a progress bar, and as JSON; a run that does not exist is a
//! clear error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use live_ci_testkit::pg as support;

use std::process::{Command, Output};

use live_ci_core::deploy::Outcome;
use live_ci_core::port::{ExecutionStore, RunStore};
use serde_json::Value;
use support::{TestDb, exec, run};

fn status(url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_live-ci"))
        .arg("status")
        .args(["--database-url", url])
        .args(args)
        .output()
        .unwrap()
}

#[tokio::test]
async fn shows_a_runs_units_with_progress() {
    let t = TestDb::new().await;
    let db = t.metadb(1).await;
    let created = db
        .create_run(&run(
            "c0ffee",
            4,
            vec![
                exec("a", "dev", &[]),
                exec("b", "dev", &["a"]),
                exec("c", "dev", &[]),
            ],
        ))
        .await
        .unwrap();
    db.claim_ready(created.run_id, 10).await.unwrap();
    db.record_finished("a", Outcome::Failed, Some("apply failed: boom"))
        .await
        .unwrap();

    let out = status(&t.url, &["--commit", "c0ffee"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with(&format!(
            "run {} · PR #7 · commit c0ffee · running",
            created.run_id
        )),
        "{text}"
    );
    assert!(
        lines[1].starts_with(&format!("[{}{}] 2/3 (66%)", "#".repeat(20), "-".repeat(10))),
        "{text}"
    );
    assert!(
        lines[1].contains("1 running · 0 waiting · 0 succeeded · 1 failed · 1 aborted"),
        "{text}"
    );
    let a = lines.iter().find(|l| l.starts_with("dev/a ")).unwrap();
    assert!(
        a.contains("failed") && a.ends_with("apply failed: boom"),
        "{a}"
    );
    let b = lines.iter().find(|l| l.starts_with("dev/b ")).unwrap();
    assert!(
        b.contains("aborted") && b.ends_with("ancestor failed"),
        "{b}"
    );

    // The default is the run holding the merge lock; JSON for tools.
    let out = status(&t.url, &["--format", "json"]);
    assert!(out.status.success(), "{out:?}");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["run"]["run_id"], created.run_id);
    assert_eq!(json["executions"].as_array().unwrap().len(), 3);
    assert_eq!(json["executions"][0]["status"], "failed");

    let out = status(&t.url, &["--run", "999999"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("the metadb has no run 999999"), "{err}");
    t.drop_db().await;
}

/// A failure reason carries a child's output (terraform's colours, or a
/// hostile unit's escape sequences): `status` shows it as visible escapes, so
/// it can neither clear nor redraw the operator's terminal, nor add a row.
#[tokio::test]
async fn escape_sequences_and_newlines_in_values_are_shown_not_obeyed() {
    let t = TestDb::new().await;
    let db = t.metadb(1).await;
    let created = db
        .create_run(&run("c0ffee", 4, vec![exec("a", "dev", &[])]))
        .await
        .unwrap();
    db.claim_ready(created.run_id, 10).await.unwrap();
    db.record_finished(
        "a",
        Outcome::Failed,
        Some("apply failed: \u{1b}[31mboom\u{1b}[0m\ndev/x  succeeded\u{1b}[2J\u{202E}"),
    )
    .await
    .unwrap();
    let out = status(&t.url, &["--run", &created.run_id.to_string()]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains(['\u{1b}', '\u{202E}']), "{text:?}");
    let a = text.lines().find(|l| l.starts_with("dev/a ")).unwrap();
    assert!(
        a.ends_with(
            "apply failed: \\u{1b}[31mboom\\u{1b}[0m\\u{a}dev/x  succeeded\\u{1b}[2J\\u{202e}"
        ),
        "{a}"
    );
    assert!(!text.lines().any(|l| l.starts_with("dev/x")), "{text}");
    t.drop_db().await;
}
