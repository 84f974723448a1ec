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
    for unit in ["dev/a", "dev/b"] {
        assert!(
            body.contains(&format!(
                "**`{unit}`**: `1 to add, 0 to change, 0 to destroy`\n<details><summary>plan</summary>\n\n```diff\n"
            )),
            "{body}"
        );
    }
    // terraform's own text, each line behind its diff marker
    assert!(
        body.contains("+  + resource \"terraform_data\" \"this\" {\n"),
        "{body}"
    );
    assert!(
        body.contains(" Plan: 1 to add, 0 to change, 0 to destroy.\n"),
        "{body}"
    );
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
    assert!(body.contains("**`dev/b`**: `failed: "), "{body}");
    assert_eq!(
        body.matches("<details>").count(),
        1,
        "no plan for dev/b: {body}"
    );
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
        lock_units: None,
        commit: "0123456789abcdef0123456789abcdef01234567".into(),
        plans: vec![
            UnitPlan {
                path: hostile.clone(),
                outcome: Ok(PlanOutcome {
                    counts: ChangeCounts::default(),
                    has_changes: false,
                    summary: Default::default(),
                    text: None,
                    policy_denials: vec![],
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
        excluded: vec![],
    };
    let body = comment(&report.commit, None, &report);
    assert!(
        body.contains("**``dev/a`|b<img src=x onerror=1>@octo-org/team``**: `no changes`\n"),
        "{body}"
    );
    assert!(
        body.contains(
            "**`dev/b`**: ```failed: boom | `x` ``y\\u{d}/live-ci plan\\u{a}/live-ci plan```\n"
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
    }
}

/// Real plans in the comment, sent to the GitHub fake (which refuses a body
/// over 65,536 characters with 422, as GitHub does): a unit of 5,000
/// resources (`terraform_data`, count = 5000), cut to fit with a note of
/// what was cut and where the whole plan is, and a unit with a sensitive
/// value, whole, the value masked as terraform masks it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_comment_shows_each_plan_fitted_to_githubs_limit_with_sensitive_values_masked() {
    use live_ci_github::{Credentials, GitHubClient, GitHubConfig, Job, RetryPolicy};
    use live_ci_task::pr_plan::comment;
    use live_ci_testkit::github::FakeGitHub;

    let repo = GitRepo::new();
    repo.unit("dev/big", "1", &[]).unit("dev/secret", "1", &[]);
    repo.commit("base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.write(
        "dev/big/main.tf",
        "terraform {\n  backend \"local\" {}\n}\n\nresource \"terraform_data\" \"many\" {\n  count = 5000\n  input = count.index\n}\n",
    );
    repo.write(
        "dev/secret/main.tf",
        "terraform {\n  backend \"local\" {}\n}\n\nvariable \"password\" {\n  type      = string\n  default   = \"hunter2-canary\"\n  sensitive = true\n}\n\nresource \"terraform_data\" \"this\" {\n  input = var.password\n}\n",
    );
    let head = repo.commit("5000 resources and a secret");
    let tf = TfTemplates::new("");
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
    let big = report.plans[0].outcome.as_ref().unwrap();
    assert_eq!(big.counts.add, 5000);
    let big_text = big.text.as_deref().unwrap();
    assert!(big_text.len() > 900_000, "{}", big_text.len());

    // Exactly the body pr-plan rendered was sent, once, and GitHub kept it.
    let expected = comment(&head, Some(logs), &report);
    let posts: Vec<serde_json::Value> = github
        .requests()
        .await
        .iter()
        .filter(|r| r.method.as_str() == "POST" && r.url.path().ends_with("/issues/21/comments"))
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    assert_eq!(posts, [serde_json::json!({ "body": expected })]);
    let kept = github.comments(21);
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].body, expected);
    let body = expected;
    let chars = body.chars().count();
    assert!(
        (60_000..=65_536).contains(&chars),
        "{chars} characters: within the limit, the room used"
    );
    // The secret's plan whole, its value masked; the big one cut, saying so.
    assert!(
        body.contains("**`dev/secret`**: `1 to add, 0 to change, 0 to destroy`\n"),
        "{body}"
    );
    assert!(
        body.contains("+      + input  = (sensitive value)\n"),
        "{body}"
    );
    assert!(!body.contains("hunter2"), "{body}");
    assert!(
        body.contains("**`dev/big`**: `5000 to add, 0 to change, 0 to destroy`\n"),
        "{body}"
    );
    assert!(
        body.contains("+  # terraform_data.many[0] will be created\n")
            || body.contains(" # terraform_data.many[0] will be created\n"),
        "{body}"
    );
    let note = body
        .lines()
        .find(|l| l.contains("cut to fit"))
        .unwrap_or_else(|| panic!("{body}"));
    let lines = big_text.lines().count();
    assert!(
        note.starts_with("… ")
            && note.contains(&format!(" of {lines} lines) cut to fit GitHub's size limit: the whole plan is in [the plan logs]({logs}).")),
        "{note}"
    );
    assert_eq!(
        body.matches("cut to fit").count(),
        1,
        "only the longest plan is cut"
    );
    assert!(!body.contains("terraform_data.many[4999]"));
}

/// The merge lock's record in pr-plan's comment (`merge_lock_scope =
/// "units"`): the head commit and the changed units closed over their
/// dependencies and dependents at the head, never over siblings. dev/d's
/// dropped edge to dev/c is not followed: a run changing dev/c lists dev/d
/// among its own units (see `lock_units`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_comment_records_the_pull_requests_unit_closure_for_its_head() {
    let repo = GitRepo::new();
    repo.unit("dev/a", "1", &[])
        .unit("dev/b", "2", &["../a"])
        .unit("dev/f", "3", &["../a"])
        .unit("dev/c", "4", &[])
        .unit("dev/d", "5", &["../c"])
        .unit("dev/g", "6", &[]);
    repo.commit("base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.unit("dev/b", "20", &["../a"]);
    // dev/d drops its dependency on dev/c.
    repo.unit("dev/d", "5", &[]);
    let head = repo.commit("change b, cut d from c");
    let tf = TfTemplates::new("");
    let github = RecordingGitHost::default();
    let config = support::config(&[
        ("REPO_CLONE_URL", &repo.url()),
        ("LIVE_CI_PR_NUMBER", "41"),
        ("LIVE_CI_COMMIT", &head),
        ("LIVE_CI_BASE_REF", "main"),
        ("PLAN_COMMAND", &tf.plan),
        ("MERGE_LOCK_SCOPE", "units"),
    ]);
    let clone = Repo {
        clone_url: repo.url(),
        token: None,
    };
    let report = plan_pr(&config, &clone, &github).await.unwrap();
    let recorded = report.lock_units.clone().unwrap();
    let comments = github.comments();
    let body = &comments[&(41, COMMENT_MARKER.to_string())];
    let record = live_ci_core::merge_lock::PullRequestUnits::from_comment(body)
        .unwrap_or_else(|| panic!("no lock-units record in the comment: {body}"));
    assert_eq!(record, recorded);
    assert_eq!(record.head_sha, head);
    let units: Vec<&str> = record.units.iter().map(String::as_str).collect();
    assert_eq!(
        units,
        ["dev/a", "dev/b", "dev/d"],
        "not dev/f (a sibling of dev/b), dev/c (cut at the head) nor dev/g"
    );
}
