//! The drift store (migration 0020) against a real PostgreSQL: checks are
//! recorded whole, the latest result per unit wins, a unit's open issue is
//! kept and cleared, and the drift job's role `live_ci_drift` does all of it
//! and reads the busy units, but may not write runs or executions (the merge
//! lock and everything a deploy needs stay out of its reach).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use live_ci_core::drift::{DriftState, UnitDrift};
use live_ci_core::path::RepoPath;
use live_ci_core::port::{DriftStore, RunStore};
use live_ci_core::terraform::ChangeCounts;
use live_ci_metadb::PgMetadb;
use live_ci_testkit::pg::{self as support, TestDb, exec, run};

/// (unit, state, commit, issue, message) of a latest result.
type Seen<'a> = (&'a str, DriftState, &'a str, Option<u64>, Option<&'a str>);

fn unit(p: &str) -> RepoPath {
    RepoPath::new(p).unwrap()
}

fn result(p: &str, state: DriftState, add: u32) -> UnitDrift {
    UnitDrift {
        unit: unit(p),
        state,
        message: (state == DriftState::Failed).then(|| "plan failed".to_string()),
        counts: ChangeCounts {
            add,
            change: 0,
            destroy: 0,
        },
    }
}

#[tokio::test]
async fn checks_record_whole_and_the_latest_result_per_unit_wins() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let first = db
        .record_drift_check(
            "aaaaaaa1",
            &[
                result("dev/a", DriftState::Drifted, 2),
                result("dev/b", DriftState::Clean, 0),
                result("dev/c", DriftState::Failed, 0),
            ],
        )
        .await
        .unwrap();
    let second = db
        .record_drift_check("bbbbbbb2", &[result("dev/a", DriftState::Clean, 0)])
        .await
        .unwrap();
    assert!(second > first);
    db.set_drift_issue(&unit("dev/b"), Some(12)).await.unwrap();
    db.set_drift_issue(&unit("dev/b"), Some(13)).await.unwrap();
    assert_eq!(db.drift_issue(&unit("dev/b")).await.unwrap(), Some(13));
    assert_eq!(db.drift_issue(&unit("dev/a")).await.unwrap(), None);

    let latest = db.latest_drift().await.unwrap();
    let seen: Vec<Seen<'_>> = latest
        .iter()
        .map(|r| {
            (
                r.unit.as_str(),
                r.state,
                r.commit_id.as_str(),
                r.issue,
                r.message.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("dev/a", DriftState::Clean, "bbbbbbb2", None, None),
            ("dev/b", DriftState::Clean, "aaaaaaa1", Some(13), None),
            (
                "dev/c",
                DriftState::Failed,
                "aaaaaaa1",
                None,
                Some("plan failed")
            ),
        ]
    );
    assert!(
        latest[0].checked_at.ends_with('Z'),
        "{}",
        latest[0].checked_at
    );

    db.set_drift_issue(&unit("dev/b"), None).await.unwrap();
    assert_eq!(db.drift_issue(&unit("dev/b")).await.unwrap(), None);

    // A bad row (a failed result without its message) records nothing of the
    // check: not even the check row.
    let mut bad = result("dev/d", DriftState::Failed, 0);
    bad.message = None;
    let e = db
        .record_drift_check("ccccccc3", &[result("dev/e", DriftState::Clean, 0), bad])
        .await
        .unwrap_err();
    assert!(e.to_string().contains("drift_results"), "{e}");
    let units: Vec<String> = db
        .latest_drift()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.unit.to_string())
        .collect();
    assert_eq!(units, ["dev/a", "dev/b", "dev/c"]);
    t.drop_db().await;
}

/// A login that is a member of `role`, and its URL for database `t`.
async fn login_in(t: &TestDb, role: &str) -> (String, String) {
    let admin = live_ci_metadb::connect(&t.url).await.unwrap();
    let login = format!("{}_{role}", t.name);
    admin
        .batch_execute(&format!(
            "CREATE ROLE {login} LOGIN PASSWORD 'pw-{login}' IN ROLE {role}"
        ))
        .await
        .unwrap();
    let url = t
        .url
        .replacen("://postgres@", &format!("://{login}:pw-{login}@"), 1);
    assert_ne!(url, t.url);
    (login, url)
}

async fn refused(url: &str, statement: &str) -> String {
    let client = live_ci_metadb::connect(url).await.unwrap();
    match client.batch_execute(statement).await {
        Ok(()) => panic!("{statement:?} was allowed"),
        Err(e) => e
            .as_db_error()
            .map_or_else(|| e.to_string(), |d| d.message().to_string()),
    }
}

#[tokio::test]
async fn the_drift_role_records_and_reads_busy_units_but_cannot_touch_runs() {
    let t = TestDb::new().await;
    let master = t.metadb(2).await;
    master
        .create_run(&run("dd00ff01", 4, vec![exec("dr-a", "dev", &[])]))
        .await
        .unwrap();
    let (login, url) = login_in(&t, live_ci_metadb::DRIFT_ROLE).await;
    let job = PgMetadb::connect(&url, 1).unwrap();

    assert_eq!(job.busy_units().await.unwrap(), ["dev/dr-a"]);
    job.record_drift_check("dd00ff01", &[result("dev/x", DriftState::Drifted, 1)])
        .await
        .unwrap();
    job.set_drift_issue(&unit("dev/x"), Some(3)).await.unwrap();
    assert_eq!(job.latest_drift().await.unwrap()[0].issue, Some(3));
    job.set_drift_issue(&unit("dev/x"), None).await.unwrap();

    for (statement, table) in [
        ("UPDATE runs SET status = 'succeeded'", "runs"),
        ("UPDATE executions SET status = 'succeeded'", "executions"),
        ("UPDATE merge_lock SET run_id = NULL", "merge_lock"),
        ("SELECT voter FROM votes", "votes"),
    ] {
        let message = refused(&url, statement).await;
        assert_eq!(
            message,
            format!("permission denied for table {table}"),
            "{statement}"
        );
    }
    let name = t.name.clone();
    drop(job);
    t.drop_db().await;
    let admin = live_ci_metadb::connect(&support::server_url())
        .await
        .unwrap();
    admin
        .batch_execute(&format!("DROP ROLE IF EXISTS {login}"))
        .await
        .unwrap_or_else(|e| panic!("drop role {login} after {name}: {e}"));
}
