//! The trigger_sf handler against a real PostgreSQL metadb (scripts/pg.sh or
//! LIVE_CI_PG_URL) with recording fakes for Step Functions, the parameter store
//! and GitHub: runs advance unit by unit, failures abort dependents, repeats
//! change nothing, failed starts release their claims, runs hand on the lock.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use live_ci_testkit::pg as support;

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use crate::ports::{Fakes, Wired};
use live_ci_core::deploy::{ExecutionStatus, RunStatus, SfnInput};
use live_ci_core::merge_lock;
use live_ci_core::port::GitHost;
use live_ci_core::port::ParamStore;
use live_ci_core::port::{ExecutionDescription, ExecutionStore, RunStore, WorkflowEngine};
use live_ci_core::status::{CommitStatus, PullRequest, StatusState, context};
use live_ci_core::webhook::FilePattern;
use live_ci_metadb::PgMetadb;
use live_ci_testkit::git_host::RecordingGitHost;
use live_ci_testkit::params::{FakeError, MemoryParams};
use live_ci_trigger_sf::{HandlerConfig, Input, StatusChangeDetail};
use support::{TestDb, exec, run};

pub(crate) const LOCK: &str = "/live-ci/merge-lock";

/// Step Functions as a map: starts are recorded, names in `failing` refuse.
#[derive(Debug, Default)]
pub(crate) struct FakeEngine {
    starts: Mutex<Vec<(String, String)>>,
    failing: Mutex<HashSet<String>>,
    /// Status (and error) DescribeExecution reports per name; RUNNING otherwise.
    ended: Mutex<HashMap<String, (String, Option<String>)>>,
}

pub(crate) fn arn(name: &str) -> String {
    format!("arn:aws:states:us-east-1:000000000000:execution:deploy:{name}")
}

impl FakeEngine {
    pub(crate) fn started(&self) -> Vec<String> {
        self.starts
            .lock()
            .unwrap()
            .iter()
            .map(|(n, _)| n.clone())
            .collect()
    }
}

impl WorkflowEngine for FakeEngine {
    type Error = FakeError;

    async fn start_execution(&self, name: &str, input_json: &str) -> Result<String, FakeError> {
        if self.failing.lock().unwrap().contains(name) {
            return Err(FakeError(format!("throttled starting {name:?}")));
        }
        self.starts
            .lock()
            .unwrap()
            .push((name.to_string(), input_json.to_string()));
        Ok(arn(name))
    }

    async fn stop_execution(&self, arn: &str, _error: &str, _cause: &str) -> Result<(), FakeError> {
        Err(FakeError(format!(
            "trigger_sf never stops executions ({arn:?})"
        )))
    }

    async fn describe_execution(&self, arn: &str) -> Result<ExecutionDescription, FakeError> {
        let name = arn.rsplit(':').next().unwrap().to_string();
        let (status, error) = self
            .ended
            .lock()
            .unwrap()
            .get(&name)
            .cloned()
            .unwrap_or(("RUNNING".into(), None));
        Ok(ExecutionDescription {
            output: None,
            arn: arn.to_string(),
            name,
            status,
            error,
            cause: None,
        })
    }
}

type Handler = Wired<PgMetadb, FakeEngine, MemoryParams, RecordingGitHost>;

/// One open pull request (#9) touching a unit; statuses are recorded.
pub(crate) fn github() -> RecordingGitHost {
    RecordingGitHost::with_open(
        vec![PullRequest {
            number: 9,
            head_sha: "sha9".into(),
            base_ref: "main".into(),
        }],
        &["dev/app/terragrunt.hcl"],
    )
}

async fn handler(t: &TestDb) -> Handler {
    handler_with(t, |_| {}).await
}

async fn handler_with(t: &TestDb, tweak: impl FnOnce(&mut HandlerConfig)) -> Handler {
    let mut config = HandlerConfig::new(LOCK, FilePattern::new(FilePattern::DEFAULT).unwrap());
    tweak(&mut config);
    wired(t, config, github()).await
}

/// A handler on `t`'s metadb, the recording engine and parameters, and
/// `github` (each test file's own GitHub fake).
pub(crate) async fn wired<G: GitHost>(
    t: &TestDb,
    config: HandlerConfig,
    github: G,
) -> Wired<PgMetadb, FakeEngine, MemoryParams, G> {
    let engine = FakeEngine::default();
    Wired::new(
        config,
        Fakes::new(t.metadb(2).await, engine, MemoryParams::default(), github),
    )
}

pub(crate) fn ended(name: &str, status: &str, error: Option<&str>) -> Input {
    Input::StatusChange(StatusChangeDetail {
        execution_arn: arn(name),
        state_machine_arn: "arn:aws:states:us-east-1:000000000000:stateMachine:deploy".into(),
        name: name.into(),
        status: status.into(),
        error: error.map(str::to_string),
        cause: error.map(|_| "terraform exited 1".to_string()),
        output: None,
    })
}

fn engine(h: &Handler) -> &FakeEngine {
    // The test's handle on the handler's engine (`ports.rs`).
    &h.engine
}

fn lock_param(h: &Handler) -> Option<String> {
    h.params.value(LOCK)
}

async fn status(h: &Handler, id: &str) -> ExecutionStatus {
    h.metadb.execution(id).await.unwrap().unwrap().status
}

