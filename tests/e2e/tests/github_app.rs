//! Scenario 1 once more, with GitHub App authentication: the module deployed
//! with `github_app` (`scripts/deploy-local.sh`'s `LIVE_CI_GITHUB_APP_*`, the
//! App's private key put into the SecureString the module creates), the
//! GitHub fake trusting only that App's public key. The sample merge is
//! planned, approved and applied; the fake's records then show that every job
//! asked for an installation token limited to the live repository and to its
//! row of the permission table (`live_ci_github::permissions`, which
//! `infra/README.md` lists and the contract test compares), that no request
//! used anything else, and that the unit statuses were check runs — one per
//! name, even where one job created it and another completed it — while the
//! Merge Lock stayed a commit status.
//!
//! Its own binary and deployment: `pipeline.rs` keeps the static-token path
//! end to end (every scenario there), and this file applies the module with
//! the App. In one local cloud the two would apply the same deployment
//! (`examples/local`, the same names) and this one empties the SES mailbox
//! `pipeline.rs` reads votes from, so `cargo test` runs them in turn (binaries
//! run one after another) and `make test` gives this binary a local cloud of
//! its own (`scripts/test-binaries.py --env`: its `LIVE_CI_WORK` and LocalStack
//! port), running it beside `pipeline.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};

use live_ci_e2e::observe::{Metadb, drive};
use live_ci_e2e::repo::SampleRepo;
use live_ci_e2e::vote::Vote;
use live_ci_e2e::{Cloud, Deployment, Merge, REPO_FULL_NAME, send_merge_webhook, work_dir};
use live_ci_github::Job;
use live_ci_testkit::github::{FakeApp, FakeGitHub, FakePullRequest, MergedPull};

const APP_ID: u64 = 424_242;
const INSTALLATION_ID: u64 = 4_343;
/// An open pull request touching a unit: the tasks keep the Merge Lock
/// status on its head while the run holds the lock.
const OPEN_PR: u64 = 77;
const OPEN_PR_HEAD: &str = "0123456789abcdef0123456789abcdef01234567";

fn openssl(args: &[&str], dir: &std::path::Path) -> anyhow::Result<()> {
    let out = std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()?;
    anyhow::ensure!(out.status.success(), "openssl {args:?}: {out:?}");
    Ok(())
}

/// Which rows of the permission table a token request's `permissions` is
/// (trigger-sf and create-deploy-stack share theirs).
fn jobs_of(permissions: &Value) -> Vec<Job> {
    Job::ALL
        .into_iter()
        .filter(|job| Value::Object(job.token_permissions()) == *permissions)
        .collect()
}

#[test]
fn with_a_github_app_a_merge_is_deployed_with_a_down_scoped_token_per_job_and_check_runs() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    rt.block_on(scenario()).unwrap_or_else(|e| panic!("{e:#}"));
}

