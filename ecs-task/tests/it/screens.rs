//! The PR plan comment as a reviewer sees it: pr-plan plans real terraform
//! units (one of 1,500 resources, cut to fit; one that updates, destroys and
//! creates against applied state; one with a sensitive value; one whose path
//! holds `<script>` and markdown control characters), the comment GitHub
//! kept (FakeGitHub) is rendered as GitHub renders a comment (testkit's
//! `screens`) and opened in headless Chromium. Screenshots:
//! `target/test-artifacts/ecs-task/pr-comment.png` (as loaded) and
//! `pr-comment-open.png` (every plan opened).
#![allow(clippy::unwrap_used)]

use std::process::Command;

use live_ci_core::status::Statuses;
use live_ci_github::{Credentials, GitHubClient, GitHubConfig, Job, RetryPolicy};
use live_ci_task::checkout::Repo;
use live_ci_task::pr_plan::pr_plan;
use live_ci_testkit::github::FakeGitHub;
use live_ci_testkit::screens;
use serde_json::Value;

use crate::support;
use support::repo::{GitRepo, TfTemplates};

/// A hostile unit directory: HTML, emphasis and a closing code span.
const HOSTILE: &str = "dev/x<script>alert(1)*y*_z_";

const APP_BASE: &str = "terraform {\n  backend \"local\" {}\n}\n\nresource \"terraform_data\" \"old\" {\n  input = \"retired\"\n}\n\nresource \"terraform_data\" \"this\" {\n  input = 1\n}\n";
const APP_HEAD: &str = "terraform {\n  backend \"local\" {}\n}\n\nresource \"terraform_data\" \"this\" {\n  input = 2\n}\n\nresource \"terraform_data\" \"new\" {\n  input = \"fresh\"\n}\n";