/// a → b → c in one account.
async fn chain(h: &Handler, commit: &str, pr: u64) -> i64 {
    let mut new = run(
        commit,
        4,
        vec![
            exec(&format!("{commit}-a"), "dev", &[]),
            exec(&format!("{commit}-b"), "dev", &[&format!("{commit}-a")]),
            exec(&format!("{commit}-c"), "dev", &[&format!("{commit}-b")]),
        ],
    );
    new.pr_id = pr;
    h.metadb.create_run(&new).await.unwrap().run_id
}

#[tokio::test]
async fn a_chain_runs_unit_by_unit_and_frees_the_lock() {
    let t = TestDb::new().await;
    let h = handler(&t).await;
    let run_id = chain(&h, "c1", 7).await;

    let r = h.handle(&Input::Run(run_id)).await.unwrap();
    assert_eq!(r.started, ["c1-a"]);
    let (name, input) = engine(&h).starts.lock().unwrap()[0].clone();
    assert_eq!(name, "c1-a");
    let input: SfnInput = serde_json::from_str(&input).unwrap();
    assert_eq!(input.execution_id, "c1-a");
    assert_eq!(input.pr_id, 7);
    let a = h.metadb.execution("c1-a").await.unwrap().unwrap();
    assert_eq!(a.sfn_execution_arn.as_deref(), Some(arn("c1-a").as_str()));

    // A RUNNING event records nothing and starts nothing new.
    let r = h.handle(&ended("c1-a", "RUNNING", None)).await.unwrap();
    assert!(r.recorded.is_empty() && r.started.is_empty(), "{r:?}");

    let r = h.handle(&ended("c1-a", "SUCCEEDED", None)).await.unwrap();
    assert_eq!(r.recorded, ["c1-a"]);
    assert_eq!(r.started, ["c1-b"]);
    let r = h.handle(&ended("c1-b", "SUCCEEDED", None)).await.unwrap();
    assert_eq!(r.started, ["c1-c"]);
    assert!(r.finished.is_empty());
    let r = h.handle(&ended("c1-c", "SUCCEEDED", None)).await.unwrap();
    assert_eq!(r.recorded, ["c1-c"]);
    assert_eq!(r.finished, [(run_id, RunStatus::Succeeded)]);

    assert_eq!(engine(&h).started(), ["c1-a", "c1-b", "c1-c"]);
    assert_eq!(lock_param(&h).as_deref(), Some("none"));
    assert_eq!(h.metadb.merge_lock().await.unwrap().run_id, None);
    let statuses = h.github.statuses();
    let lock: Vec<_> = statuses
        .iter()
        .filter(|s| s.context == merge_lock::CONTEXT)
        .collect();
    assert_eq!(lock.len(), 1);
    assert_eq!(lock[0].sha, "sha9");
    assert_eq!(lock[0].state, StatusState::Success);
    // Each unit: pending when started, success when recorded; then the run.
    let unit: Vec<_> = statuses
        .iter()
        .filter(|s| s.context == context::deploy_unit("dev/c1-b"))
        .map(|s| (s.sha.as_str(), s.state))
        .collect();
    assert_eq!(
        unit,
        [("c1", StatusState::Pending), ("c1", StatusState::Success)]
    );
    // Every unit status links the unit's Step Functions execution.
    for s in statuses
        .iter()
        .filter(|s| s.context.starts_with("live-ci: deploy "))
    {
        // The unit dev/<name> runs as the execution <name>.
        let name = s.context.rsplit('/').next().unwrap();
        assert_eq!(
            s.target_url,
            live_ci_core::status::target::execution(&arn(name)),
            "{s:?}"
        );
        assert!(s.target_url.is_some(), "{s:?}");
    }
    let overall = statuses
        .iter()
        .find(|s| s.context == context::DEPLOY)
        .unwrap();
    assert_eq!(overall.state, StatusState::Success);
    assert_eq!(overall.description, "3 of 3 units deployed");
    let run = h.metadb.run(run_id).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Succeeded);
    t.drop_db().await;
}

/// With run pages configured, every unit status links the read-only run page
/// through a run link that verifies with the run-link key, for this run, and
/// expires like one; a link signed with any other key is refused.
#[tokio::test]
async fn unit_statuses_link_the_run_page_signed_with_the_run_link_key() {
    use live_ci_core::approval::{RUN_LINK_TTL_SECS, RunLinkKey, RunPages};
    let t = TestDb::new().await;
    let secret = b"a-run-link-key-for-this-test-0123456789";
    let base = "https://pages.example/run";
    let h = handler_with(&t, |c| {
        c.run_pages = Some(RunPages {
            key: RunLinkKey::new(secret).unwrap(),
            base_url: base.into(),
            ttl_secs: RUN_LINK_TTL_SECS,
        })
    })
    .await;
    let run_id = chain(&h, "c1", 7).await;
    h.handle(&Input::Run(run_id)).await.unwrap();
    h.handle(&ended("c1-a", "SUCCEEDED", None)).await.unwrap();

    let key = RunLinkKey::new(secret).unwrap();
    let other = RunLinkKey::new(b"another-key-that-is-long-enough-0123456").unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let units: Vec<_> = h
        .github
        .statuses()
        .into_iter()
        .filter(|s| s.context.starts_with("live-ci: deploy "))
        .collect();
    // a pending and succeeded, b pending.
    assert_eq!(units.len(), 3, "{units:?}");
    for s in &units {
        let url = s.target_url.as_deref().unwrap_or_else(|| panic!("{s:?}"));
        let token = url
            .strip_prefix(&format!("{base}?r="))
            .unwrap_or_else(|| panic!("not a run page link: {url}"));
        let link = key.verify(token, now).unwrap();
        assert_eq!(link.run_id, run_id);
        assert!(
            link.expires_at > now && link.expires_at <= now + RUN_LINK_TTL_SECS + 5,
            "{link:?}"
        );
        assert!(other.verify(token, now).is_err(), "{url}");
    }
    t.drop_db().await;
}

