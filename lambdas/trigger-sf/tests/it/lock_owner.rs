//! The merge lock's owner (`live_ci_core::merge_lock`) against a real
//! PostgreSQL metadb: what is required and what is advisory is decided there
//! once for every caller, and the operator's controls post no status (the
//! decision `operate::lock_publisher` documents).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use live_ci_core::merge_lock::{
    self, Advisory, LockError, MergeLock, NoLockCheck, Publisher, Scope,
};
use live_ci_core::operate;
use live_ci_core::port::{ErrorKind, GitHost, ParamStore, RunStore};
use live_ci_core::status::{CommitStatus, PullRequest, StatusState};
use live_ci_core::webhook::FilePattern;
use live_ci_metadb::PgMetadb;
use live_ci_testkit::git_host::RecordingGitHost;
use live_ci_testkit::params::{FakeError, MemoryParams};
use live_ci_testkit::pg::{TestDb, exec, run};
use live_ci_trigger_sf::Input;

use crate::trigger::{FakeEngine, LOCK, github};

/// A parameter store that refuses every write (a missing `ssm:PutParameter`).
#[derive(Debug, Default)]
struct ReadOnlyParams(MemoryParams);

impl ParamStore for ReadOnlyParams {
    type Error = FakeError;

    async fn get(&self, name: &str) -> Result<String, FakeError> {
        self.0.get(name).await
    }

    async fn put(&self, name: &str, _value: &str) -> Result<(), FakeError> {
        Err(FakeError(format!("not allowed to write {name:?}")))
    }
}

/// GitHub refusing every status (a token without `repo:status`); the rest
/// answers as [`github`] does.
#[derive(Debug)]
struct RefusingStatuses(RecordingGitHost);

impl GitHost for RefusingStatuses {
    type Error = FakeError;

    async fn set_status(&self, _status: &CommitStatus) -> Result<(), FakeError> {
        Err(FakeError("statuses are refused".into()))
    }

    async fn pull_request_files(&self, number: u64) -> Result<Vec<String>, FakeError> {
        self.0.pull_request_files(number).await
    }

    async fn open_pull_requests(&self, base: &str) -> Result<Vec<PullRequest>, FakeError> {
        self.0.open_pull_requests(base).await
    }

    async fn upsert_comment(&self, n: u64, marker: &str, body: &str) -> Result<(), FakeError> {
        self.0.upsert_comment(n, marker, body).await
    }

    async fn bot_comment(&self, n: u64, marker: &str) -> Result<Option<String>, FakeError> {
        self.0.bot_comment(n, marker).await
    }
}

fn pattern() -> FilePattern {
    FilePattern::new(FilePattern::DEFAULT).unwrap()
}

fn publisher<'a, P, H>(
    metadb: &'a PgMetadb,
    params: &'a P,
    host: &'a H,
    pattern: &'a FilePattern,
) -> Publisher<'a, PgMetadb, P, H> {
    Publisher {
        metadb,
        params,
        param: LOCK,
        advisory: Advisory::Refresh {
            host,
            scope: Scope::Repo,
            trunk: "main",
            pattern,
        },
    }
}

/// A run of one unit for pull request `pr`; the first one takes the lock.
async fn one_unit_run(metadb: &PgMetadb, commit: &str, pr: u64) -> i64 {
    let mut new = run(commit, 1, vec![exec(&format!("{commit}-a"), "dev", &[])]);
    new.pr_id = pr;
    metadb.create_run(&new).await.unwrap().run_id
}

fn lock_statuses(host: &RecordingGitHost) -> Vec<CommitStatus> {
    host.statuses()
        .into_iter()
        .filter(|s| s.context == merge_lock::CONTEXT)
        .collect()
}

/// The parameter is the protection: when it cannot be written, publishing
/// fails naming the parameter, and no status claims what it does not say.
#[tokio::test]
async fn publishing_fails_when_the_parameter_write_fails_and_posts_no_status() {
    let t = TestDb::new().await;
    let metadb = t.metadb(2).await;
    let (params, host, pattern) = (ReadOnlyParams::default(), github(), pattern());
    let e = publisher(&metadb, &params, &host, &pattern)
        .publish(MergeLock::Held { pr: 7 })
        .await
        .unwrap_err();
    let LockError::Write { param, source } = &e else {
        panic!("{e:?}");
    };
    assert_eq!(param, LOCK);
    assert_eq!(source.kind(), ErrorKind::Permanent);
    assert_eq!(
        e.to_string(),
        format!(
            "writing the merge lock \"{LOCK}\": parameter store: not allowed to write \"{LOCK}\""
        )
    );
    assert!(lock_statuses(&host).is_empty(), "{:?}", host.statuses());
    t.drop_db().await;
}

