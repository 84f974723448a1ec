//! create-deploy-stack deploys the trunk: against real git histories and a
//! real PostgreSQL metadb, merges whose tasks finish in reverse order deploy in
//! trunk order (the older one superseded, its changes in the newer run), a
//! rebase-merge deploys every commit's units, and failed units stay pending.
#![allow(clippy::unwrap_used)]

mod support;

use live_ci_core::deploy::{ExecutionStatus, Outcome, RunStatus};
use live_ci_core::port::Metadb;
use live_ci_core::status::{StatusState, context};
use live_ci_task::create_deploy_stack::{DeployPorts, DeployReport, create_deploy_stack};
use live_ci_task::{Config, checkout::Repo};
use support::fakes::{MemParams, RecordingGitHost, RecordingInvoker};
use support::pg::TestDb;
use support::repo::GitRepo;

const DEV_ONLY: &str = r#"[{"name": "dev", "path": "dev", "voters": ["dev@example.com"],
  "min_approval_count": 1, "min_rejection_count": 1,
  "plan_role_arn": "arn:aws:iam::2:role/plan", "apply_role_arn": "arn:aws:iam::2:role/apply"}]"#;

fn config(url: &str, commit: &str, pr: &str, extra: &[(&str, &str)]) -> Config {
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
    params: MemParams,
    github: RecordingGitHost,
    invoker: RecordingInvoker,
    sts: live_ci_aws::StsRoleAssumer,
}

impl World {
    /// A trunk with three units `dev/a`, `dev/b`, `dev/c`.
    fn new() -> Self {
        let repo = GitRepo::new();
        repo.unit("dev/a", "1", &[])
            .unit("dev/b", "2", &[])
            .unit("dev/c", "3", &[]);
        repo.commit("base");
        World {
            repo,
            params: MemParams::default(),
            github: RecordingGitHost::default(),
            invoker: RecordingInvoker::default(),
            sts: support::sts(),
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

    async fn deploy<M: Metadb>(
        &self,
        metadb: &M,
        commit: &str,
        pr: &str,
        extra: &[(&str, &str)],
    ) -> DeployReport {
        let url = self.repo.url();
        let ports = DeployPorts {
            metadb,
            params: &self.params,
            github: Some(&self.github),
            invoker: &self.invoker,
            roles: &self.sts,
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

async fn units_of<M: Metadb>(metadb: &M, run_id: i64) -> Vec<String> {
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
async fn complete<M: Metadb>(metadb: &M, run_id: i64, failing: &[&str]) {
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
    // A redelivery of either changes nothing.
    let again = w.deploy(&metadb, &m1, "2", &[]).await;
    assert_eq!(again.superseded_by, Some(later_run));
    let again = w.deploy(&metadb, &m2, "3", &[]).await;
    assert_eq!((again.run_id, again.created), (Some(later_run), false));
    assert_eq!(again.execution_ids, later.execution_ids);
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
