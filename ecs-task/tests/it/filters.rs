//! Filters select what the pipeline runs: `.live-ci-filters` at the commit and
//! the module's `deploy_filters` narrow pr-plan and create-deploy-stack (real
//! git, PostgreSQL and terraform; a recording GitHub), and the CLI's
//! `affected` and `plan` agree with the pipeline on the same commit.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::process::Command;

use clap::Parser;
use live_ci_core::deploy::Action;
use live_ci_core::port::{ExecutionStore, RunStore};
use live_ci_core::status::{StatusState, Statuses, context};
use live_ci_git::GitCli;
use live_ci_task::checkout::Repo;
use live_ci_task::create_deploy_stack::{DeployReport, Wiring, create_deploy_stack};
use live_ci_task::pr_plan::{COMMENT_MARKER, pr_plan};
use live_ci_task::{CreateDeployStackConfig, Result};
use live_ci_terragrunt::plan::DeploymentPlan;
use support::fakes::{MemArtifacts, MemoryParams, RecordingGitHost, RecordingInvoker};
use support::pg::TestDb;
use support::repo::{GitRepo, TfTemplates};

const LOCK: &str = "/live-ci/merge-lock";

const DEV_ONLY: &str = r#"[{"name": "dev", "path": "dev", "voters": ["dev@example.com"],
  "min_approval_count": 1, "min_rejection_count": 1,
  "plan_role_arn": "arn:aws:iam::222222222222:role/plan", "apply_role_arn": "arn:aws:iam::222222222222:role/apply"}]"#;

fn deploy_config(
    url: &str,
    commit: &str,
    accounts: &str,
    extra: &[(&str, &str)],
) -> CreateDeployStackConfig {
    let mut pairs = vec![
        ("REPO_CLONE_URL", url),
        ("LIVE_CI_PR_NUMBER", "9"),
        ("LIVE_CI_COMMIT", commit),
        ("LIVE_CI_BASE_REF", "main"),
        ("MERGE_LOCK_SSM_KEY", LOCK),
        ("TRIGGER_SF_FUNCTION_NAME", "live-ci-trigger-sf"),
        ("ACCOUNT_PARENT_CFG", accounts),
        ("MAX_PARALLEL", "3"),
    ];
    pairs.extend_from_slice(extra);
    support::config(&pairs)
}

struct Fakes {
    params: MemoryParams,
    github: RecordingGitHost,
    invoker: RecordingInvoker,
    sts: live_ci_aws::StsRoleAssumer,
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

    async fn deploy<M: RunStore>(
        &self,
        metadb: &M,
        config: &CreateDeployStackConfig,
    ) -> Result<DeployReport> {
        let ports = Wiring {
            metadb,
            params: &self.params,
            github: &self.github,
            invoker: &self.invoker,
            roles: &self.sts,
            artifacts: &self.checkouts,
        };
        let repo = Repo {
            clone_url: config.common.clone_url.clone(),
            token: None,
        };
        create_deploy_stack(config, &repo, None, &ports).await
    }
}

