//! `live-ci drift` through the binary against a real PostgreSQL metadb: the
//! latest result per unit, with commit, time, counts and open issue.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use live_ci_core::drift::{DriftState, UnitDrift};
use live_ci_core::path::RepoPath;
use live_ci_core::port::DriftStore;
use live_ci_core::terraform::ChangeCounts;
use live_ci_testkit::pg::TestDb;
use serde_json::Value;

fn result(unit: &str, state: DriftState, add: u32) -> UnitDrift {
    UnitDrift {
        unit: RepoPath::new(unit).unwrap(),
        state,
        message: (state == DriftState::Failed).then(|| "no credentials".to_string()),
        counts: ChangeCounts {
            add,
            change: 0,
            destroy: 0,
        },
    }
}

fn live_ci(url: &str, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_live-ci"))
        .args(args)
        .env("LIVE_CI_DATABASE_URL", url)
        .env_remove("METADB_URL")
        .env_remove("METADB_CLUSTER_ARN")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn drift_lists_the_latest_result_per_unit() {
    let t = TestDb::new().await;
    let db = t.metadb(1).await;
    assert_eq!(
        live_ci(&t.url, &["drift"]).trim(),
        "no drift checks recorded"
    );
    db.record_drift_check(
        "aaaaaaaaaaaa1111",
        &[
            result("dev/a", DriftState::Drifted, 2),
            result("dev/b", DriftState::Failed, 0),
        ],
    )
    .await
    .unwrap();
    db.record_drift_check("bbbbbbbbbbbb2222", &[result("dev/b", DriftState::Clean, 0)])
        .await
        .unwrap();
    db.set_drift_issue(&RepoPath::new("dev/a").unwrap(), Some(41))
        .await
        .unwrap();

    let table = live_ci(&t.url, &["drift"]);
    println!("{table}");
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    let cells = |line: &str| {
        line.split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        cells(lines[0]),
        [
            "UNIT", "STATE", "COMMIT", "CHECKED", "AT", "COUNTS", "ISSUE"
        ]
    );
    let a = cells(lines[1]);
    assert_eq!(
        [&a[0], &a[1], &a[2], &a[4], &a[5]],
        ["dev/a", "drifted", "aaaaaaaaaaaa", "+2/~0/-0", "#41"]
            .map(String::from)
            .each_ref()
    );
    let b = cells(lines[2]);
    assert_eq!(
        [&b[0], &b[1], &b[2], &b[5]],
        ["dev/b", "clean", "bbbbbbbbbbbb", "-"]
            .map(String::from)
            .each_ref()
    );

    let json: Value =
        serde_json::from_str(&live_ci(&t.url, &["drift", "--format", "json"])).unwrap();
    assert_eq!(json[0]["unit"], "dev/a");
    assert_eq!(json[0]["issue"], 41);
    assert_eq!(json[1]["state"], "clean");
    assert_eq!(json[1]["commit_id"], "bbbbbbbbbbbb2222");
    t.drop_db().await;
}