/// A plan that changed nothing ends at "No Changes" (SUCCEEDED, `plan.skip_apply`
/// in the output, no apply): the unit succeeds, dependents start, and the
/// metadb and the unit's status say "no changes" rather than "deployed".
#[tokio::test]
async fn a_plan_without_changes_succeeds_as_no_changes() {
    let t = TestDb::new().await;
    let h = handler(&t).await;
    let run_id = chain(&h, "nc", 7).await;
    h.handle(&Input::Run(run_id)).await.unwrap();
    let Input::StatusChange(mut detail) = ended("nc-a", "SUCCEEDED", None) else {
        unreachable!()
    };
    detail.output = Some(
        r#"{"execution_id":"nc-a","plan":{"execution_id":"nc-a","to_add":0,"to_change":0,"to_destroy":0,"skip_apply":true,"plan_artifact":"s3://b/k","logs_url":""}}"#
            .into(),
    );
    let r = h.handle(&Input::StatusChange(detail)).await.unwrap();
    assert_eq!(r.recorded, ["nc-a"]);
    assert_eq!(r.started, ["nc-b"]);
    let a = h.metadb.execution("nc-a").await.unwrap().unwrap();
    assert_eq!(a.status, ExecutionStatus::Succeeded);
    assert_eq!(a.status_reason.as_deref(), Some("no changes"));
    // An applied unit keeps the plain success.
    h.handle(&ended("nc-b", "SUCCEEDED", None)).await.unwrap();
    let b = h.metadb.execution("nc-b").await.unwrap().unwrap();
    assert_eq!(b.status_reason, None);
    let statuses = h.github.statuses();
    let last = |unit: &str| {
        statuses
            .iter()
            .rfind(|s| s.context == context::deploy_unit(unit))
            .map(|s| (s.state, s.description.clone()))
            .unwrap()
    };
    assert_eq!(
        last("dev/nc-a"),
        (StatusState::Success, "no changes".into())
    );
    assert_eq!(last("dev/nc-b"), (StatusState::Success, "deployed".into()));
    t.drop_db().await;
}

#[tokio::test]
async fn a_failure_aborts_dependents_and_finishes_the_run() {
    let t = TestDb::new().await;
    let h = handler(&t).await;
    let run_id = chain(&h, "c2", 7).await;
    h.handle(&Input::Run(run_id)).await.unwrap();

    let r = h
        .handle(&ended("c2-a", "FAILED", Some("PlanFailed")))
        .await
        .unwrap();
    assert_eq!(r.recorded, ["c2-a"]);
    let mut aborted = r.aborted.clone();
    aborted.sort();
    assert_eq!(aborted, ["c2-b", "c2-c"]);
    assert!(r.started.is_empty());
    assert_eq!(r.finished, [(run_id, RunStatus::Failed)]);
    let a = h.metadb.execution("c2-a").await.unwrap().unwrap();
    assert_eq!(a.status, ExecutionStatus::Failed);
    let reason = a.status_reason.unwrap();
    assert!(reason.contains("plan failed: PlanFailed"), "{reason}");
    assert_eq!(status(&h, "c2-b").await, ExecutionStatus::Aborted);
    assert_eq!(lock_param(&h).as_deref(), Some("none"));
    assert_eq!(engine(&h).started(), ["c2-a"]);
    let statuses = h.github.statuses();
    let c = statuses
        .iter()
        .find(|s| s.context == context::deploy_unit("dev/c2-c"))
        .unwrap();
    assert_eq!(c.state, StatusState::Error);
    assert!(
        c.description.starts_with("aborted: ancestor failed"),
        "{c:?}"
    );
    let overall = statuses
        .iter()
        .find(|s| s.context == context::DEPLOY)
        .unwrap();
    assert_eq!(overall.state, StatusState::Failure);
    t.drop_db().await;
}

