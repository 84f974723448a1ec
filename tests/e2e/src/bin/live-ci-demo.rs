//! `make demo`: the whole pipeline on this machine. Brings the local cloud up,
//! deploys the module (`scripts/deploy-local.sh`), merges the sample pull
//! request, approves every unit through the links of its mail, shows the run
//! live (`live-ci status --watch`), prints the summary and the commit statuses,
//! and tears the cloud down (unless it was running before, or `--keep`).

use std::time::{Duration, Instant};

use anyhow::Context as _;
use live_ci_e2e::observe::{Metadb, drive, sfn_statuses};
use live_ci_e2e::repo::SampleRepo;
use live_ci_e2e::vote::Vote;
use live_ci_e2e::{Cloud, Deployment, REPO_FULL_NAME, repo_root, send_merge_webhook, work_dir};
use live_ci_testkit::github::{FakeGitHub, FakePullRequest};

fn step(msg: &str) {
    eprintln!("\n==> {msg}");
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let keep = std::env::args().any(|a| a == "--keep");
    let started = Instant::now();
    let was_up = std::process::Command::new("bash")
        .arg(repo_root().join("scripts/local-cloud.sh"))
        .arg("status")
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let result = demo(started, was_up).await;
    if keep || was_up {
        eprintln!("\nThe local cloud keeps running (scripts/local-cloud.sh down stops it).");
    } else {
        step("tearing the local cloud down");
        Cloud::down(true)
            .await
            .context("scripts/local-cloud.sh down")?;
    }
    result
}

async fn demo(started: Instant, was_up: bool) -> anyhow::Result<()> {
    step("starting the local cloud (PostgreSQL + LocalStack with the live-ci plugin)");
    let cloud = Cloud::up(true).await?;
    eprintln!("    LocalStack at {}", cloud.endpoint());
    // The IAM counts are the cloud's since it started: the demo reports its own.
    let iam_before = cloud.iam_stats(&reqwest::Client::new()).await?;

    step("building the sample live repository (examples/live-repo) with its merged pull request");
    let (repo, mut merge) = SampleRepo::build(&work_dir().join("demo/live-repo")).await?;
    if was_up {
        // Step Functions execution names are made of the PR number and the
        // commit (the same on every build): a LocalStack that kept running may
        // hold this PR's executions from an earlier demo or test.
        merge.number += std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() % 1_000_000)
            * 100;
    }
    let files = repo.files(&merge).await?;
    eprintln!(
        "    PR #{} merged as {}; it changes:",
        merge.number, merge.merge_commit
    );
    for f in &files {
        eprintln!("      {f}");
    }
    let github = FakeGitHub::start(REPO_FULL_NAME).await;
    github.add_pull_request(FakePullRequest {
        number: merge.number,
        head_sha: merge.head_sha.clone(),
        base: "main".into(),
        files,
        open: false,
    });
    eprintln!("    GitHub API (in-process fake) at {}", github.url());

    step("deploying the Terraform module (examples/local) into the local cloud");
    let metadb = cloud.fresh_database("live_ci_demo").await?;
    let t = Instant::now();
    let deployment = Deployment::apply(&cloud, &metadb, &github.url(), &repo.dir, false, true)
        .await
        .context("terraform apply of examples/local")?;
    eprintln!("    applied in {:.0?}", t.elapsed());
    eprintln!("    webhook URL  {}", deployment.webhook_url);
    eprintln!("    approval URL {}", deployment.approval_url);

    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()?;
    cloud.clear_mailbox(&http).await?;

    step("GitHub delivers the signed merge webhook");
    let delivery = format!("demo-{}", metadb.rsplit('/').next().unwrap_or("0"));
    let (status, answer) =
        send_merge_webhook(&http, cloud.endpoint(), &deployment, &merge, &delivery).await?;
    eprintln!("    receiver answered {status}: {answer}");
    anyhow::ensure!(status == 200, "the receiver refused the webhook");

    let db = Metadb::connect(&metadb).await?;
    let t = Instant::now();
    while db.runs(&merge.merge_commit).await?.is_empty() {
        anyhow::ensure!(
            t.elapsed() < Duration::from_secs(180),
            "create-deploy-stack wrote no run in 3 minutes"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    step("the run is live; every unit is approved through the link in its mail");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"));
    let mut watch = tokio::process::Command::new(target.join("debug/live-ci"))
        .args(["status", "--watch", "--interval-ms", "1000", "--commit"])
        .arg(&merge.merge_commit)
        .arg("--database-url")
        .arg(&metadb)
        .kill_on_drop(true)
        .spawn()
        .context("live-ci status --watch")?;
    let outcome = drive(
        &db,
        &http,
        cloud.endpoint(),
        &merge.merge_commit,
        Duration::from_secs(1200),
        &|_| Vote::Approve,
        &|_, _| {},
    )
    .await?;
    let _ = tokio::time::timeout(Duration::from_secs(10), watch.wait()).await;

    step("summary");
    let arns: Vec<String> = outcome
        .run
        .executions
        .iter()
        .filter_map(|e| e.sfn_execution_arn.clone())
        .collect();
    let sfn = sfn_statuses(cloud.endpoint(), &arns).await?;
    println!(
        "run {} {} in {:.0?}",
        outcome.run.run_id, outcome.run.status, outcome.elapsed
    );
    println!(
        "{:<36} {:<8} {:<10} {:<10} approved by link",
        "unit", "action", "status", "step fn"
    );
    for e in &outcome.run.executions {
        let s = e
            .sfn_execution_arn
            .as_ref()
            .and_then(|a| sfn.get(a))
            .map_or("-", String::as_str);
        println!(
            "{:<36} {:<8} {:<10} {:<10} {}",
            e.cfg_path,
            e.action,
            e.status,
            s,
            if outcome.votes.contains_key(&e.execution_id) {
                "yes"
            } else {
                "-"
            }
        );
    }
    println!("\ncommit statuses on {}:", merge.merge_commit);
    for (context, s) in github.latest_statuses(&merge.merge_commit) {
        println!("  {:<10} {:<28} {}", s.state, context, s.description);
    }
    println!(
        "merge lock: {}",
        match db.lock_holder().await? {
            Some(run) => format!("held by run {run}"),
            None => "released".into(),
        }
    );
    let iam = cloud.iam_stats(&http).await?;
    if iam.enforced {
        let denied = iam.denied.saturating_sub(iam_before.denied);
        println!(
            "IAM (enforced by the local cloud): {} requests authorised, {denied} denied",
            iam.authorised.saturating_sub(iam_before.authorised),
        );
        let new = usize::try_from(denied).unwrap_or(usize::MAX);
        for denial in &iam.denials[iam.denials.len().saturating_sub(new)..] {
            println!(
                "  denied: {}",
                denial.get("message").map_or("", String::as_str)
            );
        }
    } else {
        println!("IAM: not enforced (LIVE_CI_IAM_ENFORCE is 0)");
    }
    println!("demo finished in {:.0?}", started.elapsed());
    anyhow::ensure!(outcome.run.status == "succeeded", "the run did not succeed");
    Ok(())
}
