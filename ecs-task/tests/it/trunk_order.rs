//! create-deploy-stack deploys the trunk: against real git histories and a
//! real PostgreSQL metadb, merges whose tasks finish in reverse order deploy in
//! trunk order (the older one superseded, its changes in the newer run), a
//! rebase-merge deploys every commit's units, and failed units stay pending.
#![allow(clippy::unwrap_used)]

use crate::support;

use live_ci_core::deploy::{ExecutionStatus, Outcome, RunStatus};
use live_ci_core::port::{ExecutionStore, RunStore};
use live_ci_core::status::{StatusState, Statuses, context};
use live_ci_task::create_deploy_stack::{DeployReport, Wiring, create_deploy_stack};
use live_ci_task::{CreateDeployStackConfig, checkout::Repo};
use support::fakes::{MemArtifacts, MemoryParams, RecordingGitHost, RecordingInvoker};
use support::pg::TestDb;
use support::repo::GitRepo;

const DEV_ONLY: &str = r#"[{"name": "dev", "path": "dev", "voters": ["dev@example.com"],
  "min_approval_count": 1, "min_rejection_count": 1,
  "plan_role_arn": "arn:aws:iam::222222222222:role/plan", "apply_role_arn": "arn:aws:iam::222222222222:role/apply"}]"#;

fn config(url: &str, commit: &str, pr: &str, extra: &[(&str, &str)]) -> CreateDeployStackConfig {
    let mut pairs = vec![
        ("REPO_CLONE_URL", url),
        ("LIVE_CI_PR_NUMBER", pr),
        ("LIVE_CI_COMMIT", commit),
        ("MERGE_LOCK_SSM_KEY", "/live-ci/merge-lock"),
        ("TRIGGER_SF_FUNCTION_NAME", "live-ci-trigger-sf"),
        ("ACCOUNT_PARENT_CFG", DEV_ONLY),
        ("MAX_PARALLEL", "3"),
    ];
    pairs.extend_from_slice(extra);
    support::config(&pairs)
}

struct World {
    repo: GitRepo,
    params: MemoryParams,
    github: RecordingGitHost,
    invoker: RecordingInvoker,
    sts: live_ci_aws::StsRoleAssumer,
    /// Where create-deploy-stack stores each run's packed checkout.
    checkouts: MemArtifacts,
}

impl World {
    /// A trunk with three units `dev/a`, `dev/b`, `dev/c`.
    fn new() -> Self {
        Self::with_units(&[("dev/a", &[]), ("dev/b", &[]), ("dev/c", &[])])
    }

    /// A trunk with `units` (path, dependencies relative to it).
    fn with_units(units: &[(&str, &[&str])]) -> Self {
        let repo = GitRepo::new();
        for (i, (path, deps)) in units.iter().enumerate() {
            repo.unit(path, &(i + 1).to_string(), deps);
        }
        repo.commit("base");
        World {
            repo,
            params: MemoryParams::default(),
            github: RecordingGitHost::default(),
            invoker: RecordingInvoker::default(),
            sts: support::sts(),
            checkouts: MemArtifacts::default(),
        }
    }

    /// Merges (`--no-ff`) a branch whose one commit changes `unit`'s input.
    fn merge(&self, branch: &str, unit: &str, input: &str) -> String {
        self.repo.git(&["checkout", "-q", "-b", branch]);
        self.repo.unit(unit, input, &[]);
        self.repo.commit(&format!("change {unit}"));
        self.repo.git(&["checkout", "-q", "main"]);
        self.repo.git(&[
            "merge",
            "-q",
            "--no-ff",
            "-m",
            &format!("merge {branch}"),
            branch,
        ]);
        self.repo.git(&["rev-parse", "HEAD"])
    }

    async fn deploy<M: RunStore + ExecutionStore>(
        &self,
        metadb: &M,
        commit: &str,
        pr: &str,
        extra: &[(&str, &str)],
    ) -> DeployReport {
        let url = self.repo.url();
        let ports = Wiring {
            metadb,
            params: &self.params,
            github: &self.github,
            invoker: &self.invoker,
            roles: &self.sts,
            artifacts: &self.checkouts,
        };
        create_deploy_stack(
            &config(&url, commit, pr, extra),
            &Repo {
                clone_url: url.clone(),
                token: None,
            },
            None,
            &ports,
        )
        .await
        .unwrap()
    }
}

async fn units_of<M: RunStore + ExecutionStore>(metadb: &M, run_id: i64) -> Vec<String> {
    let mut paths: Vec<String> = metadb
        .executions(run_id)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.cfg_path.to_string())
        .collect();
    paths.sort();
    paths
}