/// dev/a, dev/b (depends on a) and dev/c on main; the feature changes a and
/// c (b is affected through a) plus `files`, merged with a merge commit.
fn merged(files: &[(&str, &str)]) -> (GitRepo, String) {
    let repo = GitRepo::new();
    repo.unit("dev/a", "1", &[])
        .unit("dev/b", "2", &["../a"])
        .unit("dev/c", "3", &[]);
    repo.commit("base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.unit("dev/a", "10", &[]).unit("dev/c", "30", &[]);
    for (path, text) in files {
        repo.write(path, text);
    }
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

/// A run refused before anything is written: the error, no run row, no lock,
/// no parameter, nothing invoked, and one failure status on the merge commit.
async fn refused(files: &[(&str, &str)], extra: &[(&str, &str)]) -> String {
    let (repo, merge) = merged(files);
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let fakes = Fakes::new();
    let config = deploy_config(&repo.url(), &merge, DEV_ONLY, extra);
    let err = fakes
        .deploy(&metadb, &config)
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(metadb.run(1).await.unwrap(), None, "{err}");
    assert_eq!(metadb.merge_lock().await.unwrap().run_id, None);
    assert!(fakes.params.puts().is_empty());
    assert!(fakes.invoker.calls.lock().unwrap().is_empty());
    let statuses = fakes.github.statuses();
    assert_eq!(statuses.len(), 1);
    assert_eq!(statuses[0].state, StatusState::Failure);
    assert_eq!(statuses[0].context, context::CREATE_DEPLOY_STACK);
    // The error, cut to GitHub's description limit.
    let shown = &statuses[0].description;
    let cut = shown.strip_suffix('…').filter(|s| err.starts_with(s));
    assert!(shown == &err || cut.is_some(), "{shown}");
    db.drop_db().await;
    err
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filter_that_does_not_parse_fails_the_run_before_anything_is_written() {
    // In the file: line 3 (after a comment and a good query), column 5.
    let err = refused(&[(".live-ci-filters", "# ours\n./dev/**\ndev|\n")], &[]).await;
    assert!(
        err.starts_with(".live-ci-filters:3:5: filter \"dev|\""),
        "{err}"
    );
    // In the module variable: its second entry, column 2.
    let err = refused(&[], &[("DEPLOY_FILTERS", r#"["./dev/**", "[main"]"#)]).await;
    assert!(err.starts_with("deploy_filters:2:"), "{err}");
    assert!(err.contains("\"[main\""), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaving_out_a_unit_a_kept_unit_depends_on_is_refused_naming_both() {
    // b depends on a; both are affected; the variable keeps b and c only.
    let err = refused(&[], &[("DEPLOY_FILTERS", r#"["!a"]"#)]).await;
    assert!(
        err.contains("unit \"dev/b\" needs unit \"dev/a\" to apply first"),
        "{err}"
    );
    assert!(err.contains("deploy_filters: \"!a\""), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_file_and_the_variable_both_narrow_the_deploy() {
    // The file keeps a and b (c is left out); the variable removes nothing
    // the file keeps but would keep c: a unit runs only when both select it.
    let (repo, merge) = merged(&[(".live-ci-filters", "./dev/a\n./dev/b\n")]);
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let fakes = Fakes::new();
    let config = deploy_config(
        &repo.url(),
        &merge,
        DEV_ONLY,
        &[("DEPLOY_FILTERS", r#"["./dev/**"]"#)],
    );
    let report = fakes.deploy(&metadb, &config).await.unwrap();
    let run = report.run_id.unwrap();
    let mut paths: Vec<String> = metadb
        .executions(run)
        .await
        .unwrap()
        .iter()
        .map(|e| e.cfg_path.to_string())
        .collect();
    paths.sort();
    assert_eq!(paths, ["dev/a", "dev/b"]);
    assert!(
        report.warnings.iter().any(|w| w
            == "dev/c is left out by .live-ci-filters: selected by none of \"./dev/a\", \"./dev/b\""),
        "{:?}",
        report.warnings
    );
    // The variable alone narrows too: it leaves c out of the next merge's run.
    drop(report);
    db.drop_db().await;
    let (repo, merge) = merged(&[]);
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let config = deploy_config(
        &repo.url(),
        &merge,
        DEV_ONLY,
        &[("DEPLOY_FILTERS", r#"["!./dev/c"]"#)],
    );
    let report = Fakes::new().deploy(&metadb, &config).await.unwrap();
    let mut paths: Vec<String> = metadb
        .executions(report.run_id.unwrap())
        .await
        .unwrap()
        .iter()
        .map(|e| e.cfg_path.to_string())
        .collect();
    paths.sort();
    assert_eq!(paths, ["dev/a", "dev/b"]);
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pr_comment_names_the_units_left_out_and_the_expression() {
    let repo = GitRepo::new();
    repo.unit("dev/a", "1", &[])
        .unit("dev/b", "2", &["../a"])
        .unit("dev/c*x", "3", &[]);
    repo.commit("base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.unit("dev/a", "10", &[]).unit("dev/c*x", "30", &[]);
    // Markdown in the expression and the unit's name stays inert.
    repo.write(".live-ci-filters", "!{./dev/c*x}\n");
    let head = repo.commit("change a and c");
    let tf = TfTemplates::new("");
    let github = RecordingGitHost::default();
    let config: live_ci_task::PrPlanConfig = support::config(&[
        ("REPO_CLONE_URL", &repo.url()),
        ("LIVE_CI_PR_NUMBER", "12"),
        ("LIVE_CI_COMMIT", &head),
        ("LIVE_CI_BASE_REF", "main"),
        ("PLAN_COMMAND", &tf.plan),
    ]);
    let clone = Repo {
        clone_url: repo.url(),
        token: None,
    };
    let report = pr_plan(
        &config,
        &clone,
        None,
        &Statuses::new(&github, Default::default()),
        &support::sts(),
    )
    .await
    .unwrap();
    let planned: Vec<String> = report.plans.iter().map(|p| p.path.to_string()).collect();
    assert_eq!(planned, ["dev/a", "dev/b"]);
    let body = &github.comments()[&(12, COMMENT_MARKER.to_string())];
    assert!(
        body.contains(
            "Left out by filters (not planned, not deployed):\n- `dev/c*x`: `.live-ci-filters` `!{./dev/c*x}`\n"
        ),
        "{body}"
    );
}

/// `live-ci` (the CLI's library, as the binary runs it) on `repo`: the JSON it prints.
fn cli_json(args: &[&str]) -> serde_json::Value {
    let cli =
        live_ci_cli::Cli::try_parse_from(std::iter::once("live-ci").chain(args.iter().copied()))
            .unwrap();
    let out = match &cli.command {
        live_ci_cli::Command::Affected(a) => live_ci_cli::commands::affected::run(a),
        live_ci_cli::Command::Plan(a) => live_ci_cli::commands::plan::run(a),
        other => panic!("not compared: {other:?}"),
    }
    .unwrap();
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    serde_json::from_str(&out.text).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_and_the_pipeline_select_the_same_units_of_one_commit() {
    // examples/live-repo, plus a committed `.live-ci-filters` on the trunk.
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live");
    let out = Command::new("bash")
        .arg(live_ci_testkit::repo_root().join("examples/live-repo/build.sh"))
        .arg(&live)
        .output()
        .unwrap();
    assert!(out.status.success());
    std::fs::write(
        live.join(".live-ci-filters"),
        "# the shared network only, and not its DNS\n./shared/**\n!dns\n",
    )
    .unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(&live)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    git(&["add", ".live-ci-filters"]);
    git(&["commit", "-qm", "filters"]);
    let head = git(&["rev-parse", "HEAD"]);
    let base = git(&["rev-parse", "HEAD~1^1"]);
    let repo_dir = live.display().to_string();
    let accounts_file = live_ci_testkit::repo_root().join("examples/live-repo/accounts.json");
    let accounts = std::fs::read_to_string(&accounts_file).unwrap();

    // The CLI, from the work tree of that commit.
    let affected = cli_json(&[
        "affected", "--repo", &repo_dir, "--base", &base, "--head", &head,
    ]);
    let cli_units: Vec<(String, String)> = affected["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["path"].as_str().unwrap().to_string(),
                u["action"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let plan: DeploymentPlan = serde_json::from_value(cli_json(&[
        "plan",
        "--repo",
        &repo_dir,
        "--base",
        &base,
        "--head",
        &head,
        "--accounts",
        accounts_file.to_str().unwrap(),
        "--max-parallel",
        "3",
        "--format",
        "json",
    ]))
    .unwrap();

    // pr-plan's selection step, as pr-plan runs it on its checkout.
    let clone = GitCli::open(&live).unwrap();
    let filters = live_ci_task::filters::load(&clone, &head, &[]).unwrap();
    let selection =
        live_ci_task::filters::select(&clone, &live, &base, &head, false, &filters).unwrap();
    let pipeline_units: Vec<(String, String)> = selection
        .detection
        .affected
        .units
        .iter()
        .map(|u| {
            let action = match u.action {
                Action::Apply => "apply",
                Action::Destroy => "destroy",
            };
            (u.path.to_string(), action.to_string())
        })
        .collect();
    assert_eq!(
        cli_units,
        [(
            "shared/us-east-1/network/vpc".to_string(),
            "apply".to_string()
        )]
    );
    assert_eq!(pipeline_units, cli_units);
    let excluded: Vec<String> = selection
        .excluded
        .iter()
        .map(|e| format!("{} {}", e.path, e.describe()))
        .collect();
    assert!(
        excluded.contains(&"shared/us-east-1/network/dns .live-ci-filters: \"!dns\"".to_string()),
        "{excluded:?}"
    );

    // create-deploy-stack deploying the same commit from the same base.
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let config = deploy_config(&repo_dir, &head, &accounts, &[("LIVE_CI_BASE_SHA", &base)]);
    let report = Fakes::new().deploy(&metadb, &config).await.unwrap();
    let deployed: Vec<(String, Action, Option<String>)> = report
        .plan
        .units
        .iter()
        .map(|u| (u.path.to_string(), u.action, u.account.clone()))
        .collect();
    let predicted: Vec<(String, Action, Option<String>)> = plan
        .units
        .iter()
        .map(|u| (u.path.to_string(), u.action, u.account.clone()))
        .collect();
    assert_eq!(deployed, predicted);
    let mut executions: Vec<String> = metadb
        .executions(report.run_id.unwrap())
        .await
        .unwrap()
        .iter()
        .map(|e| e.cfg_path.to_string())
        .collect();
    executions.sort();
    assert_eq!(executions, ["shared/us-east-1/network/vpc"]);
    db.drop_db().await;
}