async fn scenario() -> anyhow::Result<()> {
    let started = Instant::now();
    let keys = tempfile::tempdir()?;
    openssl(
        &["genrsa", "-traditional", "-out", "app-key.pem", "2048"],
        keys.path(),
    )?;
    openssl(
        &["rsa", "-pubout", "-in", "app-key.pem", "-out", "public.pem"],
        keys.path(),
    )?;
    let github = FakeGitHub::start(REPO_FULL_NAME).await;
    github.trust_app(FakeApp {
        app_id: APP_ID,
        installation_id: INSTALLATION_ID,
        public_key_pem: std::fs::read_to_string(keys.path().join("public.pem"))?,
    });
    let (repo, first) = SampleRepo::build(&work_dir().join("e2e/live-repo")).await?;
    let cloud = Cloud::up(false).await?;
    let metadb = cloud.fresh_database("live_ci_e2e_app").await?;
    let deployment = Deployment::apply_with(
        &cloud,
        &metadb,
        &github.url(),
        &repo.dir,
        false,
        false,
        &[
            // As pipeline.rs deploys (the sample merge destroys a unit).
            ("LIVE_CI_ALLOW_DESTROY", "true".to_string()),
            ("LIVE_CI_GITHUB_APP_ID", APP_ID.to_string()),
            (
                "LIVE_CI_GITHUB_APP_INSTALLATION_ID",
                INSTALLATION_ID.to_string(),
            ),
            (
                "LIVE_CI_GITHUB_APP_PRIVATE_KEY_FILE",
                keys.path().join("app-key.pem").display().to_string(),
            ),
        ],
    )
    .await?;
    anyhow::ensure!(
        deployment.outputs["github_app_private_key_ssm_parameter_name"]["value"].is_string(),
        "the deployment has no app key parameter: {}",
        deployment.outputs
    );
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()?;
    cloud.clear_mailbox(&http).await?;
    eprintln!(
        "e2e app setup (cloud + terraform apply): {:?}",
        started.elapsed()
    );

    // New PR numbers per run (Step Functions names carry them; see pipeline.rs).
    let pr_base = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() % 1_000_000)
        * 100;
    let merge = Merge {
        number: pr_base + first.number,
        ..first.clone()
    };
    let files = repo.files(&merge).await?;
    github.add_pull_request(FakePullRequest {
        number: merge.number,
        head_sha: merge.head_sha.clone(),
        base: "main".into(),
        files: files.clone(),
        open: false,
    });
    github.add_merged_pull_request(MergedPull {
        number: merge.number,
        merge_commit_sha: merge.merge_commit.clone(),
        base_ref: "main".into(),
        base_sha: merge.base_sha.clone(),
        head_ref: merge.head_ref.clone(),
        head_sha: merge.head_sha.clone(),
    });
    github.add_pull_request(FakePullRequest {
        number: pr_base + OPEN_PR,
        head_sha: OPEN_PR_HEAD.into(),
        base: "main".into(),
        files,
        open: true,
    });
    let delivery = format!("e2e-app-1-{}", metadb.rsplit('/').next().unwrap_or(""));
    let (status, answer) =
        send_merge_webhook(&http, cloud.endpoint(), &deployment, &merge, &delivery).await?;
    anyhow::ensure!(status == 200, "webhook answered {status}: {answer}");
    assert_eq!(answer["started"], "create-deploy-stack", "{answer}");
    let db = Metadb::connect(&deployment.metadb_url).await?;
    let outcome = drive(
        &db,
        &http,
        cloud.endpoint(),
        &merge.merge_commit,
        Duration::from_secs(900),
        &|_| Vote::Approve,
        &|_, _| {},
    )
    .await?;
    let summary = || {
        outcome
            .run
            .executions
            .iter()
            .map(|e| {
                format!(
                    "{} {} {} {:?}",
                    e.cfg_path, e.action, e.status, e.status_reason
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(outcome.run.status, "succeeded", "{}", summary());
    let by_path = outcome.run.by_path();
    for unit in [
        "shared/us-east-1/network/vpc",
        "dev/us-east-1/app",
        "dev/us-east-1/worker",
    ] {
        let e = by_path
            .get(unit)
            .with_context(|| format!("{unit} not deployed:\n{}", summary()))?;
        assert_eq!(e.status, "succeeded", "{}", summary());
    }
    assert!(
        outcome
            .run
            .executions
            .iter()
            .all(|e| e.status == "succeeded"),
        "{}",
        summary()
    );
    // The final statuses go out beside the task answers: wait for the lock's
    // release on the open pull request, the run's last status.
    let released = wait(Duration::from_secs(60), || {
        github
            .latest_statuses(OPEN_PR_HEAD)
            .get("Merge Lock")
            .is_some_and(|s| s.state == "success")
    })
    .await;
    assert!(released, "statuses: {:#?}", github.statuses());

    // 1. Every installation token: this installation, the live repository
    //    only, and exactly one job's row of the permission table.
    let tokens = github.app_tokens();
    assert_eq!(github.app_refusals(), Vec::<String>::new());
    let mut rows_seen = BTreeSet::new();
    for t in &tokens {
        assert_eq!(t.installation_id, INSTALLATION_ID.to_string(), "{t:?}");
        assert_eq!(
            t.request["repositories"],
            json!(["infrastructure-live"]),
            "{t:?}"
        );
        let jobs = jobs_of(&t.request["permissions"]);
        assert!(!jobs.is_empty(), "a token outside every job's row: {t:?}");
        rows_seen.insert(jobs);
    }
    // The jobs of a merge: the receiver, create-deploy-stack, trigger-sf
    // (whose row is pr-plan's since it writes the deploy comment), terra-run.
    // pr-plan runs for pull requests only.
    let expected: BTreeSet<Vec<Job>> = [
        vec![Job::Receiver],
        vec![Job::TriggerSf, Job::PrPlan],
        vec![Job::CreateDeployStack],
        vec![Job::TerraRun],
    ]
    .into_iter()
    .collect();
    assert_eq!(rows_seen, expected, "{tokens:#?}");
    let job_of_token: BTreeMap<&str, Vec<Job>> = tokens
        .iter()
        .map(|t| (t.token.as_str(), jobs_of(&t.request["permissions"])))
        .collect();

    // 2. No request used a static token: the exchanges and `GET /app` carry
    //    the App's JWT (the fake verified it), everything else one of the
    //    installation tokens, none of which was refused.
    let requests = github.requests().await;
    let mut repository_requests = 0;
    for r in &requests {
        let auth = r
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let bearer = auth.strip_prefix("Bearer ").unwrap_or_default();
        let path = r.url.path();
        if path == "/app" || path.starts_with("/app/installations/") {
            assert_eq!(
                bearer.split('.').count(),
                3,
                "{} {path}: not a jwt",
                r.method
            );
            assert!(tokens.iter().any(|t| t.jwt == bearer) || path == "/app");
        } else {
            repository_requests += 1;
            assert!(
                job_of_token.contains_key(bearer),
                "{} {path} was not sent with an installation token: {auth:?}",
                r.method
            );
        }
    }
    assert!(repository_requests > 0);
    assert_eq!(github.token_refusals(), Vec::<String>::new());

    // 3. The unit statuses are check runs, one per name on the merge commit,
    //    each completed with success; the Merge Lock is a commit status.
    let statuses = github.statuses();
    assert!(!statuses.is_empty(), "the merge lock was never posted");
    for s in &statuses {
        assert_eq!(
            s.context, "Merge Lock",
            "a status that is not the lock: {s:?}"
        );
        assert_eq!(s.sha, OPEN_PR_HEAD);
    }
    let runs: Vec<_> = github
        .check_runs()
        .into_iter()
        .filter(|r| r.current["head_sha"] == merge.merge_commit.as_str())
        .collect();
    let mut names = BTreeMap::new();
    for run in &runs {
        let name = run.current["name"].as_str().unwrap_or_default().to_string();
        assert_eq!(run.current["status"], "completed", "{run:#?}");
        assert_eq!(run.current["conclusion"], "success", "{run:#?}");
        *names.entry(name).or_insert(0) += 1;
    }
    let twice: Vec<_> = names.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "check runs made twice: {twice:?}");
    for (unit, e) in &by_path {
        if e.action == "apply" {
            for phase in ["plan", "apply"] {
                let name = format!("live-ci: {phase} {unit}");
                assert!(names.contains_key(&name), "no {name:?} in {names:?}");
            }
        }
    }
    // Created by the receiver (pending), completed by create-deploy-stack:
    // one check run, edited across jobs.
    let cds = runs
        .iter()
        .find(|r| r.current["name"] == "live-ci: create-deploy-stack")
        .with_context(|| format!("no create-deploy-stack check run: {names:?}"))?;
    assert_eq!(cds.requests[0]["status"], "in_progress", "{cds:#?}");
    assert_eq!(job_of_token[cds.tokens[0].as_str()], vec![Job::Receiver]);
    assert!(
        cds.tokens[1..]
            .iter()
            .all(|t| job_of_token[t.as_str()] == vec![Job::CreateDeployStack]),
        "{cds:#?}"
    );
    assert!(cds.tokens.len() >= 2, "{cds:#?}");
    // terra-run's plan check run carries the unit's plan as terraform shows it.
    let plan = runs
        .iter()
        .find(|r| r.current["name"] == "live-ci: plan dev/us-east-1/worker")
        .with_context(|| format!("no plan check run of the worker: {names:?}"))?;
    let text = plan.current["output"]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("```diff\n"), "{plan:#?}");
    assert!(text.contains("terraform_data.this"), "{text}");

    eprintln!(
        "app scenario: {} units, {} tokens, {} repository requests, {} check runs, in {:?}",
        by_path.len(),
        tokens.len(),
        repository_requests,
        runs.len(),
        started.elapsed()
    );
    Ok(())
}

/// Polls `done` every 250 ms until it holds or `limit` passes.
async fn wait(limit: Duration, done: impl Fn() -> bool) -> bool {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    done()
}