/// `dev/app`'s base applied into the state the plans read, from a copy of
/// the unit (terraform's files stay out of the repository).
fn apply_base(tf: &TfTemplates) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.tf"), APP_BASE).unwrap();
    let apply = tf.apply.replace(" {plan_file}", "");
    let out = Command::new("sh")
        .arg("-c")
        .arg(apply)
        .current_dir(dir.path())
        .env("LIVE_CI_CFG_PATH", "dev/app")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn visible(state: &Value, probe: &str) -> bool {
    state["visible"][probe]
        .as_bool()
        .unwrap_or_else(|| panic!("no probe {probe:?}: {state}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_sees_each_plan_folded_coloured_cut_and_repository_text_inert() {
    let repo = GitRepo::new();
    repo.unit("dev/big", "1", &[])
        .unit("dev/secret", "1", &[])
        .unit(HOSTILE, "1", &[])
        .write("dev/app/main.tf", APP_BASE)
        .write("dev/app/terragrunt.hcl", "");
    repo.commit("base");
    let tf = TfTemplates::new("");
    apply_base(&tf);
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.write(
        "dev/big/main.tf",
        "terraform {\n  backend \"local\" {}\n}\n\nresource \"terraform_data\" \"many\" {\n  count = 1500\n  input = count.index\n}\n",
    )
    .write(
        "dev/secret/main.tf",
        "terraform {\n  backend \"local\" {}\n}\n\nvariable \"password\" {\n  type      = string\n  default   = \"hunter2-canary\"\n  sensitive = true\n}\n\nresource \"terraform_data\" \"this\" {\n  input = var.password\n}\n",
    )
    .write("dev/app/main.tf", APP_HEAD)
    .unit(HOSTILE, "2", &[]);
    let head = repo.commit("four plans");
    let github = FakeGitHub::start("acme/live").await;
    let client = GitHubClient::new(GitHubConfig {
        api_base: github.url(),
        repository: "acme/live".into(),
        credentials: Credentials::Token("t".into()),
        job: Job::PrPlan,
        retry: RetryPolicy::default(),
    })
    .unwrap();
    let config = support::config(&[
        ("REPO_CLONE_URL", &repo.url()),
        ("LIVE_CI_PR_NUMBER", "21"),
        ("LIVE_CI_COMMIT", &head),
        ("LIVE_CI_BASE_REF", "main"),
        ("PLAN_COMMAND", &tf.plan),
        ("MAX_PARALLEL", "2"),
    ]);
    let clone = Repo {
        clone_url: repo.url(),
        token: None,
    };
    let logs = "https://logs.example/pr-21";
    let report = pr_plan(
        &config,
        &clone,
        Some(logs),
        &Statuses::new(&client, Default::default()),
        &support::sts(),
    )
    .await
    .unwrap();
    assert_eq!(report.failed(), 0, "{report:#?}");
    let kept = github.comments(21);
    assert_eq!(kept.len(), 1);
    let body = &kept[0].body;

    let dir = screens::artifacts("ecs-task");
    std::fs::write(dir.join("pr-comment.md"), body).unwrap();
    let page = screens::github_page("acme/live#21", "live-ci", &screens::github_html(body));
    let first = "terraform_data.many[0] will be created";
    let cut = "cut to fit GitHub's size limit";
    let seen = screens::open(
        &dir,
        "pr-comment",
        &page,
        &[
            HOSTILE,
            first,
            cut,
            "(sensitive value)",
            "terraform_data.old will be destroyed",
        ],
        true,
    );
    let (closed, open) = (&seen["states"][0], &seen["states"][1]);

    // One collapsible plan per unit, each closed as the comment loads, each
    // open after a click.
    let details = closed["details"].as_array().unwrap();
    assert_eq!(details.len(), 4, "{closed}");
    assert!(
        details
            .iter()
            .all(|d| d["summary"] == "plan" && d["open"] == false),
        "{closed}"
    );
    assert!(
        open["details"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["open"] == true),
        "{open}"
    );
    assert!(!visible(closed, first) && visible(open, first), "{seen}");
    // The cut plan says so, where the whole plan is, once opened.
    assert!(!visible(closed, cut) && visible(open, cut), "{seen}");
    assert!(
        seen["links"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["href"] == logs && l["text"] == "the plan logs"),
        "{seen}"
    );
    // The sensitive value masked as terraform masks it.
    assert!(visible(open, "(sensitive value)"), "{seen}");
    assert!(
        !open["text"].as_str().unwrap().contains("hunter2"),
        "{seen}"
    );
    // The diff block colours terraform's + and - lines.
    let diff = seen["diff"].as_array().unwrap();
    let green = diff
        .iter()
        .find(|s| s["text"].as_str().unwrap().starts_with("+") && s["cls"] == "gi")
        .unwrap_or_else(|| panic!("no + line: {seen}"));
    assert_eq!(green["color"], "rgb(17, 99, 41)", "{green}");
    let red = diff
        .iter()
        .find(|s| s["text"] == "-  - resource \"terraform_data\" \"old\" {")
        .unwrap_or_else(|| panic!("no destroy line: {seen}"));
    assert_eq!(
        (red["cls"].as_str(), red["color"].as_str()),
        (Some("gd"), Some("rgb(130, 7, 30)")),
        "{red}"
    );
    let changed = diff
        .iter()
        .find(|s| s["text"] == "!  ~ resource \"terraform_data\" \"this\" {")
        .unwrap_or_else(|| panic!("no update line: {seen}"));
    assert_eq!(
        (changed["cls"].as_str(), changed["color"].as_str()),
        (Some("gc"), Some("rgb(149, 56, 0)")),
        "{changed}"
    );
    // The hostile path shows as typed, in a code span, and made no element.
    assert!(visible(closed, HOSTILE), "{seen}");
    assert!(
        seen["codes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == HOSTILE),
        "{seen}"
    );
    assert_eq!(seen["scripts"], 0, "{seen}");
    assert!(
        !seen["elements"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e == "script" || e == "em"),
        "{seen}"
    );
    assert_eq!(seen["requests"].as_array().unwrap().len(), 0, "{seen}");
    for shot in ["pr-comment.png", "pr-comment-open.png"] {
        assert!(dir.join(shot).metadata().unwrap().len() > 1000, "{shot}");
    }
}
