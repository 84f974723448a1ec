//! create-deploy-stack against the sample live repository (built as a real git
//! history by `examples/live-repo/build.sh`), a real PostgreSQL metadb, and
//! recording fakes for the parameter store, GitHub and the Lambda invoke.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::process::Command;

use live_ci_aws::StsRoleAssumer;
use live_ci_core::deploy::{Outcome, RunStatus};
use live_ci_core::port::{ExecutionStore, RunStore, SweepStore};
use live_ci_core::status::{StatusState, context};
use live_ci_task::create_deploy_stack::{Wiring, create_deploy_stack};
use live_ci_task::{CreateDeployStackConfig, FromLookup, checkout::Repo};
use support::fakes::{MemArtifacts, MemoryParams, RecordingGitHost, RecordingInvoker};
use support::pg::TestDb;
use support::repo::{GitRepo, TfTemplates};

const LOCK: &str = "/live-ci/merge-lock";

fn sample_repo() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("live");
    let script = live_ci_testkit::repo_root().join("examples/live-repo/build.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg(&dest)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let merge = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (dir, merge)
}

fn accounts() -> String {
    std::fs::read_to_string(live_ci_testkit::repo_root().join("examples/live-repo/accounts.json"))
        .unwrap()
}

fn config(
    url: &str,
    commit: &str,
    pr: &str,
    accounts: &str,
    extra: &[(&str, &str)],
) -> CreateDeployStackConfig {
    let mut pairs = vec![
        ("REPO_CLONE_URL", url),
        ("LIVE_CI_PR_NUMBER", pr),
        ("LIVE_CI_COMMIT", commit),
        ("LIVE_CI_BASE_REF", "main"),
        ("LIVE_CI_HEAD_REF", "feature/bigger-vpc"),
        ("MERGE_LOCK_SSM_KEY", LOCK),
        ("TRIGGER_SF_FUNCTION_NAME", "live-ci-trigger-sf"),
        ("ACCOUNT_PARENT_CFG", accounts),
        ("MAX_PARALLEL", "3"),
        (
            "PLAN_COMMAND",
            "terragrunt plan -input=false -out={plan_file}",
        ),
    ];
    pairs.extend_from_slice(extra);
    support::config(&pairs)
}

struct Fakes {
    params: MemoryParams,
    github: RecordingGitHost,
    invoker: RecordingInvoker,
    sts: StsRoleAssumer,
    checkouts: MemArtifacts,
}

impl Fakes {
    fn new() -> Self {
        Fakes {
            params: MemoryParams::default(),
            github: RecordingGitHost::default(),
            invoker: RecordingInvoker::default(),
            sts: support::sts(),
            checkouts: MemArtifacts::default(),
        }
    }