/// a → b and an independent c, in an account whose destroys of the same run
/// must not disturb the rollbacks' account counters: a and b create new provider
/// resources, c fails; the run rolls back b, then a, and only then finishes.
#[tokio::test]
async fn a_failed_run_rolls_back_new_provider_resources_dependents_first() {
    let t = TestDb::new().await;
    let h = handler(&t).await;
    let mut destroy = exec("rb-gone", "dev", &[]);
    destroy.action = live_ci_core::deploy::Action::Destroy;
    let new = run(
        "rb",
        4,
        vec![
            exec("rb-a", "dev", &[]),
            exec("rb-b", "dev", &["rb-a"]),
            exec("rb-c", "dev", &[]),
            destroy,
        ],
    );
    let run_id = h.metadb.create_run(&new).await.unwrap().run_id;
    let r = h.handle(&Input::Run(run_id)).await.unwrap();
    let mut started = r.started.clone();
    started.sort();
    assert_eq!(started, ["rb-a", "rb-c", "rb-gone"]);
    assert!(
        h.metadb
            .record_new_resources("rb-a", &["null_resource.a".into()])
            .await
            .unwrap()
    );
    h.handle(&ended("rb-gone", "SUCCEEDED", None))
        .await
        .unwrap();
    let r = h.handle(&ended("rb-a", "SUCCEEDED", None)).await.unwrap();
    assert_eq!(r.started, ["rb-b"]);
    let resources = vec!["null_resource.b[\"x\"]".to_string()];
    assert!(
        h.metadb
            .record_new_resources("rb-b", &resources)
            .await
            .unwrap()
    );
    let r = h.handle(&ended("rb-b", "SUCCEEDED", None)).await.unwrap();
    assert!(r.rollbacks.is_empty() && r.finished.is_empty(), "{r:?}");

    // The failure ends the original work: rollbacks are added and started,
    // the run keeps the merge lock.
    let r = h
        .handle(&ended("rb-c", "FAILED", Some("ApplyFailed")))
        .await
        .unwrap();
    let mut rollbacks = r.rollbacks.clone();
    rollbacks.sort();
    assert_eq!(rollbacks, ["rb-a-rb", "rb-b-rb"]);
    assert_eq!(r.started, ["rb-b-rb"], "dependents first");
    assert!(r.finished.is_empty());
    assert_eq!(h.metadb.merge_lock().await.unwrap().run_id, Some(run_id));
    let b = h.metadb.execution("rb-b-rb").await.unwrap().unwrap();
    assert!(b.is_rollback);
    assert_eq!(b.action, live_ci_core::deploy::Action::Destroy);
    assert_eq!(b.new_resources, resources);
    assert_eq!(
        b.plan_command,
        // The flags go into the invocation, right after `plan` (issue 12).
        "terragrunt plan -destroy -target='null_resource.b[\"x\"]' --terragrunt-working-dir dev/rb-b"
    );
    assert_eq!(b.wait_accounts, Vec::<String>::new());
    let (_, input) = engine(&h).starts.lock().unwrap().last().unwrap().clone();
    let input: SfnInput = serde_json::from_str(&input).unwrap();
    assert!(input.is_rollback);
    assert_eq!(input.new_resources, resources);

    // A repeated failure event plans nothing twice.
    let r = h
        .handle(&ended("rb-c", "FAILED", Some("ApplyFailed")))
        .await
        .unwrap();
    assert!(r.rollbacks.is_empty() && r.started.is_empty(), "{r:?}");

    let r = h
        .handle(&ended("rb-b-rb", "SUCCEEDED", None))
        .await
        .unwrap();
    assert_eq!(r.started, ["rb-a-rb"]);
    let r = h
        .handle(&ended("rb-a-rb", "SUCCEEDED", None))
        .await
        .unwrap();
    assert!(r.rollbacks.is_empty(), "a rollback is never rolled back");
    assert_eq!(r.finished, [(run_id, RunStatus::Failed)]);
    assert_eq!(lock_param(&h).as_deref(), Some("none"));
    let statuses = h.github.statuses();
    let rollback: Vec<_> = statuses
        .iter()
        .filter(|s| s.context == context::rollback_unit("dev/rb-a"))
        .map(|s| s.state)
        .collect();
    assert_eq!(
        rollback,
        [
            StatusState::Pending,
            StatusState::Pending,
            StatusState::Success
        ]
    );
    t.drop_db().await;
}

/// Without new resources a failed run finishes at once, and a run that never
/// failed is not rolled back even when it recorded new resources.
#[tokio::test]
async fn only_failed_runs_with_new_resources_roll_back() {
    let t = TestDb::new().await;
    let h = handler(&t).await;
    let run_id = chain(&h, "ok", 7).await;
    h.handle(&Input::Run(run_id)).await.unwrap();
    for unit in ["ok-a", "ok-b", "ok-c"] {
        assert!(
            h.metadb
                .record_new_resources(unit, &["null_resource.x".into()])
                .await
                .unwrap()
        );
        h.handle(&ended(unit, "SUCCEEDED", None)).await.unwrap();
    }
    let run = h.metadb.run(run_id).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Succeeded);
    let ids: Vec<_> = h
        .metadb
        .executions(run_id)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.is_rollback)
        .collect();
    assert!(ids.is_empty());
    t.drop_db().await;
}

#[tokio::test]
async fn a_duplicate_event_changes_nothing() {
    let t = TestDb::new().await;
    let h = handler(&t).await;
    let run_id = chain(&h, "c3", 7).await;
    h.handle(&Input::Run(run_id)).await.unwrap();
    h.handle(&ended("c3-a", "SUCCEEDED", None)).await.unwrap();
    let before = h.metadb.executions(run_id).await.unwrap();
    let posted = h.github.statuses().len();

    let r = h.handle(&ended("c3-a", "SUCCEEDED", None)).await.unwrap();
    assert!(r.recorded.is_empty() && r.started.is_empty(), "{r:?}");
    // A late failure event for a unit already recorded as succeeded is ignored too.
    let r = h
        .handle(&ended("c3-a", "FAILED", Some("ApplyFailed")))
        .await
        .unwrap();
    assert!(r.recorded.is_empty() && r.aborted.is_empty(), "{r:?}");
    assert_eq!(h.metadb.executions(run_id).await.unwrap(), before);
    assert_eq!(h.github.statuses().len(), posted);
    assert_eq!(engine(&h).started(), ["c3-a", "c3-b"]);
    // An execution that is not ours is ignored.
    let r = h.handle(&ended("other", "SUCCEEDED", None)).await.unwrap();
    assert!(r.recorded.is_empty());
    t.drop_db().await;
}

