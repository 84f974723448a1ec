//! pr-plan with a real git repository (a pull request branch against `main`),
//! real terraform plans, and a recording git host.
#![allow(clippy::unwrap_used)]

use crate::support;

use live_ci_core::status::{StatusState, Statuses, context};
use live_ci_task::checkout::Repo;
use live_ci_task::pr_plan::{COMMENT_MARKER, pr_plan, unit_context};
use support::fakes::{RecordingGitHost, RecordingRoles};
use support::repo::{GitRepo, TfTemplates};

/// pr-plan with every status switched on, no logs link and LocalStack's STS.
async fn plan_pr(
    config: &live_ci_task::PrPlanConfig,
    clone: &Repo,
    github: &RecordingGitHost,
) -> live_ci_task::Result<live_ci_task::pr_plan::PrPlanReport> {
    pr_plan(
        config,
        clone,
        None,
        &Statuses::new(github, Default::default()),
        &support::sts(),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plans_each_affected_unit_posts_statuses_and_one_comment() {
    let repo = GitRepo::new();
    repo.unit("dev/a", "1", &[])
        .unit("dev/b", "2", &["../a"])
        .unit("dev/c", "3", &[]);
    repo.commit("base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.unit("dev/a", "10", &[]);
    let head = repo.commit("change a");
    // Each plan records the credentials it runs with.
    let roles = tempfile::tempdir().unwrap();
    let roles_file = roles.path().join("roles");
    let tf = TfTemplates::new(&format!(
        "echo \"$LIVE_CI_CFG_PATH $AWS_ACCESS_KEY_ID ${{AWS_SESSION_TOKEN:+with-session}}\" >> {}; ",
        roles_file.display()
    ));
    let sts = RecordingRoles::new(support::sts());
    let accounts = r#"[{"name": "dev", "path": "dev", "voters": ["dev@example.com"],
      "min_approval_count": 1, "min_rejection_count": 1,
      "plan_role_arn": "arn:aws:iam::222222222222:role/plan", "apply_role_arn": "arn:aws:iam::222222222222:role/apply"}]"#;
    let github = RecordingGitHost::default();
    let config = support::config(&[
        ("REPO_CLONE_URL", &repo.url()),
        ("LIVE_CI_PR_NUMBER", "12"),
        ("LIVE_CI_COMMIT", &head),
        ("LIVE_CI_BASE_REF", "main"),
        ("PLAN_COMMAND", &tf.plan),
        ("MAX_PARALLEL", "2"),
        ("ACCOUNT_PARENT_CFG", accounts),
    ]);
    let clone = Repo {
        clone_url: repo.url(),
        token: None,
    };
    let report = pr_plan(
        &config,
        &clone,
        Some("https://logs/pr"),
        &Statuses::new(&github, Default::default()),
        &sts,
    )
    .await
    .unwrap();
    let planned: Vec<String> = report.plans.iter().map(|p| p.path.to_string()).collect();
    assert_eq!(planned, vec!["dev/a", "dev/b"], "dev/c is not affected");
    assert_eq!(report.failed(), 0);
    for p in &report.plans {
        let o = p.outcome.as_ref().unwrap();
        assert!(o.has_changes);
        assert_eq!(o.counts.add, 1);
    }
    let statuses = github.statuses();
    for unit in ["dev/a", "dev/b"] {
        let s = statuses
            .iter()
            .find(|s| s.context == unit_context(&live_ci_core::RepoPath::new(unit).unwrap()))
            .unwrap();
        assert_eq!(s.state, StatusState::Success);
        assert_eq!(s.sha, head);
        assert_eq!(s.description, "1 to add, 0 to change, 0 to destroy");
        assert_eq!(s.target_url.as_deref(), Some("https://logs/pr"));
    }
    let overall = statuses
        .iter()
        .find(|s| s.context == context::PR_PLAN)
        .unwrap();
    assert_eq!(overall.state, StatusState::Success);
    let comments = github.comments();
    assert_eq!(comments.len(), 1);
    let body = &comments[&(12, COMMENT_MARKER.to_string())];
    assert!(body.contains("| `dev/a` | changes | 1 | 0 | 0 |"), "{body}");
    assert!(body.contains("| `dev/b` | changes | 1 | 0 | 0 |"), "{body}");
    assert!(!body.contains("dev/c"));
    let mut seen: Vec<String> = std::fs::read_to_string(&roles_file)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    seen.sort();
    // The account's plan role, assumed once for both units in a session
    // naming the pull request, its credentials (not ours) in each plan.
    let calls = sts.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    let (role, session, key) = &calls[0];
    assert_eq!(role, "arn:aws:iam::222222222222:role/plan");
    assert_eq!(session, &format!("live-ci-pr-12-{}", &head[..7]));
    assert_ne!(key, "test");
    assert_eq!(
        seen,
        vec![
            format!("dev/a {key} with-session"),
            format!("dev/b {key} with-session")
        ]
    );
    // Nothing was applied: plans leave the state alone.
    assert!(!tf.state_file("dev/a").exists());

    // A new push that breaks a unit: its status fails, the same comment is updated.
    repo.write(
        "dev/b/main.tf",
        "resource \"terraform_data\" \"this\" {\n  input = var.missing\n}\n",
    );
    let head2 = repo.commit("break b");
    let mut config2 = config.clone();
    config2.commit = head2.clone();
    let report = plan_pr(&config2, &clone, &github).await.unwrap();
    assert_eq!(report.failed(), 1);
    let statuses = github.statuses();
    let b = statuses
        .iter()
        .rfind(|s| s.sha == head2 && s.context.ends_with("dev/b"))
        .unwrap();
    assert_eq!(b.state, StatusState::Failure);
    let comments = github.comments();
    assert_eq!(comments.len(), 1, "updated, not duplicated");
    let body = &comments[&(12, COMMENT_MARKER.to_string())];
    assert!(body.contains("| `dev/b` | failed:"), "{body}");
    assert!(body.contains(&head2[..7]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_unit_graph_fails_the_status_and_says_why_in_the_comment() {
    let repo = GitRepo::new();
    repo.unit("dev/a", "1", &[]);
    repo.commit("base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.write("dev/a/terragrunt.hcl", "include {\n");
    let head = repo.commit("broken");
    let github = RecordingGitHost::default();
    let config = support::config(&[
        ("REPO_CLONE_URL", &repo.url()),
        ("LIVE_CI_PR_NUMBER", "3"),
        ("LIVE_CI_COMMIT", &head),
        ("LIVE_CI_BASE_REF", "refs/heads/main"),
    ]);
    let clone = Repo {
        clone_url: repo.url(),
        token: None,
    };
    let err = plan_pr(&config, &clone, &github).await.unwrap_err();
    assert!(err.to_string().contains("dev/a/terragrunt.hcl:"), "{err}");
    let statuses = github.statuses();
    assert_eq!(statuses.len(), 1);
    assert_eq!(statuses[0].state, StatusState::Failure);
    let comments = github.comments();
    assert!(comments[&(3, COMMENT_MARKER.to_string())].contains("dev/a/terragrunt.hcl:"));
}

/// A pull request that removes a unit: the comment names it (destroyed on
/// merge with `ALLOW_DESTROY`, else not destroyed) and, with it off, the head
/// commit gets the `live-ci: destroy` status the merge commit gets too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_unit_is_named_in_the_comment_and_with_destroy_off_a_status() {
    let repo = GitRepo::new();
    repo.unit("dev/a", "1", &[]).unit("dev/c", "3", &[]);
    repo.commit("base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.git(&["rm", "-rq", "dev/c"]);
    let head = repo.commit("retire c");
    let clone = Repo {
        clone_url: repo.url(),
        token: None,
    };
    let run = |allow: &'static str| {
        let github = RecordingGitHost::default();
        let config = support::config(&[
            ("REPO_CLONE_URL", &repo.url()),
            ("LIVE_CI_PR_NUMBER", "14"),
            ("LIVE_CI_COMMIT", &head),
            ("LIVE_CI_BASE_REF", "main"),
            ("ALLOW_DESTROY", allow),
        ]);
        let clone = clone.clone();
        async move {
            let report = plan_pr(&config, &clone, &github).await.unwrap();
            let body = github.comments()[&(14, COMMENT_MARKER.to_string())].clone();
            (report, body, github.statuses())
        }
    };

    let (report, body, statuses) = run("false").await;
    assert!(report.plans.is_empty());
    assert_eq!(
        report
            .not_destroyed
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>(),
        ["dev/c"]
    );
    assert!(
        body.contains("Removed, **not destroyed** (the module's `allow_destroy` is off"),
        "{body}"
    );
    assert!(body.contains("`dev/c`"), "{body}");
    // Said once, in the pipeline's words, not as the CLI's warning.
    assert!(!body.contains("--allow-destroy"), "{body}");
    let destroy = statuses
        .iter()
        .find(|s| s.context == context::DESTROY)
        .unwrap();
    assert_eq!(
        (
            destroy.sha.as_str(),
            destroy.state,
            destroy.description.as_str()
        ),
        (
            head.as_str(),
            StatusState::Success,
            "not destroyed (allow_destroy is off): dev/c"
        )
    );

    let (report, body, statuses) = run("true").await;
    assert!(report.not_destroyed.is_empty());
    assert_eq!(
        report
            .destroyed_on_merge
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>(),
        ["dev/c"]
    );
    assert!(
        body.contains("Removed, **destroyed** when this merges") && body.contains("`dev/c`"),
        "{body}"
    );
    assert!(!body.contains("not destroyed"), "{body}");
    assert!(!statuses.iter().any(|s| s.context == context::DESTROY));
}

/// Everything from the repository reaches the summary comment as a code span
/// it cannot close: a unit path with backticks, pipes, HTML and a mention, an
/// error whose text tries a second line with a command, a warning. The bot's
/// comment never holds a line that starts a command, a table cell that breaks
/// its row, or live markup.
#[test]
fn the_summary_comment_shows_repository_text_inert() {
    use live_ci_core::RepoPath;
    use live_ci_core::terraform::ChangeCounts;
    use live_ci_task::plans::{PlanOutcome, UnitPlan};
    use live_ci_task::pr_plan::{PrPlanReport, comment};

    let hostile = RepoPath::new("dev/a`|b<img src=x onerror=1>@octo-org/team").unwrap();
    let report = PrPlanReport {
        commit: "0123456789abcdef0123456789abcdef01234567".into(),
        plans: vec![
            UnitPlan {
                path: hostile.clone(),
                outcome: Ok(PlanOutcome {
                    counts: ChangeCounts::default(),
                    has_changes: false,
                    summary: Default::default(),
                }),
            },
            UnitPlan {
                path: RepoPath::new("dev/b").unwrap(),
                outcome: Err("boom | `x` ``y\r/live-ci plan\n/live-ci plan".into()),
            },
        ],
        warnings: vec!["skipped `z`\n/live-ci plan".into()],
        destroyed_on_merge: vec![],
        not_destroyed: vec![hostile],
    };
    let body = comment(&report.commit, None, &report);
    assert!(
        body.contains(
            "| ``dev/a`\\|b<img src=x onerror=1>@octo-org/team`` | `no changes` | 0 | 0 | 0 |"
        ),
        "{body}"
    );
    assert!(
        body.contains(
            "| `dev/b` | failed: ```boom \\| `x` ``y\\u{d}/live-ci plan``` | - | - | - |"
        ),
        "{body}"
    );
    assert!(
        body.contains("(the module's `allow_destroy` is off; their infrastructure stays until someone destroys it): ``dev/a`|b<img src=x onerror=1>@octo-org/team``"),
        "{body}"
    );
    assert!(
        body.contains("> ``skipped `z`\\u{a}/live-ci plan``"),
        "{body}"
    );
    for line in body.lines() {
        assert!(
            !line.trim_start().starts_with("/live-ci"),
            "{line:?} in {body}"
        );
        // every table row has its five cells
        if line.starts_with("| ") {
            let cells = line.replace("\\|", "").matches('|').count();
            assert_eq!(cells, 6, "{line:?}");
        }
    }
}
