//! `live-ci plan`'s predicted start order against the metadb's scheduler: the
//! same run (the plan's units as create-deploy-stack turns them into
//! executions) inserted in PostgreSQL and claimed step by step (every unit
//! takes one step; everything claimed in a step finishes before the next
//! claim) starts in the order and at the steps the CLI predicted, with and
//! without per-account caps.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use live_ci_core::account::Accounts;
use live_ci_core::deploy::Outcome;
use live_ci_core::port::{ExecutionStore, RunStore};
use live_ci_core::terraform::CommandTemplate;
use live_ci_terragrunt::executions::{RunContext, executions_from_plan};
use live_ci_terragrunt::plan::DeploymentPlan;
use live_ci_testkit::pg::{TestDb, run};

/// One case: the accounts' caps, the run's cap and the run's commit.
type Case = (&'static [(&'static str, u32)], u32, &'static str);

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The sample repository's account configuration with `caps` added.
fn accounts_with(dir: &Path, caps: &[(&str, u32)]) -> PathBuf {
    let text = std::fs::read_to_string(root().join("examples/live-repo/accounts.json")).unwrap();
    let mut list: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
    for a in &mut list {
        let name = a["name"].as_str().unwrap().to_string();
        if let Some((_, cap)) = caps.iter().find(|(n, _)| *n == name) {
            a["max_parallel"] = (*cap).into();
        }
    }
    let path = dir.join(format!("accounts-{}.json", caps.len()));
    std::fs::write(&path, serde_json::to_string(&list).unwrap()).unwrap();
    path
}

/// What `live-ci plan --format json` predicts for the sample merge.
fn predicted(repo: &Path, accounts: &Path, max_parallel: u32) -> DeploymentPlan {
    let out = Command::new(env!("CARGO_BIN_EXE_live-ci"))
        .args([
            "plan",
            "--base",
            "HEAD^1",
            "--head",
            "HEAD",
            "--allow-destroy",
        ])
        .arg("--accounts")
        .arg(accounts)
        .args([
            "--max-parallel",
            &max_parallel.to_string(),
            "--format",
            "json",
        ])
        .arg("--repo")
        .arg(repo)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The units the metadb starts, step by step, for the run the plan makes.
async fn scheduled(
    db: &live_ci_metadb::PgMetadb,
    plan: &DeploymentPlan,
    accounts: &Accounts,
    commit: &str,
) -> Vec<Vec<String>> {
    let plan_cmd = CommandTemplate::new("terraform -chdir={cfg_path} plan").unwrap();
    let apply_cmd = CommandTemplate::new("terraform -chdir={cfg_path} apply").unwrap();
    let executions = executions_from_plan(
        plan,
        &RunContext {
            pr_id: 7,
            commit_id: commit,
            accounts,
            plan_command: &plan_cmd,
            apply_command: &apply_cmd,
            new_providers: &BTreeMap::new(),
        },
    )
    .unwrap();
    let created = db
        .create_run(&run(commit, plan.max_parallel as u32, executions))
        .await
        .unwrap();
    assert!(created.started);
    let mut steps = Vec::new();
    loop {
        let claimed = db.claim_next(created.run_id, 1000).await.unwrap().claimed;
        if claimed.is_empty() {
            break;
        }
        for e in &claimed {
            db.record_finished(&e.execution_id, Outcome::Succeeded, None)
                .await
                .unwrap();
        }
        steps.push(claimed.iter().map(|e| e.cfg_path.to_string()).collect());
    }
    let progress = db.run_progress(created.run_id).await.unwrap();
    assert_eq!(progress.waiting, 0, "units never claimed: {progress:?}");
    // The run ends, so the next one starts.
    db.end_run(created.run_id).await.unwrap();
    steps
}

/// The plan's units grouped by predicted start step, in predicted order.
fn predicted_steps(plan: &DeploymentPlan) -> Vec<Vec<String>> {
    let mut steps: Vec<Vec<String>> = Vec::new();
    for u in &plan.units {
        let step = u.start as usize;
        assert_eq!(u.start, step as f64, "{} starts between steps", u.path);
        if steps.len() <= step {
            steps.resize(step + 1, Vec::new());
        }
        steps[step].push(u.path.to_string());
    }
    steps
}

#[tokio::test]
async fn the_predicted_start_order_is_the_metadbs_with_and_without_caps() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let out = Command::new("bash")
        .arg(root().join("examples/live-repo/build.sh"))
        .arg(&repo)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let cases: [Case; 3] = [
        (&[], 2, "a1a1a1a1a1"),
        (&[("dev", 1)], 3, "b2b2b2b2b2"),
        (&[("dev", 2), ("shared", 1)], 4, "c3c3c3c3c3"),
    ];
    for (caps, max_parallel, commit) in cases {
        let file = accounts_with(tmp.path(), caps);
        let accounts =
            Accounts::from_json("accounts.json", &std::fs::read_to_string(&file).unwrap()).unwrap();
        let plan = predicted(&repo, &file, max_parallel);
        let expected_caps: BTreeMap<String, u32> =
            caps.iter().map(|(n, c)| (n.to_string(), *c)).collect();
        assert_eq!(plan.account_caps, expected_caps);
        let predicted = predicted_steps(&plan);
        let actual = scheduled(&db, &plan, &accounts, commit).await;
        assert_eq!(
            actual, predicted,
            "caps {caps:?}, max_parallel {max_parallel}: the metadb (left) and the CLI (right) disagree"
        );
        println!("caps {caps:?}, max_parallel {max_parallel}: {actual:?}");
    }
    // The table names each cap.
    let file = accounts_with(tmp.path(), &[("dev", 1)]);
    let out = Command::new(env!("CARGO_BIN_EXE_live-ci"))
        .args(["plan", "--base", "HEAD^1", "--head", "HEAD", "--accounts"])
        .arg(&file)
        .arg("--repo")
        .arg(&repo)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("account \"dev\": at most 1 of its units at once"),
        "{text}"
    );
    t.drop_db().await;
}