#[tokio::test]
async fn a_failed_start_releases_the_claim_and_a_retry_starts_it() {
    let t = TestDb::new().await;
    let h = handler(&t).await;
    let run_id = chain(&h, "c4", 7).await;
    engine(&h).failing.lock().unwrap().insert("c4-a".into());

    let r = h.handle(&Input::Run(run_id)).await.unwrap();
    assert_eq!(r.released, ["c4-a"]);
    assert!(r.started.is_empty() && r.finished.is_empty());
    let a = h.metadb.execution("c4-a").await.unwrap().unwrap();
    assert_eq!(a.status, ExecutionStatus::Waiting);
    assert_eq!(a.sfn_execution_arn, None);

    engine(&h).failing.lock().unwrap().clear();
    let r = h.handle(&Input::Run(run_id)).await.unwrap();
    assert_eq!(r.started, ["c4-a"]);
    assert_eq!(status(&h, "c4-a").await, ExecutionStatus::Running);
    t.drop_db().await;
}

/// A start that keeps failing is not retried forever: the attempt that reaches
/// `max_start_attempts` fails the unit with the error as its reason, aborts its
/// dependents and lets the run finish (and free the lock).
#[tokio::test]
async fn a_start_failing_max_times_fails_the_unit_with_the_error() {
    let t = TestDb::new().await;
    let h = handler_with(&t, |c| c.max_start_attempts = 3).await;
    let run_id = chain(&h, "cx", 7).await;
    engine(&h).failing.lock().unwrap().insert("cx-a".into());
    for attempt in 1..3 {
        let r = h.handle(&Input::Run(run_id)).await.unwrap();
        assert_eq!(r.released, ["cx-a"], "attempt {attempt}");
        assert!(r.start_failed.is_empty() && r.finished.is_empty());
        assert_eq!(status(&h, "cx-a").await, ExecutionStatus::Waiting);
    }
    let r = h.handle(&Input::Run(run_id)).await.unwrap();
    assert!(r.released.is_empty(), "{r:?}");
    assert_eq!(r.start_failed, ["cx-a"]);
    let mut aborted = r.aborted.clone();
    aborted.sort();
    assert_eq!(aborted, ["cx-b", "cx-c"]);
    assert_eq!(r.finished, [(run_id, RunStatus::Failed)]);
    let a = h.metadb.execution("cx-a").await.unwrap().unwrap();
    assert_eq!(a.status, ExecutionStatus::Failed);
    assert_eq!(
        a.status_reason.as_deref(),
        Some("start failed 3 times: throttled starting \"cx-a\"")
    );
    let statuses = h.github.statuses();
    let unit = statuses
        .iter()
        .find(|s| s.context == context::deploy_unit("dev/cx-a"))
        .unwrap();
    assert_eq!(unit.state, StatusState::Failure);
    assert!(
        unit.description.starts_with("start failed 3 times"),
        "{unit:?}"
    );
    assert_eq!(h.metadb.merge_lock().await.unwrap().run_id, None);
    assert_eq!(lock_param(&h).as_deref(), Some("none"));
    // Nothing is left to retry: the next event starts nothing.
    let r = h.handle(&Input::Run(run_id)).await.unwrap();
    assert!(r.released.is_empty() && r.started.is_empty(), "{r:?}");
    assert!(engine(&h).started().is_empty());
    t.drop_db().await;
}

/// The parameter the receiver reads can be left "locked" when its write failed
/// after the run finished (retries see the run finished and write nothing):
/// the sweep compares it with the metadb and rewrites it.
#[tokio::test]
async fn the_sweep_rewrites_a_lock_parameter_out_of_step_with_the_metadb() {
    let t = TestDb::new().await;
    let h = handler(&t).await;
    let run_id = chain(&h, "stuck", 7).await;
    h.params.put(LOCK, "7").await.unwrap();
    // In step while the run holds the lock: the sweep leaves it alone.
    let r = h.handle(&Input::Sweep).await.unwrap();
    assert_eq!(r.lock_repaired, None, "{r:?}");
    for unit in ["stuck-a", "stuck-b", "stuck-c"] {
        h.metadb.claim_ready(run_id, 10).await.unwrap();
        h.metadb
            .record_finished(unit, live_ci_core::deploy::Outcome::Succeeded, None)
            .await
            .unwrap();
    }
    // The run finished and freed the row, but the parameter write was lost.
    h.metadb.finish_run(run_id).await.unwrap();
    assert_eq!(h.metadb.merge_lock().await.unwrap().run_id, None);
    assert_eq!(lock_param(&h).as_deref(), Some("7"));

    let r = h.handle(&Input::Sweep).await.unwrap();
    assert!(r.finished.is_empty(), "{r:?}");
    assert_eq!(r.lock_repaired.as_deref(), Some("none"));
    assert_eq!(lock_param(&h).as_deref(), Some("none"));
    // The open pull request's "Merge Lock" status is freed with it.
    let statuses = h.github.statuses();
    let lock = statuses
        .iter()
        .rfind(|s| s.context == merge_lock::CONTEXT)
        .unwrap();
    assert_eq!(lock.state, StatusState::Success);
    // A missing parameter is rewritten too; then the sweep is quiet.
    h.params.remove(LOCK);
    let r = h.handle(&Input::Sweep).await.unwrap();
    assert_eq!(r.lock_repaired.as_deref(), Some("none"));
    let r = h.handle(&Input::Sweep).await.unwrap();
    assert_eq!(r.lock_repaired, None);
    t.drop_db().await;
}

