//! terra-run's plan and apply statuses link the read-only run page: with a
//! personal token each commit status's `target_url`, with an App each check
//! run's `details_url`, as GitHub (the fake) records them, is a run link that
//! verifies with the run-link key for the execution's run.
#![allow(clippy::unwrap_used)]

use live_ci_core::approval::{RUN_LINK_TTL_SECS, RunLinkKey, RunPages};
use live_ci_core::port::ExecutionStore;
use live_ci_core::status::Statuses;
use live_ci_github::{Credentials, GitHubClient, GitHubConfig, Job, RetryPolicy};
use live_ci_task::checkout::Repo;
use live_ci_task::terra_run::{TerraRunPorts, terra_run};
use live_ci_testkit::github::FakeGitHub;

use crate::support;
use crate::support::fakes::{MemArtifacts, RecordingTokens};
use crate::terra_run::{env, setup};

const SECRET: &[u8] = b"a-run-link-key-for-this-test-0123456789";
const BASE: &str = "https://pages.example/run";
const ID: &str = "run-7-x-dev-app-001";

/// Plans the first execution with terra-run posting to a fresh fake GitHub
/// (check runs when `check_runs`), run pages configured; returns the links
/// GitHub kept, in order, and the execution's run.
async fn plan_and_collect_links(check_runs: bool) -> (Vec<Option<String>>, i64) {
    let s = setup().await;
    let github = FakeGitHub::start("acme/live").await;
    let mut client = GitHubClient::new(GitHubConfig {
        api_base: github.url(),
        repository: "acme/live".into(),
        credentials: Credentials::Token("t".into()),
        job: Job::TerraRun,
        retry: RetryPolicy::default(),
    })
    .unwrap();
    if check_runs {
        client = client.with_check_runs();
    }
    let artifacts = MemArtifacts::default();
    let tokens = RecordingTokens::default();
    let sts = support::sts();
    let ports = TerraRunPorts {
        metadb: &s.metadb,
        artifacts: &artifacts,
        tokens: &tokens,
        roles: &sts,
        statuses: Statuses::new(&client, Default::default()),
    };
    let mut config = env(ID, "plan", None, &s.clone_url);
    config.run_pages = Some(RunPages {
        key: RunLinkKey::new(SECRET).unwrap(),
        base_url: BASE.into(),
        ttl_secs: RUN_LINK_TTL_SECS,
    });
    let repo = Repo {
        clone_url: s.clone_url.clone(),
        token: None,
    };
    terra_run(&config, &repo, Some("https://logs/x"), &ports)
        .await
        .unwrap();
    let run_id = s.metadb.execution(ID).await.unwrap().unwrap().run_id;
    let links = if check_runs {
        assert_eq!(github.statuses(), []);
        let runs = github.check_runs();
        assert_eq!(runs.len(), 1, "{runs:#?}");
        assert_eq!(runs[0].current["conclusion"], "success");
        // Its create and its edit each carry the link.
        runs[0]
            .requests
            .iter()
            .map(|r| r["details_url"].as_str().map(str::to_string))
            .collect()
    } else {
        let statuses = github.statuses();
        assert_eq!(statuses.len(), 2, "pending, then success: {statuses:#?}");
        statuses.into_iter().map(|s| s.target_url).collect()
    };
    s.db.drop_db().await;
    (links, run_id)
}

fn assert_run_links(links: &[Option<String>], run_id: i64) {
    let key = RunLinkKey::new(SECRET).unwrap();
    let other = RunLinkKey::new(b"another-key-that-is-long-enough-0123456").unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(!links.is_empty());
    for url in links {
        let url = url
            .as_deref()
            .unwrap_or_else(|| panic!("no link: {links:?}"));
        let token = url
            .strip_prefix(&format!("{BASE}?r="))
            .unwrap_or_else(|| panic!("not a run page link: {url}"));
        let link = key.verify(token, now).unwrap();
        assert_eq!(link.run_id, run_id);
        assert!(link.expires_at <= now + RUN_LINK_TTL_SECS + 5, "{link:?}");
        assert!(other.verify(token, now).is_err(), "{url}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_statuses_link_the_signed_run_page() {
    let (links, run_id) = plan_and_collect_links(false).await;
    assert_run_links(&links, run_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_check_runs_details_link_the_signed_run_page() {
    let (links, run_id) = plan_and_collect_links(true).await;
    assert_run_links(&links, run_id);
}