/// Statuses are advisory: a refused one is the warning the caller reports,
/// the parameter is written all the same.
#[tokio::test]
async fn publishing_succeeds_with_a_warning_when_a_status_write_fails() {
    let t = TestDb::new().await;
    let metadb = t.metadb(2).await;
    let (params, host, pattern) = (
        MemoryParams::default(),
        RefusingStatuses(github()),
        pattern(),
    );
    let published = publisher(&metadb, &params, &host, &pattern)
        .publish(MergeLock::Held { pr: 7 })
        .await
        .unwrap();
    assert_eq!(published.lock, MergeLock::Held { pr: 7 });
    assert_eq!(
        published.warning.as_deref(),
        Some("merge lock statuses: github: statuses are refused")
    );
    assert_eq!(params.value(LOCK).as_deref(), Some("7"));
    t.drop_db().await;
}

/// The receiver's read: a "locked" parameter the row does not hold answers
/// the row; without a row to ask, the parameter; a value that is no lock is
/// a permanent parameter-store failure quoting it.
#[tokio::test]
async fn a_locked_parameter_is_confirmed_against_the_row() {
    let t = TestDb::new().await;
    let metadb = t.metadb(2).await;
    let params = MemoryParams::with([(LOCK, "7")]);
    let truth = merge_lock::MetadbLock(metadb.clone());
    let read = merge_lock::read_confirmed(&params, LOCK, Some(&truth)).await;
    assert_eq!(read.unwrap(), MergeLock::Free);
    let unchecked = merge_lock::read_confirmed(&params, LOCK, None::<&NoLockCheck>).await;
    assert_eq!(unchecked.unwrap(), MergeLock::Held { pr: 7 });
    one_unit_run(&metadb, "held", 7).await;
    let read = merge_lock::read_confirmed(&params, LOCK, Some(&truth)).await;
    assert_eq!(read.unwrap(), MergeLock::Held { pr: 7 });
    params.set(LOCK, "maybe");
    let e = merge_lock::read_confirmed(&params, LOCK, Some(&truth))
        .await
        .unwrap_err();
    let LockError::Read(port) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(port.kind(), ErrorKind::Permanent);
    assert!(e.to_string().starts_with("parameter store: "), "{e}");
    assert!(e.to_string().contains("\"maybe\""), "{e}");
    t.drop_db().await;
}

/// The operator's controls mirror the lock into the parameter only: the CLI
/// holds no GitHub client (`operate::lock_publisher`). Open pull requests
/// keep the "locked" status they show, and trigger-sf's sweep leaves it
/// (the parameter is in step with the row), until the pull request's next
/// event, when the receiver posts the lock from the parameter.
#[tokio::test]
async fn a_control_posts_no_status_and_the_sweep_leaves_them() {
    let t = TestDb::new().await;
    let h = crate::ports::Wired::new(
        live_ci_trigger_sf::HandlerConfig::new(LOCK, pattern()),
        crate::ports::Fakes::new(
            t.metadb(2).await,
            FakeEngine::default(),
            MemoryParams::default(),
            github(),
        ),
    );
    // Holding the lock, no execution started yet (nothing for abort to stop).
    let run_id = one_unit_run(&h.metadb, "ctl", 7).await;
    // create-deploy-stack published the lock held by PR #7 when the run took it.
    let pattern = pattern();
    publisher(&h.metadb, &*h.params, &*h.github, &pattern)
        .publish(MergeLock::Held { pr: 7 })
        .await
        .unwrap();
    let before = lock_statuses(&h.github);
    assert_eq!(before.last().unwrap().state, StatusState::Pending);

    let done = operate::abort(&*h.metadb, &*h.engine, &*h.params, LOCK, run_id, "op")
        .await
        .unwrap();
    assert_eq!(done.merge_lock, "none");
    assert_eq!(h.params.value(LOCK).as_deref(), Some("none"));
    let r = h.handle(&Input::Sweep).await.unwrap();
    assert_eq!(r.lock_repaired, None, "{r:?}");
    operate::unlock(&*h.metadb, &*h.params, LOCK, true, "op")
        .await
        .unwrap();
    h.handle(&Input::Sweep).await.unwrap();

    assert_eq!(lock_statuses(&h.github), before);
    t.drop_db().await;
}