#[tokio::test]
async fn finishing_hands_the_lock_to_the_queued_run_and_starts_it() {
    let t = TestDb::new().await;
    let h = handler(&t).await;
    let first = chain(&h, "c5", 7).await;
    let second = chain(&h, "c6", 8).await;
    assert_eq!(
        h.metadb.run(second).await.unwrap().unwrap().status,
        RunStatus::Queued
    );
    h.handle(&Input::Run(first)).await.unwrap();
    // The queued run starts nothing before it holds the lock.
    let r = h.handle(&Input::Run(second)).await.unwrap();
    assert!(r.started.is_empty());
    h.handle(&ended("c5-a", "SUCCEEDED", None)).await.unwrap();
    h.handle(&ended("c5-b", "SUCCEEDED", None)).await.unwrap();

    let r = h.handle(&ended("c5-c", "SUCCEEDED", None)).await.unwrap();
    assert_eq!(r.finished, [(first, RunStatus::Succeeded)]);
    assert_eq!(r.started, ["c6-a"]);
    assert_eq!(lock_param(&h).as_deref(), Some("8"));
    let statuses = h.github.statuses();
    let lock = statuses
        .iter()
        .rfind(|s| s.context == merge_lock::CONTEXT)
        .unwrap();
    assert_eq!(lock.state, StatusState::Pending);
    assert!(lock.description.contains("PR #8"), "{lock:?}");
    assert_eq!(h.metadb.merge_lock().await.unwrap().run_id, Some(second));
    t.drop_db().await;
}

/// Two merges queue behind a running deploy; the newer one starts and
/// supersedes the older, which never runs. When the newer run ends, the older
/// merge's commit gets the deploy status too, naming the run that deployed it
/// (before, it never got one).
#[tokio::test]
async fn a_superseded_merge_learns_how_the_run_that_covered_it_ended() {
    let t = TestDb::new().await;
    let h = handler(&t).await;
    let first = chain(&h, "c5", 7).await;
    let older = chain(&h, "c6", 8).await;
    let newer = chain(&h, "c7", 9).await;
    h.handle(&Input::Run(first)).await.unwrap();
    for unit in ["c5-a", "c5-b", "c5-c"] {
        h.handle(&ended(unit, "SUCCEEDED", None)).await.unwrap();
    }
    let covered = h.metadb.run(older).await.unwrap().unwrap();
    assert_eq!(
        (covered.status, covered.superseded_by),
        (RunStatus::Superseded, Some(newer))
    );
    let deploy_of = |sha: &str| -> Vec<(StatusState, String)> {
        h.github
            .statuses()
            .iter()
            .filter(|s| s.context == context::DEPLOY && s.sha == sha)
            .map(|s| (s.state, s.description.clone()))
            .collect()
    };
    // Nothing is said for c6 while the run that covers it is still going.
    assert!(deploy_of("c6").is_empty());
    for unit in ["c7-a", "c7-b"] {
        h.handle(&ended(unit, "SUCCEEDED", None)).await.unwrap();
    }
    let r = h.handle(&ended("c7-c", "SUCCEEDED", None)).await.unwrap();
    assert_eq!(r.finished, [(newer, RunStatus::Succeeded)]);
    assert_eq!(
        deploy_of("c6"),
        [(
            StatusState::Success,
            format!("deployed by run #{newer} (commit c7) with the newer trunk commits")
        )]
    );
    assert_eq!(
        deploy_of("c7"),
        [(StatusState::Success, "3 of 3 units deployed".to_string())]
    );
    t.drop_db().await;
}

#[tokio::test]
async fn the_sweep_records_missed_ends() {
    let t = TestDb::new().await;
    let h = handler(&t).await;
    let run_id = chain(&h, "c7", 7).await;
    h.handle(&Input::Run(run_id)).await.unwrap();
    // Nothing ended yet: the sweep changes nothing.
    let r = h.handle(&Input::Sweep).await.unwrap();
    assert!(r.recorded.is_empty() && r.started.is_empty(), "{r:?}");

    engine(&h)
        .ended
        .lock()
        .unwrap()
        .insert("c7-a".into(), ("SUCCEEDED".into(), None));
    let r = h.handle(&Input::Sweep).await.unwrap();
    assert_eq!(r.recorded, ["c7-a"]);
    assert_eq!(r.started, ["c7-b"]);
    t.drop_db().await;
}