    fn ports<'a, M>(
        &'a self,
        metadb: &'a M,
    ) -> Wiring<'a, M, MemoryParams, RecordingGitHost, RecordingInvoker, StsRoleAssumer, MemArtifacts>
    {
        Wiring {
            metadb,
            params: &self.params,
            github: &self.github,
            invoker: &self.invoker,
            roles: &self.sts,
            artifacts: &self.checkouts,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_becomes_a_run_that_holds_the_lock_and_is_handed_to_trigger_sf() {
    let (dir, merge) = sample_repo();
    let url = dir.path().join("live").display().to_string();
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let fakes = Fakes::new();
    let repo = Repo {
        clone_url: url.clone(),
        token: None,
    };
    let config = config(&url, &merge, "42", &accounts(), &[]);
    let report = create_deploy_stack(
        &config,
        &repo,
        Some("https://logs/cds"),
        &fakes.ports(&metadb),
    )
    .await
    .unwrap();
    let run_id = report.run_id.unwrap();
    assert!(report.created && report.started);

    // The run and every execution are in the metadb, started, holding the lock.
    let run = metadb.run(run_id).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Running);
    assert_eq!(
        (run.pr_id, run.commit_id.as_str(), run.max_parallel),
        (42, merge.as_str(), 3)
    );
    let lock = metadb.merge_lock().await.unwrap();
    assert_eq!(lock.run_id, Some(run_id));
    let executions = metadb.executions(run_id).await.unwrap();
    let paths: Vec<&str> = executions.iter().map(|e| e.cfg_path.as_str()).collect();
    assert_eq!(executions.len(), report.execution_ids.len());
    // The widened VPC, its dependents, and the new worker; the removed unit is
    // not destroyed without opting in.
    for unit in [
        "shared/us-east-1/network/vpc",
        "dev/us-east-1/worker",
        "dev/us-east-1/app",
    ] {
        assert!(paths.contains(&unit), "{unit} missing from {paths:?}");
    }
    assert!(!paths.contains(&"dev/us-east-1/legacy-queue"));
    assert!(
        report.warnings.iter().any(|w| w.contains("legacy-queue")),
        "{:?}",
        report.warnings
    );

    let by_path = |p: &str| {
        executions
            .iter()
            .find(|e| e.cfg_path.as_str() == p)
            .unwrap()
    };
    let vpc = by_path("shared/us-east-1/network/vpc");
    let worker = by_path("dev/us-east-1/worker");
    let app = by_path("dev/us-east-1/app");
    // Accounts: voters, thresholds, roles, account order.
    assert_eq!(vpc.account_name, "shared");
    assert_eq!(
        vpc.voters,
        vec!["platform-lead@example.com", "network@example.com"]
    );
    assert_eq!(worker.account_name, "dev");
    assert_eq!(
        worker.apply_role_arn,
        "arn:aws:iam::222222222222:role/live-ci-apply"
    );
    assert_eq!(worker.wait_accounts, vec!["shared".to_string()]);
    assert_eq!(worker.account_deps, vec!["shared".to_string()]);
    // Commands from the templates; new providers only for the unit that adds them.
    assert_eq!(
        worker.plan_command,
        "terragrunt plan -input=false -out={plan_file}"
    );
    assert_eq!(
        worker.new_providers,
        vec!["terraform.io/builtin/terraform".to_string()]
    );
    assert!(vpc.new_providers.is_empty() && app.new_providers.is_empty());
    // Directory dependencies are execution ids of this run.
    for e in &executions {
        for w in &e.wait_for {
            assert!(
                report.execution_ids.contains(w),
                "{w} is not an execution of the run"
            );
        }
    }

    // The lock mirrored, trigger_sf invoked with exactly the run id, status posted.
    assert_eq!(
        fakes.params.puts(),
        vec![(LOCK.to_string(), "42".to_string())]
    );
    assert_eq!(
        *fakes.invoker.calls.lock().unwrap(),
        vec![(
            "live-ci-trigger-sf".to_string(),
            format!("{{\"run_id\":{run_id}}}")
        )]
    );
    let statuses = fakes.github.statuses();
    let status = statuses
        .iter()
        .find(|s| s.context == context::CREATE_DEPLOY_STACK)
        .unwrap();
    assert_eq!(status.state, StatusState::Success);
    assert_eq!(status.sha, merge);
    assert_eq!(status.target_url.as_deref(), Some("https://logs/cds"));
    assert!(
        status.description.contains(&format!("run #{run_id}")),
        "{}",
        status.description
    );

    // A redelivered merge writes nothing new and finds the same run.
    let again = create_deploy_stack(&config, &repo, None, &fakes.ports(&metadb))
        .await
        .unwrap();
    assert_eq!(again.run_id, Some(run_id));
    assert!(!again.created);
    assert_eq!(
        again.execution_ids, report.execution_ids,
        "execution ids are deterministic"
    );
    assert_eq!(
        metadb.executions(run_id).await.unwrap().len(),
        executions.len()
    );
    db.drop_db().await;
}

/// A repository whose merge commit has `change` applied to a two-unit base.
fn repo_with_merge(change: impl Fn(&GitRepo)) -> (GitRepo, String) {
    let repo = GitRepo::new();
    repo.unit("dev/a", "1", &[]).unit("dev/b", "2", &["../a"]);
    repo.commit("base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    change(&repo);
    repo.commit("change");
    repo.git(&["checkout", "-q", "main"]);
    repo.git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.com",
        "merge",
        "-q",
        "--no-ff",
        "-m",
        "merge",
        "feature",
    ]);
    let merge = repo.git(&["rev-parse", "HEAD"]);
    (repo, merge)
}

