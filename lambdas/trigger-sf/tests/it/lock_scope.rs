//! The `units` merge lock scope against a real PostgreSQL metadb and the
//! GitHub client talking to FakeGitHub: while a run deploys, pull requests
//! whose recorded units (pr-plan's comment) share none with the running and
//! queued runs get `Merge Lock` success, an overlapping one stays pending
//! naming the unit until the run holding it ends, and merged disjoint pull
//! requests queue and deploy in trunk order. The `repo` default locks all.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use crate::ports::Wired;
use live_ci_core::merge_lock::{PLAN_COMMENT_MARKER, PullRequestUnits, Scope};
use live_ci_core::port::RunStore;
use live_ci_core::webhook::FilePattern;
use live_ci_metadb::PgMetadb;
use live_ci_testkit::github::{FakeGitHub, FakePullRequest};
use live_ci_testkit::params::MemoryParams;
use live_ci_testkit::pg::{TestDb, exec, run};
use live_ci_trigger_sf::{HandlerConfig, Input};

use crate::deploy_comment::client;
use crate::trigger::{FakeEngine, LOCK, ended, wired};

type Handler = Wired<PgMetadb, FakeEngine, MemoryParams, live_ci_github::GitHubClient>;

const REPO: &str = "acme/live";

async fn handler(t: &TestDb, github: &FakeGitHub, scope: Scope) -> Handler {
    let mut config = HandlerConfig::new(LOCK, FilePattern::new(FilePattern::DEFAULT).unwrap());
    config.merge_lock_scope = scope;
    wired(t, config, client(github)).await
}

fn head(pr: u64) -> String {
    format!("{pr:040x}")
}

/// An open pull request whose pr-plan comment (by `author`) records `units`.
fn planned(github: &FakeGitHub, pr: u64, author: &str, units: &[&str]) {
    github.add_pull_request(FakePullRequest {
        number: pr,
        head_sha: head(pr),
        base: "main".into(),
        files: vec![format!("dev/{pr}/terragrunt.hcl")],
        open: true,
    });
    let record = PullRequestUnits {
        head_sha: head(pr),
        units: units.iter().map(|u| u.to_string()).collect::<BTreeSet<_>>(),
    };
    github.add_comment(
        pr,
        author,
        &format!(
            "{PLAN_COMMENT_MARKER}\n### live-ci plan\n{}\n",
            record.to_comment_line()
        ),
    );
}

/// The newest `Merge Lock` status of `pr`'s head: (state, description).
fn lock_of(github: &FakeGitHub, pr: u64) -> (String, String) {
    let s = github
        .latest_statuses(&head(pr))
        .remove("Merge Lock")
        .unwrap_or_else(|| panic!("no Merge Lock status on #{pr}"));
    (s.state, s.description)
}

/// A started or queued run of `units` (each `dev/<unit>`) merged from `pr`.
async fn merged(h: &Handler, pr: u64, seq: u64, units: &[&str]) -> i64 {
    let execs = units.iter().map(|u| exec(u, "dev", &[])).collect();
    let mut new = run(&format!("merge-{pr}"), 4, execs);
    new.pr_id = pr;
    new.trunk_seq = seq;
    h.metadb.create_run(&new).await.unwrap().run_id
}

