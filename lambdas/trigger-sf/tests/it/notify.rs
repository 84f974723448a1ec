//! "run finished" and "run failed" (issue 29 item 4) against a real
//! PostgreSQL metadb: announced exactly once per run, tied to the metadb's
//! transition of the run to its end, however often (or however concurrently)
//! the last event arrives, the sweep included; advisory when the publish
//! fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::ports::{Fakes, Wired};
use live_ci_core::deploy::RunStatus;
use live_ci_core::notification::{Event, PullRequest, UnitError};
use live_ci_core::port::RunStore;
use live_ci_core::webhook::FilePattern;
use live_ci_metadb::PgMetadb;
use live_ci_testkit::git_host::RecordingGitHost;
use live_ci_testkit::notify::RecordingNotifications;
use live_ci_testkit::params::MemoryParams;
use live_ci_testkit::pg::{TestDb, exec, run};
use live_ci_trigger_sf::{HandlerConfig, Input, NoTrunkSweep};

use crate::trigger::{FakeEngine, LOCK, ended, github};

type Handler = Wired<
    PgMetadb,
    FakeEngine,
    MemoryParams,
    RecordingGitHost,
    NoTrunkSweep,
    NoTrunkSweep,
    RecordingNotifications,
>;

async fn handler(t: &TestDb) -> Handler {
    let mut config = HandlerConfig::new(LOCK, FilePattern::new(FilePattern::DEFAULT).unwrap());
    config.repository = "acme/live".into();
    config.github_web_url = Some("https://github.example.com".into());
    Wired::new(
        config,
        Fakes::new(
            t.metadb(4).await,
            FakeEngine::default(),
            MemoryParams::default(),
            github(),
        )
        .with_notifications(RecordingNotifications::default()),
    )
}

/// a → b in one account, for pull request 7.
async fn pair(h: &Handler, commit: &str) -> i64 {
    let mut new = run(
        commit,
        4,
        vec![
            exec(&format!("{commit}-a"), "dev", &[]),
            exec(&format!("{commit}-b"), "dev", &[&format!("{commit}-a")]),
        ],
    );
    new.pr_id = 7;
    h.metadb.create_run(&new).await.unwrap().run_id
}

fn pr7() -> Option<PullRequest> {
    Some(PullRequest {
        number: 7,
        url: "https://github.example.com/acme/live/pull/7".into(),
    })
}

#[tokio::test]
async fn a_finished_run_is_announced_once_however_often_its_last_event_arrives() {
    let t = TestDb::new().await;
    let h = handler(&t).await;
    let run_id = pair(&h, "n1").await;
    h.handle(&Input::Run(run_id)).await.unwrap();
    h.handle(&ended("n1-a", "SUCCEEDED", None)).await.unwrap();
    assert!(h.notifications.published().is_empty());
    // The last event twice at once, then again, then the run and the sweep.
    let last = ended("n1-b", "SUCCEEDED", None);
    let (x, y) = tokio::join!(h.handle(&last), h.handle(&last));
    let finished: Vec<_> = [x.unwrap(), y.unwrap()]
        .into_iter()
        .flat_map(|r| r.finished)
        .collect();
    assert_eq!(finished, [(run_id, RunStatus::Succeeded)]);
    h.handle(&ended("n1-b", "SUCCEEDED", None)).await.unwrap();
    h.handle(&Input::Run(run_id)).await.unwrap();
    h.handle(&Input::Sweep).await.unwrap();
    assert_eq!(
        h.notifications.published(),
        [Event::RunFinished {
            repository: "acme/live".into(),
            run_id: run_id.to_string(),
            pull_request: pr7(),
            units: 2,
            page_url: None,
        }]
    );
    t.drop_db().await;
}

#[tokio::test]
async fn a_failed_run_is_announced_once_with_its_failed_units_and_errors() {
    let t = TestDb::new().await;
    let h = handler(&t).await;
    let run_id = pair(&h, "n2").await;
    h.handle(&Input::Run(run_id)).await.unwrap();
    let r = h
        .handle(&ended("n2-a", "FAILED", Some("PlanFailed")))
        .await
        .unwrap();
    assert_eq!(r.finished, [(run_id, RunStatus::Failed)]);
    assert!(r.warnings.is_empty(), "{r:?}");
    h.handle(&ended("n2-a", "FAILED", Some("PlanFailed")))
        .await
        .unwrap();
    h.handle(&Input::Sweep).await.unwrap();
    let published = h.notifications.published();
    assert_eq!(published.len(), 1, "{published:?}");
    let Event::RunFailed {
        repository,
        run_id: announced,
        pull_request,
        failed,
        page_url,
    } = &published[0]
    else {
        panic!("not run_failed: {published:?}");
    };
    assert_eq!(
        (
            repository.as_str(),
            announced.as_str(),
            pull_request,
            page_url
        ),
        ("acme/live", run_id.to_string().as_str(), &pr7(), &None)
    );
    // The aborted dependent is no failure of its own.
    assert_eq!(
        failed,
        &[UnitError {
            unit: "dev/n2-a".into(),
            error: "plan failed: PlanFailed: terraform exited 1".into(),
        }]
    );
    t.drop_db().await;
}

#[tokio::test]
async fn a_failed_publish_is_a_warning_and_the_run_still_finishes() {
    let t = TestDb::new().await;
    let h = handler(&t).await;
    *h.notifications.fail.lock().unwrap() = Some("sns unavailable".into());
    let run_id = pair(&h, "n3").await;
    h.handle(&Input::Run(run_id)).await.unwrap();
    h.handle(&ended("n3-a", "SUCCEEDED", None)).await.unwrap();
    let r = h.handle(&ended("n3-b", "SUCCEEDED", None)).await.unwrap();
    assert_eq!(r.finished, [(run_id, RunStatus::Succeeded)]);
    assert_eq!(
        r.warnings,
        ["notification run_finished: notifications: sns unavailable"]
    );
    assert_eq!(
        h.metadb.run(run_id).await.unwrap().unwrap().status,
        RunStatus::Succeeded
    );
    t.drop_db().await;
}