#[tokio::test]
async fn the_sweep_starts_claims_whose_start_was_lost() {
    let t = TestDb::new().await;
    let h = handler_with(&t, |c| c.stale_claim_secs = 0).await;
    let run_id = chain(&h, "c8", 7).await;
    // A claim whose Lambda died before StartExecution: running, no ARN.
    let claimed = h.metadb.claim_ready(run_id, 10).await.unwrap();
    assert_eq!(claimed.len(), 1);
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;

    let r = h.handle(&Input::Sweep).await.unwrap();
    assert_eq!(r.started, ["c8-a"]);
    let a = h.metadb.execution("c8-a").await.unwrap().unwrap();
    assert_eq!(a.sfn_execution_arn.as_deref(), Some(arn("c8-a").as_str()));
    // Repaired: the next sweep finds nothing stale.
    let r = h.handle(&Input::Sweep).await.unwrap();
    assert!(r.started.is_empty() && r.released.is_empty(), "{r:?}");
    t.drop_db().await;
}

/// An invocation lost after the last execution was recorded leaves a run with
/// nothing open that still holds the lock: the sweep finishes it.
#[tokio::test]
async fn the_sweep_finishes_a_run_whose_finish_was_lost() {
    let t = TestDb::new().await;
    let h = handler(&t).await;
    let run_id = chain(&h, "lost", 7).await;
    for unit in ["lost-a", "lost-b", "lost-c"] {
        let claimed = h.metadb.claim_ready(run_id, 10).await.unwrap();
        assert_eq!(claimed[0].execution_id, unit);
        h.metadb
            .record_finished(unit, live_ci_core::deploy::Outcome::Succeeded, None)
            .await
            .unwrap();
    }
    assert_eq!(h.metadb.merge_lock().await.unwrap().run_id, Some(run_id));
    let r = h.handle(&Input::Sweep).await.unwrap();
    assert_eq!(r.finished, [(run_id, RunStatus::Succeeded)]);
    assert_eq!(h.metadb.merge_lock().await.unwrap().run_id, None);
    assert_eq!(lock_param(&h).as_deref(), Some("none"));
    t.drop_db().await;
}