/// Runs every unit of a run to `outcome` (units named in `failing` fail) and
/// finishes it, as trigger_sf would.
async fn complete<M: RunStore + ExecutionStore>(metadb: &M, run_id: i64, failing: &[&str]) {
    loop {
        let claimed = metadb.claim_ready(run_id, 10).await.unwrap();
        if claimed.is_empty() {
            break;
        }
        for e in claimed {
            let outcome = if failing.contains(&e.cfg_path.as_str()) {
                Outcome::Failed
            } else {
                Outcome::Succeeded
            };
            metadb
                .record_finished(&e.execution_id, outcome, None)
                .await
                .unwrap();
        }
    }
    assert!(metadb.finish_run(run_id).await.unwrap().finished.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_merges_finishing_in_reverse_order_deploy_in_trunk_order() {
    let w = World::new();
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let m0 = w.merge("pr-1", "dev/c", "30");
    let first = w.deploy(&metadb, &m0, "1", &[]).await;
    complete(&metadb, first.run_id.unwrap(), &[]).await;

    // Two merges land; the second one's task finishes first.
    let m1 = w.merge("pr-2", "dev/a", "10");
    let m2 = w.merge("pr-3", "dev/b", "20");
    let later = w.deploy(&metadb, &m2, "3", &[]).await;
    let later_run = later.run_id.unwrap();
    assert!(later.started);
    // Its range starts at the last deployed trunk commit: both merges' units.
    assert_eq!(units_of(&metadb, later_run).await, ["dev/a", "dev/b"]);
    let run = metadb.run(later_run).await.unwrap().unwrap();
    assert_eq!(
        (run.base_sha.as_str(), run.head_sha.as_str()),
        (m0.as_str(), m2.as_str())
    );
    assert!(
        run.trunk_seq
            > metadb
                .run(first.run_id.unwrap())
                .await
                .unwrap()
                .unwrap()
                .trunk_seq
    );

    // The earlier merge arrives last: recorded as superseded, never applied.
    let earlier = w.deploy(&metadb, &m1, "2", &[]).await;
    assert_eq!(earlier.superseded_by, Some(later_run));
    assert!(earlier.execution_ids.is_empty() && !earlier.started);
    let record = metadb.run_by_commit(&m1).await.unwrap().unwrap();
    assert_eq!(record.status, RunStatus::Superseded);
    assert_eq!(record.superseded_by, Some(later_run));
    assert_eq!(record.pr_id, 2);
    assert!(metadb.executions(record.run_id).await.unwrap().is_empty());
    // trigger_sf hears only of the runs that deploy; PR 2 still gets a status.
    let invoked: Vec<String> = w
        .invoker
        .calls
        .lock()
        .unwrap()
        .iter()
        .map(|c| c.1.clone())
        .collect();
    assert_eq!(
        invoked,
        [
            format!("{{\"run_id\":{}}}", first.run_id.unwrap()),
            format!("{{\"run_id\":{later_run}}}")
        ]
    );
    let status = w
        .github
        .statuses()
        .into_iter()
        .find(|s| s.sha == m1 && s.context == context::CREATE_DEPLOY_STACK)
        .unwrap();
    assert_eq!(status.state, StatusState::Success);
    assert!(
        status
            .description
            .contains(&format!("superseded: run #{later_run}")),
        "{}",
        status.description
    );
    // The run that covers it is still going: trigger_sf says how it ended.
    assert!(
        !w.github
            .statuses()
            .iter()
            .any(|s| s.sha == m1 && s.context == context::DEPLOY)
    );
    // A redelivery of either changes nothing.
    let again = w.deploy(&metadb, &m1, "2", &[]).await;
    assert_eq!(again.superseded_by, Some(later_run));
    let again = w.deploy(&metadb, &m2, "3", &[]).await;
    assert_eq!((again.run_id, again.created), (Some(later_run), false));
    assert_eq!(again.execution_ids, later.execution_ids);
    db.drop_db().await;
}

/// The older merge's task runs only after the newer merge's run has ended:
/// trigger_sf gave that run's superseded merges their deploy status before
/// this one existed, so create-deploy-stack gives it, naming the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_superseded_by_an_ended_run_gets_its_deploy_status_at_once() {
    let w = World::new();
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let m1 = w.merge("pr-1", "dev/a", "10");
    let m2 = w.merge("pr-2", "dev/b", "20");
    let later = w.deploy(&metadb, &m2, "2", &[]).await;
    let later_run = later.run_id.unwrap();
    complete(&metadb, later_run, &["dev/b"]).await;
    let earlier = w.deploy(&metadb, &m1, "1", &[]).await;
    assert_eq!(earlier.superseded_by, Some(later_run));
    let deploy: Vec<(StatusState, String)> = w
        .github
        .statuses()
        .into_iter()
        .filter(|s| s.sha == m1 && s.context == context::DEPLOY)
        .map(|s| (s.state, s.description))
        .collect();
    assert_eq!(
        deploy,
        [(
            StatusState::Failure,
            format!(
                "superseded by run #{later_run} (commit {}), which failed",
                &m2[..7]
            )
        )]
    );
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merges_queued_behind_a_running_deploy_are_coalesced_into_the_newest() {
    let w = World::new();
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let m0 = w.merge("pr-1", "dev/c", "30");
    let running = w.deploy(&metadb, &m0, "1", &[]).await;
    let m1 = w.merge("pr-2", "dev/a", "10");
    let m2 = w.merge("pr-3", "dev/b", "20");
    let q1 = w.deploy(&metadb, &m1, "2", &[]).await;
    let q2 = w.deploy(&metadb, &m2, "3", &[]).await;
    assert!(!q1.started && !q2.started);
    // Each queued run deploys from the running run's commit.
    assert_eq!(units_of(&metadb, q1.run_id.unwrap()).await, ["dev/a"]);
    assert_eq!(
        units_of(&metadb, q2.run_id.unwrap()).await,
        ["dev/a", "dev/b"]
    );
    complete(&metadb, running.run_id.unwrap(), &[]).await;
    // The newest starts; the older queued run is superseded by it.
    let r2 = metadb.run(q2.run_id.unwrap()).await.unwrap().unwrap();
    let r1 = metadb.run(q1.run_id.unwrap()).await.unwrap().unwrap();
    assert_eq!(r2.status, RunStatus::Running);
    assert_eq!(
        (r1.status, r1.superseded_by),
        (RunStatus::Superseded, Some(r2.run_id))
    );
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebase_merge_of_three_commits_deploys_all_three_units() {
    let w = World::new();
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let base = w.repo.git(&["rev-parse", "HEAD"]);
    // "Rebase and merge": three commits land on the trunk one after the other,
    // each touching one unit; the webhook names the last one. Nothing has been
    // deployed yet, so the range starts at the pull request's base.
    w.repo.unit("dev/a", "11", &[]);
    w.repo.commit("a");
    w.repo.unit("dev/b", "22", &[]);
    w.repo.commit("b");
    w.repo.unit("dev/c", "33", &[]);
    let last = w.repo.commit("c");
    let report = w
        .deploy(&metadb, &last, "5", &[("LIVE_CI_BASE_SHA", base.as_str())])
        .await;
    let run_id = report.run_id.unwrap();
    assert_eq!(units_of(&metadb, run_id).await, ["dev/a", "dev/b", "dev/c"]);
    complete(&metadb, run_id, &[]).await;

    // The next rebase-merge deploys from the last deployed trunk commit, even
    // without the pull request's base.
    w.repo.unit("dev/a", "111", &[]);
    w.repo.commit("a again");
    w.repo.unit("dev/c", "333", &[]);
    let next = w.repo.commit("c again");
    let report = w.deploy(&metadb, &next, "6", &[]).await;
    assert_eq!(
        units_of(&metadb, report.run_id.unwrap()).await,
        ["dev/a", "dev/c"]
    );
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn units_that_failed_join_the_next_run() {
    let w = World::new();
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let m0 = w.merge("pr-1", "dev/c", "30");
    let first = w.deploy(&metadb, &m0, "1", &[]).await;
    complete(&metadb, first.run_id.unwrap(), &["dev/c"]).await;
    let m1 = w.merge("pr-2", "dev/a", "10");
    let next = w.deploy(&metadb, &m1, "2", &[]).await;
    let run_id = next.run_id.unwrap();
    assert_eq!(units_of(&metadb, run_id).await, ["dev/a", "dev/c"]);
    complete(&metadb, run_id, &[]).await;
    let c = metadb
        .executions(run_id)
        .await
        .unwrap()
        .into_iter()
        .find(|e| e.cfg_path.as_str() == "dev/c")
        .unwrap();
    assert_eq!(c.status, ExecutionStatus::Succeeded);
    // Applied: no longer pending, the next merge leaves it alone.
    let m2 = w.merge("pr-3", "dev/b", "20");
    let last = w.deploy(&metadb, &m2, "3", &[]).await;
    assert_eq!(units_of(&metadb, last.run_id.unwrap()).await, ["dev/b"]);
    db.drop_db().await;
}

impl World {
    /// Merges (`--no-ff`) a branch that deletes `unit`.
    fn remove(&self, branch: &str, unit: &str) -> String {
        self.repo.git(&["checkout", "-q", "-b", branch]);
        self.repo.git(&["rm", "-rq", unit]);
        self.repo.commit(&format!("remove {unit}"));
        self.repo.git(&["checkout", "-q", "main"]);
        self.repo.git(&[
            "merge",
            "-q",
            "--no-ff",
            "-m",
            &format!("merge {branch}"),
            branch,
        ]);
        self.repo.git(&["rev-parse", "HEAD"])
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_unit_is_not_destroyed_without_allow_destroy_and_its_status_says_so() {
    let w = World::new();
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let m0 = w.merge("pr-1", "dev/c", "30");
    let first = w.deploy(&metadb, &m0, "1", &[]).await;
    complete(&metadb, first.run_id.unwrap(), &[]).await;
    let removal = w.remove("pr-2", "dev/b");
    let report = w.deploy(&metadb, &removal, "2", &[]).await;
    assert_eq!(report.run_id, None, "nothing to run");
    assert_eq!(
        report
            .not_destroyed
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>(),
        ["dev/b"]
    );
    let status = w
        .github
        .statuses()
        .into_iter()
        .find(|s| s.sha == removal && s.context == context::DESTROY)
        .unwrap();
    assert_eq!(
        status.description,
        "not destroyed (allow_destroy is off): dev/b"
    );
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_allow_destroy_a_removed_unit_is_destroyed_from_the_range_start() {
    use live_ci_core::deploy::Action;
    use live_ci_task::terra_run::{TerraRunPorts, terra_run};
    use serde_json::Value;
    use support::fakes::{RecordingTokens, Sent};
    use support::repo::TfTemplates;

    let w = World::new();
    let tf = TfTemplates::new("");
    // dev/b is deployed: its state holds its resource.
    let apply_now = tf.plan.replace(
        "terraform plan -input=false -no-color -out={plan_file}",
        "terraform apply -input=false -no-color -auto-approve",
    );
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(&apply_now)
        .env("LIVE_CI_CFG_PATH", "dev/b")
        .current_dir(w.repo.path().join("dev/b"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    w.repo.git(&["clean", "-qfdx"]);
    let state = || std::fs::read_to_string(tf.state_file("dev/b")).unwrap();
    assert!(state().contains("terraform_data"));

    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let commands = [
        ("PLAN_COMMAND", tf.plan.as_str()),
        ("APPLY_COMMAND", tf.apply.as_str()),
    ];
    let m0 = w.merge("pr-1", "dev/c", "30");
    let first = w.deploy(&metadb, &m0, "1", &commands).await;
    complete(&metadb, first.run_id.unwrap(), &[]).await;
    let removal = w.remove("pr-2", "dev/b");
    let mut extra = commands.to_vec();
    extra.push(("ALLOW_DESTROY", "true"));
    let report = w.deploy(&metadb, &removal, "2", &extra).await;
    assert!(report.not_destroyed.is_empty());
    let run_id = report.run_id.unwrap();
    let run = metadb.run(run_id).await.unwrap().unwrap();
    assert_eq!(
        run.base_sha, m0,
        "the range starts where dev/b still exists"
    );
    let claimed = metadb.claim_ready(run_id, 10).await.unwrap();
    assert_eq!(claimed.len(), 1);
    let e = &claimed[0];
    assert_eq!((e.cfg_path.as_str(), e.action), ("dev/b", Action::Destroy));
    assert!(e.plan_command.ends_with(" -destroy"), "{}", e.plan_command);

    // terra-run plans and applies the destroy from the range start's checkout
    // (dev/b does not exist at the merge commit).
    let artifacts = MemArtifacts::default();
    let tokens = RecordingTokens::default();
    let ports = TerraRunPorts {
        metadb: &metadb,
        artifacts: &artifacts,
        tokens: &tokens,
        roles: &w.sts,
        statuses: Statuses::new(&w.github, Default::default()),
    };
    let repo = Repo {
        clone_url: w.repo.url(),
        token: None,
    };
    let task = |phase: &'static str, artifact: Option<String>| {
        let mut pairs = vec![
            ("LIVE_CI_PHASE".to_string(), phase.to_string()),
            ("LIVE_CI_TASK_TOKEN".into(), "token-d".into()),
            ("LIVE_CI_EXECUTION_ID".into(), e.execution_id.clone()),
            ("LIVE_CI_CFG_PATH".into(), "dev/b".into()),
            ("HEARTBEAT_SECONDS".into(), "30".into()),
            ("REPO_CLONE_URL".into(), w.repo.url()),
        ];
        if let Some(a) = artifact {
            pairs.push(("LIVE_CI_PLAN_ARTIFACT".into(), a));
        }
        let pairs: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        support::config(&pairs)
    };
    terra_run(&task("plan", None), &repo, None, &ports)
        .await
        .unwrap();
    let sent = tokens.take();
    let Some(Sent::Success { output, .. }) = sent.first() else {
        panic!("the destroy plan failed: {sent:?}")
    };
    let plan: Value = serde_json::from_str(output).unwrap();
    assert_eq!(plan["to_destroy"].as_u64(), Some(1), "{plan}");
    let artifact = plan["plan_artifact"].as_str().unwrap().to_string();
    support::approve(&db.url, &metadb, &e.execution_id).await;
    terra_run(&task("apply", Some(artifact)), &repo, None, &ports)
        .await
        .unwrap();
    let sent = tokens.take();
    assert!(
        matches!(sent.first(), Some(Sent::Success { .. })),
        "{sent:?}"
    );
    assert!(!state().contains("terraform_data"), "{}", state());
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removed_units_are_destroyed_dependents_first_after_kept_units_stop_depending() {
    use live_ci_core::deploy::Action;
    // At base dev/b and dev/c depend on dev/a.
    let w = World::with_units(&[
        ("dev/a", &[]),
        ("dev/b", &["../a"]),
        ("dev/c", &["../a"]),
        ("dev/x", &[]),
    ]);
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let destroy = [("ALLOW_DESTROY", "true")];
    let m0 = w.merge("pr-1", "dev/x", "10");
    let first = w.deploy(&metadb, &m0, "1", &destroy).await;
    complete(&metadb, first.run_id.unwrap(), &[]).await;

    // One pull request removes dev/a and dev/b, and points dev/c at dev/x.
    w.repo.git(&["checkout", "-q", "-b", "pr-2"]);
    w.repo.git(&["rm", "-rq", "dev/a", "dev/b"]);
    w.repo.unit("dev/c", "3", &["../x"]);
    w.repo.commit("retire dev/a and dev/b");
    w.repo.git(&["checkout", "-q", "main"]);
    w.repo
        .git(&["merge", "-q", "--no-ff", "-m", "merge pr-2", "pr-2"]);
    let removal = w.repo.git(&["rev-parse", "HEAD"]);
    let report = w.deploy(&metadb, &removal, "2", &destroy).await;
    let run_id = report.run_id.unwrap();
    let stored = metadb.executions(run_id).await.unwrap();
    let by_path = |path: &str| stored.iter().find(|e| e.cfg_path.as_str() == path).unwrap();
    let actions: Vec<(&str, Action)> = stored
        .iter()
        .map(|e| (e.cfg_path.as_str(), e.action))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(
        actions,
        [
            ("dev/a", Action::Destroy),
            ("dev/b", Action::Destroy),
            ("dev/c", Action::Apply)
        ]
    );
    // The stored edges: dev/a's destroy waits for both units that depended on it.
    let mut waits = by_path("dev/a").wait_for.clone();
    waits.sort();
    let mut expected = vec![
        by_path("dev/b").execution_id.clone(),
        by_path("dev/c").execution_id.clone(),
    ];
    expected.sort();
    assert_eq!(waits, expected);

    // The claim order: the dependent's destroy and the kept unit's apply are
    // ready; dev/a's destroy is not.
    let claimed = |list: &[live_ci_core::deploy::ExecutionRecord]| -> Vec<String> {
        let mut v: Vec<String> = list.iter().map(|e| e.cfg_path.to_string()).collect();
        v.sort();
        v
    };
    let ready = metadb.claim_ready(run_id, 10).await.unwrap();
    assert_eq!(claimed(&ready), ["dev/b", "dev/c"]);
    let id_of = |path: &str| by_path(path).execution_id.clone();
    metadb
        .record_finished(&id_of("dev/b"), Outcome::Succeeded, None)
        .await
        .unwrap();
    // dev/b is destroyed, but dev/c's apply (which drops its reference to
    // dev/a) has not finished: dev/a still waits.
    assert!(metadb.claim_ready(run_id, 10).await.unwrap().is_empty());
    metadb
        .record_finished(&id_of("dev/c"), Outcome::Succeeded, None)
        .await
        .unwrap();
    let ready = metadb.claim_ready(run_id, 10).await.unwrap();
    assert_eq!(claimed(&ready), ["dev/a"]);
    assert_eq!(ready[0].action, Action::Destroy);
    db.drop_db().await;
}
