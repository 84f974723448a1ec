//! What a status change costs in metadb round trips: the handler over the real
//! PostgreSQL metadb through a connection that logs every call (each statement
//! and each BEGIN/COMMIT is one RDS Data API call in AWS). The counts are exact
//! and asserted, so a change that adds a round trip to the hot path fails here.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::ports::{Fakes, Wired};
use live_ci_core::deploy::RunStatus;
use live_ci_core::port::RunStore;
use live_ci_metadb::{PgSql, Store};
use live_ci_testkit::params::MemoryParams;
use live_ci_testkit::pg::{TestDb, exec, run};
use live_ci_testkit::round_trips::Counting;
use live_ci_trigger_sf::{HandlerConfig, Input, Report};

use crate::trigger::{FakeEngine, LOCK, ended, github};

type Handler = Wired<
    Store<Counting<PgSql>>,
    FakeEngine,
    MemoryParams,
    live_ci_testkit::git_host::RecordingGitHost,
>;

async fn counting_handler(t: &TestDb) -> (Handler, Counting<PgSql>) {
    counting_handler_with(t, false).await
}

async fn counting_handler_with(t: &TestDb, deploy_comments: bool) -> (Handler, Counting<PgSql>) {
    // Migrated first, through a plain connection: the schema is not what is counted.
    let migrated = t.metadb(1).await;
    drop(migrated);
    let sql = Counting::new(PgSql::connect(&t.url, 2).unwrap());
    let mut config = HandlerConfig::new(
        LOCK,
        live_ci_core::webhook::FilePattern::new(live_ci_core::webhook::FilePattern::DEFAULT)
            .unwrap(),
    );
    config.deploy_comments = deploy_comments;
    let handler = Wired::new(
        config,
        Fakes::new(
            Store::new(sql.clone()),
            FakeEngine::default(),
            MemoryParams::default(),
            github(),
        ),
    );
    (handler, sql)
}

/// Handles `input` and returns its report with the calls it made.
async fn counted(h: &Handler, sql: &Counting<PgSql>, input: &Input) -> (Report, Vec<String>) {
    sql.take();
    let report = h.handle(input).await.unwrap();
    (report, sql.take())
}

/// The calls of one status change (before issue 17's functions, measured with
/// this test at ff40a64: 14, 12, 24 and 6): a success that starts two
/// dependents is the settle and one ARN attach for both; a failure that aborts
/// dependents is the settle alone (the aborted units' details come with it);
/// the last execution of a run is the settle and the run's end (finish,
/// hand-over, and what its statuses need); a run's first claim is the claim
/// with its counts and the attach.
#[tokio::test]
async fn a_status_change_costs_a_bounded_number_of_round_trips() {
    let t = TestDb::new().await;
    let (h, sql) = counting_handler(&t).await;

    // (a) and (c): a frees b and c; c is the run's last execution.
    let created = h
        .metadb
        .create_run(&run(
            "rt1",
            4,
            vec![
                exec("rt1-a", "dev", &[]),
                exec("rt1-b", "dev", &["rt1-a"]),
                exec("rt1-c", "dev", &["rt1-a"]),
            ],
        ))
        .await
        .unwrap();
    let (r, run_calls) = counted(&h, &sql, &Input::Run(created.run_id)).await;
    assert_eq!(r.started, ["rt1-a"]);

    let (r, success) = counted(&h, &sql, &ended("rt1-a", "SUCCEEDED", None)).await;
    assert_eq!(r.recorded, ["rt1-a"]);
    let mut started = r.started.clone();
    started.sort();
    assert_eq!(started, ["rt1-b", "rt1-c"]);

    let (r, _) = counted(&h, &sql, &ended("rt1-b", "SUCCEEDED", None)).await;
    assert!(r.finished.is_empty(), "{r:?}");
    let (r, last) = counted(&h, &sql, &ended("rt1-c", "SUCCEEDED", None)).await;
    assert_eq!(r.finished, [(created.run_id, RunStatus::Succeeded)]);

    // (b): x fails and aborts y and z; w still runs, so the run goes on.
    let created = h
        .metadb
        .create_run(&run(
            "rt2",
            4,
            vec![
                exec("rt2-x", "dev", &[]),
                exec("rt2-w", "dev", &[]),
                exec("rt2-y", "dev", &["rt2-x"]),
                exec("rt2-z", "dev", &["rt2-y"]),
            ],
        ))
        .await
        .unwrap();
    let (r, _) = counted(&h, &sql, &Input::Run(created.run_id)).await;
    assert_eq!(r.started.len(), 2, "{r:?}");
    let (r, failure) = counted(&h, &sql, &ended("rt2-x", "FAILED", Some("PlanFailed"))).await;
    let mut aborted = r.aborted.clone();
    aborted.sort();
    assert_eq!(aborted, ["rt2-y", "rt2-z"]);
    assert!(r.finished.is_empty(), "{r:?}");

    let counts = [
        ("a success that starts 2 dependents", success.len(), 2),
        ("a failure that aborts 2 dependents", failure.len(), 1),
        ("the last execution of a run", last.len(), 2),
        ("a run's first claim", run_calls.len(), 2),
    ];
    for (case, calls, _) in &counts {
        eprintln!("{case}: {calls} metadb calls");
    }
    for ((case, calls, expected), log) in counts.iter().zip([&success, &failure, &last, &run_calls])
    {
        assert_eq!(calls, expected, "{case}: {log:#?}");
    }
    t.drop_db().await;
}

/// What the deploy comment adds to an invocation, after its deploy work: the
/// run as the run page reads it (two reads at once) and the pull requests it
/// goes to; when the body changed, the digest's compare-and-set and the same
/// reads again (a change made meanwhile is written too).
#[tokio::test]
async fn the_deploy_comment_costs_a_bounded_number_of_round_trips() {
    let t = TestDb::new().await;
    let (h, sql) = counting_handler_with(&t, true).await;
    let created = h
        .metadb
        .create_run(&run("rt3", 4, vec![exec("rt3-a", "dev", &[])]))
        .await
        .unwrap();
    let (_, first) = counted(&h, &sql, &Input::Run(created.run_id)).await;
    let (_, unchanged) = counted(&h, &sql, &ended("rt3-a", "RUNNING", None)).await;
    let (r, last) = counted(&h, &sql, &ended("rt3-a", "SUCCEEDED", None)).await;
    assert_eq!(r.finished, [(created.run_id, RunStatus::Succeeded)]);
    assert_eq!(*h.github.comment_writes.lock().unwrap(), 2);
    // Without the comment: 2, 1 and 2 calls (the test above).
    let counts = [
        (
            "a run's first claim, comment written",
            first.len(),
            2 + 3 + 1 + 3,
        ),
        ("an event that changes nothing", unchanged.len(), 1 + 3),
        (
            "the last execution of a run, comment written",
            last.len(),
            2 + 3 + 1 + 3,
        ),
    ];
    for ((case, calls, expected), log) in counts.iter().zip([&first, &unchanged, &last]) {
        eprintln!("{case}: {calls} metadb calls");
        assert_eq!(calls, expected, "{case}: {log:#?}");
    }
    t.drop_db().await;
}