/// `"Apply": false` in the commit status config turns the per-unit statuses
/// off; the run's own status stays. A config that cannot be read is a warning
/// and statuses stay on.
#[tokio::test]
async fn the_commit_status_config_turns_unit_statuses_off() {
    let t = TestDb::new().await;
    let h = handler_with(&t, |c| {
        c.commit_status_config_param = Some("/live-ci/statuses".into())
    })
    .await;
    h.params
        .put("/live-ci/statuses", r#"{"Apply": false}"#)
        .await
        .unwrap();
    let run_id = chain(&h, "quiet", 7).await;
    h.handle(&Input::Run(run_id)).await.unwrap();
    for unit in ["quiet-a", "quiet-b", "quiet-c"] {
        h.handle(&ended(unit, "SUCCEEDED", None)).await.unwrap();
    }
    let contexts: Vec<String> = h
        .github
        .statuses()
        .iter()
        .filter(|s| s.sha == "quiet")
        .map(|s| s.context.clone())
        .collect();
    assert_eq!(contexts, [context::DEPLOY]);

    let t2 = TestDb::new().await;
    let h = handler_with(&t2, |c| {
        c.commit_status_config_param = Some("/live-ci/missing".into())
    })
    .await;
    let run_id = chain(&h, "loud", 7).await;
    let r = h.handle(&Input::Run(run_id)).await.unwrap();
    assert!(
        r.warnings.iter().any(|w| w.contains("/live-ci/missing")),
        "{r:?}"
    );
    let posted = h.github.statuses().len();
    assert_eq!(posted, 1, "the started unit's status is posted anyway");
    t.drop_db().await;
    t2.drop_db().await;
}

/// What AWS sees when the handler fails: the failure's kind as its stable
/// name, with the adapter's own error still in the source chain. A metadb
/// that cannot be reached (nothing listens on port 1) is retryable; a
/// database that does not exist on the real server (SQLSTATE 3D000) fails the
/// same way again: permanent.
#[tokio::test]
async fn a_failed_invocation_reaches_aws_named_by_its_kind_with_its_cause() {
    use live_ci_core::port::{ErrorKind, PERMANENT_ERROR, RETRYABLE_ERROR};
    use live_ci_metadb::MetadbError;
    let unreachable = "postgresql://live_ci@127.0.0.1:1/live_ci".to_string();
    let missing = live_ci_metadb::with_database(&support::server_url(), "live_ci_no_such_database");
    for (url, kind, name, code) in [
        (unreachable, ErrorKind::Retryable, RETRYABLE_ERROR, None),
        (
            missing,
            ErrorKind::Permanent,
            PERMANENT_ERROR,
            Some("3D000"),
        ),
    ] {
        let h = Wired::new(
            HandlerConfig::new(LOCK, FilePattern::new(FilePattern::DEFAULT).unwrap()),
            Fakes::new(
                PgMetadb::connect(&url, 1).unwrap(),
                FakeEngine::default(),
                MemoryParams::default(),
                github(),
            ),
        );
        let err = h.handle(&Input::Run(1)).await.unwrap_err();
        assert_eq!(err.kind(), kind, "{err}");
        assert!(err.to_string().starts_with("metadb: postgres: "), "{err}");
        let mut source = std::error::Error::source(&err);
        let mut adapter = None;
        while let Some(e) = source {
            adapter = adapter.or(e.downcast_ref::<MetadbError>());
            source = e.source();
        }
        match adapter {
            Some(MetadbError::Postgres { code: found, .. }) => {
                assert_eq!(found.as_deref(), code, "{err}")
            }
            other => panic!("no metadb error in the chain of {err:?}: {other:?}"),
        }
        let diagnostic: lambda_runtime::Diagnostic = live_ci_boot::diagnostic(&err);
        assert_eq!(diagnostic.error_type, name);
        assert!(diagnostic.error_message.starts_with("metadb: "));
    }
}

/// GitHub that never answers a status post.
#[derive(Debug, Default)]
struct HangingGitHub;

impl GitHost for HangingGitHub {
    type Error = FakeError;

    async fn set_status(&self, _status: &CommitStatus) -> Result<(), FakeError> {
        std::future::pending().await
    }

    async fn pull_request_files(&self, _number: u64) -> Result<Vec<String>, FakeError> {
        Ok(Vec::new())
    }

    async fn open_pull_requests(&self, _base: &str) -> Result<Vec<PullRequest>, FakeError> {
        Ok(Vec::new())
    }

    async fn upsert_comment(&self, _n: u64, _m: &str, _b: &str) -> Result<(), FakeError> {
        Ok(())
    }

    async fn bot_comment(&self, _n: u64, _m: &str) -> Result<Option<String>, FakeError> {
        Ok(None)
    }
}

/// Statuses are posted after the invocation's real work: a GitHub that hangs
/// (or takes its usual 100–300 ms) never holds up the start of the next unit.
#[tokio::test]
async fn a_hanging_status_post_does_not_hold_up_the_next_start() {
    let t = TestDb::new().await;
    let h: Wired<PgMetadb, FakeEngine, MemoryParams, HangingGitHub> = Wired::new(
        HandlerConfig::new(LOCK, FilePattern::new(FilePattern::DEFAULT).unwrap()),
        Fakes::new(
            t.metadb(2).await,
            FakeEngine::default(),
            MemoryParams::default(),
            HangingGitHub,
        ),
    );
    let mut new = run(
        "h1",
        4,
        vec![exec("h1-a", "dev", &[]), exec("h1-b", "dev", &["h1-a"])],
    );
    new.pr_id = 3;
    let run_id = h.metadb.create_run(&new).await.unwrap().run_id;
    let patience = std::time::Duration::from_secs(2);

    let first = tokio::time::timeout(patience, h.handle(&Input::Run(run_id))).await;
    assert!(
        first.is_err(),
        "the status post hangs, so the invocation does"
    );
    let second = tokio::time::timeout(patience, h.handle(&ended("h1-a", "SUCCEEDED", None))).await;
    assert!(second.is_err());

    assert_eq!(h.engine.started(), ["h1-a", "h1-b"]);
    let a = h.metadb.execution("h1-a").await.unwrap().unwrap();
    assert_eq!(a.status, ExecutionStatus::Succeeded);
    t.drop_db().await;
}

/// Step Functions whose starts take a while, counting how many are in flight.
#[derive(Debug, Default)]
struct SlowEngine {
    in_flight: std::sync::atomic::AtomicUsize,
    most_in_flight: std::sync::atomic::AtomicUsize,
    started: Mutex<Vec<String>>,
}

impl WorkflowEngine for SlowEngine {
    type Error = FakeError;

    async fn start_execution(&self, name: &str, _input: &str) -> Result<String, FakeError> {
        use std::sync::atomic::Ordering::SeqCst;
        let now = self.in_flight.fetch_add(1, SeqCst) + 1;
        self.most_in_flight.fetch_max(now, SeqCst);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        self.in_flight.fetch_sub(1, SeqCst);
        self.started.lock().unwrap().push(name.to_string());
        Ok(arn(name))
    }

    async fn stop_execution(&self, arn: &str, _error: &str, _cause: &str) -> Result<(), FakeError> {
        Err(FakeError(format!("not stopped: {arn:?}")))
    }

    async fn describe_execution(&self, arn: &str) -> Result<ExecutionDescription, FakeError> {
        Err(FakeError(format!("not described: {arn:?}")))
    }
}

/// The units that become ready together start together: the last of them
/// does not wait for the others' StartExecution round trips.
#[tokio::test]
async fn units_ready_together_are_started_concurrently() {
    let t = TestDb::new().await;
    let h: Wired<PgMetadb, SlowEngine, MemoryParams, RecordingGitHost> = Wired::new(
        HandlerConfig::new(LOCK, FilePattern::new(FilePattern::DEFAULT).unwrap()),
        Fakes::new(
            t.metadb(2).await,
            SlowEngine::default(),
            MemoryParams::default(),
            github(),
        ),
    );
    let units = ["w1-a", "w1-b", "w1-c", "w1-d"];
    let new = run("w1", 4, units.iter().map(|u| exec(u, "dev", &[])).collect());
    let run_id = h.metadb.create_run(&new).await.unwrap().run_id;

    let r = h.handle(&Input::Run(run_id)).await.unwrap();
    let mut started = r.started.clone();
    started.sort();
    assert_eq!(started, units);
    let most = h
        .engine
        .most_in_flight
        .load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        most,
        units.len(),
        "every ready unit's start was in flight at once"
    );
    // Each started unit got its pending status, posted after the starts.
    let pending = h
        .github
        .statuses()
        .iter()
        .filter(|s| s.state == StatusState::Pending && s.sha == "w1")
        .count();
    assert_eq!(pending, units.len());
    t.drop_db().await;
}