#[tokio::test]
async fn disjoint_pull_requests_merge_while_an_overlapping_one_waits() {
    let t = TestDb::new().await;
    let github = FakeGitHub::start(REPO).await;
    let h = handler(&t, &github, Scope::Units).await;
    // Run 1 (PR 30) deploys dev/vpc.
    let first = merged(&h, 30, 1, &["vpc"]).await;
    planned(&github, 31, FakeGitHub::BOT_LOGIN, &["dev/app"]);
    planned(&github, 32, FakeGitHub::BOT_LOGIN, &["dev/dns"]);
    planned(&github, 33, FakeGitHub::BOT_LOGIN, &["dev/db", "dev/vpc"]);
    // Someone else's comment carrying a record does not count.
    planned(&github, 34, "mallory", &["dev/elsewhere"]);

    // The sweep mirrors the lock (the parameter is unset) and refreshes.
    h.handle(&Input::Sweep).await.unwrap();
    assert_eq!(h.params.value(LOCK).as_deref(), Some("30"));
    for pr in [31, 32] {
        assert_eq!(
            lock_of(&github, pr).0,
            "success",
            "#{pr}: {:?}",
            lock_of(&github, pr)
        );
    }
    let (state, why) = lock_of(&github, 33);
    assert_eq!(state, "pending");
    assert!(why.contains("unit dev/vpc "), "{why}");
    let (state, why) = lock_of(&github, 34);
    assert_eq!(state, "pending");
    assert!(why.contains("locked by PR #30"), "{why}");

    // PR 31 merges: its run queues behind run 1 (one run deploys at a time)
    // and its units are busy now, so PR 32 stays free and 33 still waits.
    github.close_pull_request(31);
    let second = merged(&h, 31, 2, &["app"]).await;
    assert_eq!(h.metadb.busy_units().await.unwrap(), ["dev/app", "dev/vpc"]);
    // PR 35 is planned after the lock was taken: the next sweep (the
    // parameter in step, nothing handed over) frees it.
    planned(&github, 35, FakeGitHub::BOT_LOGIN, &["dev/cdn"]);
    h.handle(&Input::Sweep).await.unwrap();
    assert_eq!(lock_of(&github, 32).0, "success");
    assert_eq!(lock_of(&github, 33).0, "pending");
    assert_eq!(lock_of(&github, 35).0, "success");

    // Run 1 ends: run 2 (PR 31) takes the lock and deploys; dev/vpc is free,
    // so PR 33 may merge now; PR 34 (no record of the bot's) still waits.
    h.handle(&Input::Run(first)).await.unwrap();
    let r = h.handle(&ended("vpc", "SUCCEEDED", None)).await.unwrap();
    assert_eq!(r.finished.len(), 1, "{r:?}");
    assert_eq!(h.params.value(LOCK).as_deref(), Some("31"));
    assert_eq!(lock_of(&github, 32).0, "success");
    assert_eq!(
        lock_of(&github, 33).0,
        "success",
        "{:?}",
        lock_of(&github, 33)
    );
    let (state, why) = lock_of(&github, 34);
    assert_eq!(state, "pending");
    assert!(why.contains("locked by PR #31"), "{why}");

    // Run 2 ends: nothing holds the lock, everything may merge.
    let r = h.handle(&ended("app", "SUCCEEDED", None)).await.unwrap();
    assert_eq!(r.finished.len(), 1, "{r:?}");
    assert_eq!(h.params.value(LOCK).as_deref(), Some("none"));
    let _ = second;
    for pr in [32, 33, 34] {
        assert_eq!(lock_of(&github, pr).0, "success", "#{pr}");
    }
    t.drop_db().await;
}

/// The default scope is today's lock: every infrastructure pull request
/// waits while a run holds it, whatever units it records.
#[tokio::test]
async fn the_repo_scope_locks_every_pull_request() {
    let t = TestDb::new().await;
    let github = FakeGitHub::start(REPO).await;
    let h = handler(&t, &github, Scope::default()).await;
    merged(&h, 30, 1, &["vpc"]).await;
    planned(&github, 31, FakeGitHub::BOT_LOGIN, &["dev/app"]);
    h.handle(&Input::Sweep).await.unwrap();
    let (state, why) = lock_of(&github, 31);
    assert_eq!(state, "pending");
    assert!(why.contains("locked by PR #30"), "{why}");
    // And it reads no comment to decide.
    let comment_reads = github
        .requests()
        .await
        .iter()
        .filter(|r| r.url.path().contains("/comments"))
        .count();
    assert_eq!(comment_reads, 0);
    t.drop_db().await;
}