const DEV_ONLY: &str = r#"[{"name": "dev", "path": "dev", "voters": ["dev@example.com"],
  "min_approval_count": 1, "min_rejection_count": 1,
  "plan_role_arn": "arn:aws:iam::222222222222:role/plan", "apply_role_arn": "arn:aws:iam::222222222222:role/apply"}]"#;

async fn assert_fails_cleanly(change: impl Fn(&GitRepo), accounts: &str, expected: &str) {
    let (repo, merge) = repo_with_merge(change);
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let fakes = Fakes::new();
    let config = config(&repo.url(), &merge, "9", accounts, &[]);
    let err = create_deploy_stack(
        &config,
        &Repo {
            clone_url: repo.url(),
            token: None,
        },
        None,
        &fakes.ports(&metadb),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains(expected), "{err}");
    // Nothing written, no lock, nothing invoked, the error on the merge commit.
    assert_eq!(metadb.run(1).await.unwrap(), None);
    assert_eq!(metadb.merge_lock().await.unwrap().run_id, None);
    assert!(fakes.params.puts().is_empty());
    assert!(fakes.invoker.calls.lock().unwrap().is_empty());
    let statuses = fakes.github.statuses();
    assert_eq!(statuses.len(), 1);
    assert_eq!(statuses[0].state, StatusState::Failure);
    assert_eq!(statuses[0].sha, merge);
    assert!(
        statuses[0].description.contains(expected),
        "{}",
        statuses[0].description
    );
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_terragrunt_hcl_fails_the_run_and_writes_nothing() {
    assert_fails_cleanly(
        |r| {
            r.write(
                "dev/b/terragrunt.hcl",
                "dependency \"a\" {\n  config_path = \n",
            );
        },
        DEV_ONLY,
        // the unit and its file:line, before anything is written
        "unit dev/b: dev/b/terragrunt.hcl:2:",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dependency_cycle_fails_the_run_and_writes_nothing() {
    assert_fails_cleanly(
        |r| {
            r.write(
                "dev/a/terragrunt.hcl",
                "dependency \"b\" {\n  config_path = \"../b\"\n}\n",
            );
        },
        DEV_ONLY,
        "cycle",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_outside_every_account_fails_the_run_and_writes_nothing() {
    assert_fails_cleanly(
        |r| {
            r.unit("prod/c", "3", &[]);
        },
        DEV_ONLY,
        "prod/c: matches no account path",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_account_configuration_names_the_field() {
    assert_fails_cleanly(
        |r| {
            r.write("dev/a/main.tf", "resource \"terraform_data\" \"this\" {}\n");
        },
        &DEV_ONLY.replace("\"min_approval_count\": 1", "\"min_approval_count\": 2"),
        "field min_approval_count",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_merge_queues_behind_the_running_deploy() {
    let (repo, merge) = repo_with_merge(|r| {
        r.write("dev/a/main.tf", "resource \"terraform_data\" \"this\" {}\n");
    });
    repo.write("dev/b/extra.tf", "output \"x\" {\n  value = 1\n}\n");
    let second = repo.commit("direct push, merged as a second change");
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let fakes = Fakes::new();
    let repo_ref = Repo {
        clone_url: repo.url(),
        token: None,
    };
    let first = create_deploy_stack(
        &config(&repo.url(), &merge, "9", DEV_ONLY, &[]),
        &repo_ref,
        None,
        &fakes.ports(&metadb),
    )
    .await
    .unwrap();
    let queued = create_deploy_stack(
        &config(&repo.url(), &second, "10", DEV_ONLY, &[]),
        &repo_ref,
        None,
        &fakes.ports(&metadb),
    )
    .await
    .unwrap();
    assert!(first.started && !queued.started);
    assert_eq!(
        metadb
            .run(queued.run_id.unwrap())
            .await
            .unwrap()
            .unwrap()
            .status,
        RunStatus::Queued
    );
    // Only the running run's PR is mirrored; the queued run is still invoked.
    assert_eq!(
        fakes.params.puts(),
        vec![(LOCK.to_string(), "9".to_string())]
    );
    assert_eq!(fakes.invoker.calls.lock().unwrap().len(), 2);
    assert_eq!(
        queued.execution_ids.len(),
        1,
        "only dev/b changed in the second commit"
    );
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_scan_keeps_units_with_changes_and_their_dependents() {
    // Base: three applied units; the merge changes dev/a's input only.
    let repo = GitRepo::new();
    repo.unit("dev/a", "1", &[])
        .unit("dev/b", "2", &["../a"])
        .unit("dev/c", "3", &[]);
    repo.commit("base");
    let tf = TfTemplates::new("");
    for unit in ["dev/a", "dev/b", "dev/c"] {
        let apply_now = tf.plan.replace(
            "terraform plan -input=false -no-color -out={plan_file}",
            "terraform apply -input=false -no-color -auto-approve",
        );
        let out = Command::new("sh")
            .arg("-c")
            .arg(&apply_now)
            .env("LIVE_CI_CFG_PATH", unit)
            .current_dir(repo.path().join(unit))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    repo.git(&["clean", "-qfdx"]);
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.unit("dev/a", "10", &[]);
    repo.commit("change a");
    repo.git(&["checkout", "-q", "main"]);
    repo.git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.com",
        "merge",
        "-q",
        "--no-ff",
        "-m",
        "merge",
        "feature",
    ]);
    let merge = repo.git(&["rev-parse", "HEAD"]);

    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let fakes = Fakes::new();
    let config = config(
        &repo.url(),
        &merge,
        "5",
        DEV_ONLY,
        &[("SCAN_TYPE", "plan"), ("PLAN_COMMAND", &tf.plan)],
    );
    let report = create_deploy_stack(
        &config,
        &Repo {
            clone_url: repo.url(),
            token: None,
        },
        None,
        &fakes.ports(&metadb),
    )
    .await
    .unwrap();
    let paths: Vec<String> = report
        .plan
        .units
        .iter()
        .map(|u| u.path.to_string())
        .collect();
    assert_eq!(paths, vec!["dev/a", "dev/b"], "dev/c has no changes");
    let executions = metadb.executions(report.run_id.unwrap()).await.unwrap();
    let b = executions
        .iter()
        .find(|e| e.cfg_path.as_str() == "dev/b")
        .unwrap();
    let a = executions
        .iter()
        .find(|e| e.cfg_path.as_str() == "dev/a")
        .unwrap();
    assert_eq!(b.wait_for, vec![a.execution_id.clone()]);
    db.drop_db().await;
}

#[test]
fn missing_settings_are_named() {
    let err = CreateDeployStackConfig::from_lookup(|k| {
        (k == "LIVE_CI_COMMIT" || k == "REPO_CLONE_URL").then(|| "abc".to_string())
    })
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "environment variable TRIGGER_SF_FUNCTION_NAME is not set; \
         environment variable MERGE_LOCK_SSM_KEY is not set; \
         environment variable ACCOUNT_PARENT_CFG is not set"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_affecting_no_unit_creates_no_run_and_takes_no_lock() {
    let (repo, merge) = repo_with_merge(|r| {
        r.write("README.md", "only docs\n");
    });
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let fakes = Fakes::new();
    let report = create_deploy_stack(
        &config(&repo.url(), &merge, "4", DEV_ONLY, &[]),
        &Repo {
            clone_url: repo.url(),
            token: None,
        },
        None,
        &fakes.ports(&metadb),
    )
    .await
    .unwrap();
    assert_eq!(report.run_id, None);
    assert_eq!(metadb.merge_lock().await.unwrap().run_id, None);
    assert!(fakes.invoker.calls.lock().unwrap().is_empty());
    assert!(fakes.params.puts().is_empty());
    let statuses = fakes.github.statuses();
    assert_eq!(statuses.len(), 1);
    assert_eq!(statuses[0].state, StatusState::Success);
    assert_eq!(
        statuses[0].description,
        "no unit is affected: nothing to deploy"
    );
    // Recorded as a no-op merge: the sweep takes this trunk head as known
    // (while a commit nobody recorded is still claimed).
    assert_eq!(metadb.claim_trunk_launch(&merge, 0).await.unwrap(), None);
    let unknown = repo.git(&["rev-parse", "HEAD~1"]);
    assert_eq!(
        metadb.claim_trunk_launch(&unknown, 0).await.unwrap(),
        Some(1)
    );
    db.drop_db().await;
}

/// The sweep launches create-deploy-stack for a trunk head whose webhook was
/// lost: no pull request is named, the run is recorded under PR 0 and
/// deploys the range; the webhook's launch for the same commit arriving late
/// (or the other way round) creates nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_launch_without_a_pull_request_deploys_the_head_once() {
    let (repo, merge) = repo_with_merge(|r| {
        r.unit("dev/a", "10", &[]);
    });
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let fakes = Fakes::new();
    let clone = Repo {
        clone_url: repo.url(),
        token: None,
    };
    let swept = create_deploy_stack(
        &config(&repo.url(), &merge, "", DEV_ONLY, &[]),
        &clone,
        None,
        &fakes.ports(&metadb),
    )
    .await
    .unwrap();
    let run_id = swept.run_id.unwrap();
    assert!(swept.created && swept.started);
    let run = metadb.run(run_id).await.unwrap().unwrap();
    assert_eq!((run.pr_id, run.commit_id.as_str()), (0, merge.as_str()));
    assert_eq!(swept.plan.units.len(), 2, "{:?}", swept.plan.units);

    let webhook = create_deploy_stack(
        &config(&repo.url(), &merge, "4", DEV_ONLY, &[]),
        &clone,
        None,
        &fakes.ports(&metadb),
    )
    .await
    .unwrap();
    assert_eq!(webhook.run_id, Some(run_id));
    assert!(!webhook.created);
    assert_eq!(metadb.trunk_runs(10).await.unwrap().len(), 1);
    assert_eq!(metadb.claim_trunk_launch(&merge, 0).await.unwrap(), None);
    db.drop_db().await;
}

/// Priorities use history: the critical-path priority weighs each unit by the
/// median duration of its earlier executions in the metadb (1 for a unit never
/// deployed), so the claim starts the unit that took longest first even when
/// it comes last in path order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn priorities_take_the_median_duration_of_earlier_executions() {
    let repo = GitRepo::new();
    repo.unit("dev/a", "1", &[]).unit("dev/z", "1", &[]);
    repo.commit("base");
    repo.unit("dev/a", "2", &[]).unit("dev/z", "2", &[]);
    let first = repo.commit("first change");
    repo.unit("dev/a", "3", &[])
        .unit("dev/z", "3", &[])
        .unit("dev/new", "1", &[]);
    let second = repo.commit("second change, a new unit");
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let fakes = Fakes::new();
    let repo_ref = Repo {
        clone_url: repo.url(),
        token: None,
    };
    let run = create_deploy_stack(
        &config(&repo.url(), &first, "1", DEV_ONLY, &[]),
        &repo_ref,
        None,
        &fakes.ports(&metadb),
    )
    .await
    .unwrap();
    let run_id = run.run_id.unwrap();
    // No history: equal priorities, path order.
    let claimed = metadb.claim_ready(run_id, 10).await.unwrap();
    let paths: Vec<&str> = claimed.iter().map(|e| e.cfg_path.as_str()).collect();
    assert_eq!(paths, ["dev/a", "dev/z"]);
    assert!(claimed.iter().all(|e| e.priority == 1.0), "{claimed:?}");
    // dev/a deploys at once, dev/z takes 1.5 s.
    let id = |path: &str| {
        claimed
            .iter()
            .find(|e| e.cfg_path.as_str() == path)
            .unwrap()
            .execution_id
            .clone()
    };
    metadb
        .record_finished(&id("dev/a"), Outcome::Succeeded, None)
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    metadb
        .record_finished(&id("dev/z"), Outcome::Succeeded, None)
        .await
        .unwrap();
    metadb.finish_run(run_id).await.unwrap();

    let run = create_deploy_stack(
        &config(
            &repo.url(),
            &second,
            "2",
            DEV_ONLY,
            &[("MAX_PARALLEL", "1")],
        ),
        &repo_ref,
        None,
        &fakes.ports(&metadb),
    )
    .await
    .unwrap();
    let run_id = run.run_id.unwrap();
    let executions = metadb.executions(run_id).await.unwrap();
    let priority = |path: &str| {
        executions
            .iter()
            .find(|e| e.cfg_path.as_str() == path)
            .unwrap()
            .priority
    };
    assert!(priority("dev/z") >= 1.5, "{executions:?}");
    assert_eq!(priority("dev/new"), 1.0);
    assert!(priority("dev/a") < 0.5, "{executions:?}");
    // One slot: the claim order is the history's order.
    let mut order = Vec::new();
    for _ in 0..3 {
        let claimed = metadb.claim_ready(run_id, 10).await.unwrap();
        assert_eq!(claimed.len(), 1);
        order.push(claimed[0].cfg_path.as_str().to_string());
        metadb
            .record_finished(&claimed[0].execution_id, Outcome::Succeeded, None)
            .await
            .unwrap();
    }
    assert_eq!(order, ["dev/z", "dev/new", "dev/a"]);
    db.drop_db().await;
}

/// `merge_lock_scope = "units"`: queueing a run refreshes the open pull
/// requests' `Merge Lock` statuses, since the queued run's units are busy
/// too. PR #50 (units: dev/b) is free while only dev/a deploys, and pending
/// naming dev/b once the run changing dev/b is queued; PR #51 (dev/c) stays free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_units_scope_a_queued_run_refreshes_the_open_pull_requests_lock_statuses() {
    use live_ci_core::merge_lock::{PLAN_COMMENT_MARKER, PullRequestUnits};
    use live_ci_core::status::PullRequest;

    let repo = GitRepo::new();
    repo.unit("dev/a", "1", &[])
        .unit("dev/b", "2", &[])
        .unit("dev/c", "3", &[]);
    repo.commit("base");
    repo.write("dev/a/main.tf", "resource \"terraform_data\" \"this\" {}\n");
    let first = repo.commit("change a");
    repo.write("dev/b/extra.tf", "output \"x\" {\n  value = 1\n}\n");
    let second = repo.commit("change b");

    let open = |number: u64| PullRequest {
        number,
        head_sha: format!("{number:040x}"),
        base_ref: "main".into(),
    };
    let mut fakes = Fakes::new();
    fakes.github = RecordingGitHost::with_open(vec![open(50), open(51)], &["dev/x/terragrunt.hcl"]);
    for (pr, unit) in [(50u64, "dev/b"), (51, "dev/c")] {
        let record = PullRequestUnits {
            head_sha: format!("{pr:040x}"),
            units: [unit.to_string()].into(),
        };
        fakes.github.comments.lock().unwrap().insert(
            (pr, PLAN_COMMENT_MARKER.to_string()),
            format!(
                "{PLAN_COMMENT_MARKER}\n{}\n### plan",
                record.to_comment_line()
            ),
        );
    }
    let latest = |pr: u64| {
        fakes
            .github
            .statuses()
            .into_iter()
            .rfind(|s| s.sha == format!("{pr:040x}") && s.context == context::MERGE_LOCK)
            .unwrap_or_else(|| panic!("no Merge Lock status on #{pr}"))
    };
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let repo_ref = Repo {
        clone_url: repo.url(),
        token: None,
    };
    let units = [("MERGE_LOCK_SCOPE", "units")];
    let started = create_deploy_stack(
        &config(&repo.url(), &first, "9", DEV_ONLY, &units),
        &repo_ref,
        None,
        &fakes.ports(&metadb),
    )
    .await
    .unwrap();
    assert!(started.started);
    assert_eq!(latest(50).state, StatusState::Success, "{:?}", latest(50));
    assert_eq!(latest(51).state, StatusState::Success, "{:?}", latest(51));

    let queued = create_deploy_stack(
        &config(&repo.url(), &second, "10", DEV_ONLY, &units),
        &repo_ref,
        None,
        &fakes.ports(&metadb),
    )
    .await
    .unwrap();
    assert!(queued.created && !queued.started);
    let fifty = latest(50);
    assert_eq!(fifty.state, StatusState::Pending, "{fifty:?}");
    assert!(fifty.description.contains("unit dev/b"), "{fifty:?}");
    assert_eq!(latest(51).state, StatusState::Success, "{:?}", latest(51));
    // The lock parameter names the running run's PR only.
    assert_eq!(
        fakes.params.puts(),
        vec![(LOCK.to_string(), "9".to_string())]
    );
    db.drop_db().await;
}
