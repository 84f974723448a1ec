//! Policy checks (`POLICY_DIR`) with real Rego policies on real terraform
//! plans (the offline AWS provider, no AWS call: nothing is refreshed), in
//! pr-plan and in terra-run's plan phase: a denial fails the unit with the
//! rule's message, the trunk before the change judges (never the change's own
//! policy files), and a policy that does not parse stops everything before
//! any plan runs, naming its file and line.
#![allow(clippy::unwrap_used)]

use crate::support;

use live_ci_core::RepoPath;
use live_ci_core::port::{ExecutionStore, RunStore};
use live_ci_core::status::{StatusState, Statuses, context};
use live_ci_task::checkout::Repo;
use live_ci_task::pr_plan::{COMMENT_MARKER, pr_plan, unit_context};
use live_ci_task::terra_run::{TerraRunPorts, terra_run};
use live_ci_task::{TaskError, TerraRunConfig};
use support::fakes::{MemArtifacts, RecordingGitHost, RecordingTokens, Sent};
use support::pg::{TestDb, exec, run};
use support::repo::{GitRepo, TfTemplates};

/// Denies every IAM user.
const DENY_IAM_USER: &str = r#"package live_ci.iam

deny contains msg if {
    some rc in input.resource_changes
    rc.type == "aws_iam_user"
    msg := sprintf("%s: IAM users are not allowed, use roles", [rc.address])
}
"#;

/// Every created or updated resource that takes tags has an `owner` tag.
const REQUIRE_OWNER_TAG: &str = r#"package live_ci.tags

deny contains msg if {
    some rc in input.resource_changes
    some action in rc.change.actions
    action in {"create", "update"}
    "tags" in object.keys(rc.change.after)
    not rc.change.after.tags.owner
    msg := sprintf("%s: the tag \"owner\" is required", [rc.address])
}
"#;

/// The offline mirror of the AWS provider (`scripts/terraformrc`).
fn terraformrc() -> String {
    format!("{}/../scripts/terraformrc", env!("CARGO_MANIFEST_DIR"))
}

/// A unit of AWS resources (`body`), with fake credentials and no AWS call.
fn aws_unit(repo: &GitRepo, dir: &str, body: &str) {
    repo.write(
        &format!("{dir}/main.tf"),
        &format!(
            r#"terraform {{
  backend "local" {{}}
}}

provider "aws" {{
  region                      = "eu-west-1"
  access_key                  = "test"
  secret_key                  = "test"
  skip_credentials_validation = true
  skip_requesting_account_id  = true
  skip_metadata_api_check     = true
}}

{body}
"#
        ),
    );
    repo.write(&format!("{dir}/terragrunt.hcl"), "");
}

const USER_WITHOUT_OWNER: &str = "resource \"aws_iam_user\" \"bob\" {\n  name = \"bob\"\n}\n";
const BUCKET_WITH_OWNER: &str =
    "resource \"aws_s3_bucket\" \"b\" {\n  bucket = \"b\"\n  tags   = { owner = \"team-a\" }\n}\n";

/// Plan templates through the offline provider mirror; each plan first
/// leaves its unit's name in `ran` (so a test sees which plans ran).
fn templates(ran: &std::path::Path) -> TfTemplates {
    TfTemplates::new(&format!(
        "echo \"$LIVE_CI_CFG_PATH\" >> {}; export TF_CLI_CONFIG_FILE={}; ",
        ran.display(),
        terraformrc()
    ))
}

fn pr_config(repo: &GitRepo, head: &str, tf: &TfTemplates) -> live_ci_task::PrPlanConfig {
    support::config(&[
        ("REPO_CLONE_URL", &repo.url()),
        ("LIVE_CI_PR_NUMBER", "12"),
        ("LIVE_CI_COMMIT", head),
        ("LIVE_CI_BASE_REF", "main"),
        ("PLAN_COMMAND", &tf.plan),
        ("MAX_PARALLEL", "2"),
        ("POLICY_DIR", "policy/"),
    ])
}

/// The trunk denies IAM users and requires an `owner` tag; the pull request
/// adds a user without one and a tagged bucket, and rewrites the policy to
/// allow everything. The trunk's policy judges: the user's unit fails with
/// both rules' messages (status and comment), the bucket's passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denial_fails_the_unit_on_the_pull_request_and_the_base_judges() {
    let repo = GitRepo::new();
    repo.write("policy/iam.rego", DENY_IAM_USER)
        .write("policy/tags.rego", REQUIRE_OWNER_TAG)
        .write("README.md", "live\n");
    repo.commit("policies");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    aws_unit(&repo, "dev/users", USER_WITHOUT_OWNER);
    aws_unit(&repo, "dev/bucket", BUCKET_WITH_OWNER);
    // The change's own policy files do not judge it.
    repo.write("policy/iam.rego", "package live_ci.iam\n\ndeny := set()\n")
        .write("policy/tags.rego", "package live_ci.tags\n");
    let head = repo.commit("a user and a bucket; policies loosened");
    let ran = tempfile::tempdir().unwrap();
    let tf = templates(&ran.path().join("ran"));
    let github = RecordingGitHost::default();
    let clone = Repo {
        clone_url: repo.url(),
        token: None,
    };
    let report = pr_plan(
        &pr_config(&repo, &head, &tf),
        &clone,
        None,
        &Statuses::new(&github, Default::default()),
        &support::sts(),
    )
    .await
    .unwrap();
    let outcome = |unit: &str| {
        report
            .plans
            .iter()
            .find(|p| p.path.as_str() == unit)
            .unwrap()
            .outcome
            .clone()
    };
    let denied = outcome("dev/users").unwrap_err();
    assert_eq!(
        denied,
        "denied by policy: data.live_ci.iam.deny: aws_iam_user.bob: IAM users are not allowed, use roles; \
         data.live_ci.tags.deny: aws_iam_user.bob: the tag \"owner\" is required"
    );
    let bucket = outcome("dev/bucket").unwrap();
    assert_eq!(bucket.counts.add, 1);
    assert_eq!(report.failed(), 1);
    let statuses = github.statuses();
    let users = statuses
        .iter()
        .find(|s| s.context == unit_context(&RepoPath::new("dev/users").unwrap()))
        .unwrap();
    assert_eq!(users.state, StatusState::Failure);
    // GitHub's 140 characters: the rule's message begins the description.
    assert!(
        users.description.starts_with(
            "denied by policy: data.live_ci.iam.deny: aws_iam_user.bob: IAM users are not allowed"
        ),
        "{}",
        users.description
    );
    let overall = statuses
        .iter()
        .find(|s| s.context == context::PR_PLAN)
        .unwrap();
    assert_eq!(overall.state, StatusState::Failure);
    let comments = github.comments();
    let body = &comments[&(12, COMMENT_MARKER.to_string())];
    assert!(
        body.contains("**`dev/users`**: `failed: denied by policy: data.live_ci.iam.deny: aws_iam_user.bob: IAM users are not allowed, use roles;"),
        "{body}"
    );
    assert!(body.contains("the tag \"owner\" is required`"), "{body}");
}

/// A policy that does not parse fails pr-plan before any plan runs, naming
/// the file and the line, on the status and in the comment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_that_does_not_parse_stops_pr_plan_before_any_plan() {
    let repo = GitRepo::new();
    repo.write("policy/iam.rego", DENY_IAM_USER).write(
        "policy/broken.rego",
        "package live_ci.broken\n\ndeny contains msg if {\n    msg := \n}\n",
    );
    repo.commit("policies");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    aws_unit(&repo, "dev/bucket", BUCKET_WITH_OWNER);
    let head = repo.commit("a bucket");
    let ran = tempfile::tempdir().unwrap();
    let ran_file = ran.path().join("ran");
    let tf = templates(&ran_file);
    let github = RecordingGitHost::default();
    let clone = Repo {
        clone_url: repo.url(),
        token: None,
    };
    let err = pr_plan(
        &pr_config(&repo, &head, &tf),
        &clone,
        None,
        &Statuses::new(&github, Default::default()),
        &support::sts(),
    )
    .await
    .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, TaskError::Policy { .. }), "{text}");
    assert!(
        text.contains("policy \"policy/broken.rego\" line 4 does not parse: "),
        "{text}"
    );
    assert!(!ran_file.exists(), "no plan ran");
    let statuses = github.statuses();
    let overall = statuses
        .iter()
        .find(|s| s.context == context::PR_PLAN)
        .unwrap();
    assert_eq!(overall.state, StatusState::Failure);
    assert!(
        overall.description.contains("policy/broken.rego"),
        "{}",
        overall.description
    );
    let comments = github.comments();
    let body = &comments[&(12, COMMENT_MARKER.to_string())];
    assert!(body.contains("policy/broken.rego"), "{body}");
    // Said as what it is, not as a detection failure.
    assert!(
        body.contains("The policies failed to load: ``the trunk's policies (")
            && body.contains("policy \"policy/broken.rego\" line 4 does not parse"),
        "{body}"
    );
    assert!(!body.contains("could not be found"), "{body}");
}

/// One run of `commit` (unit `dev/app`) whose base commit is `base_sha`,
/// its execution claimed, and terra-run's plan phase of it with
/// `POLICY_DIR=policy`.
async fn terra_plan(
    repo: &GitRepo,
    base_sha: &str,
    commit: &str,
    tf: &TfTemplates,
) -> (
    TaskError,
    Vec<Sent>,
    RecordingGitHost,
    Option<live_ci_core::port::SavedPlan>,
) {
    let (result, sent, github, saved, db) = terra_plan_with(repo, base_sha, commit, tf, &[]).await;
    db.drop_db().await;
    (result.unwrap_err(), sent, github, saved)
}

/// [`terra_plan`] with more of the task's environment (`extra`), answering
/// the phase's result and keeping the database (the caller drops it).
async fn terra_plan_with(
    repo: &GitRepo,
    base_sha: &str,
    commit: &str,
    tf: &TfTemplates,
    extra: &[(&str, &str)],
) -> (
    Result<live_ci_task::terra_run::TerraRunResult, TaskError>,
    Vec<Sent>,
    RecordingGitHost,
    Option<live_ci_core::port::SavedPlan>,
    TestDb,
) {
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let id = "run-7-x-dev-app-001";
    let mut e = exec(id, "dev", &[]);
    e.cfg_path = RepoPath::new("dev/app").unwrap();
    e.plan_command = tf.plan.clone();
    e.apply_command = tf.apply.clone();
    let mut r = run(commit, 1, vec![e]);
    r.base_sha = base_sha.to_string();
    let run_id = metadb.create_run(&r).await.unwrap().run_id;
    assert_eq!(metadb.claim_ready(run_id, 10).await.unwrap().len(), 1);
    let tokens = RecordingTokens::default();
    let artifacts = MemArtifacts::default();
    let github = RecordingGitHost::default();
    let sts = support::sts();
    let ports = TerraRunPorts {
        metadb: &metadb,
        artifacts: &artifacts,
        tokens: &tokens,
        roles: &sts,
        statuses: Statuses::new(&github, Default::default()),
    };
    let clone = Repo {
        clone_url: repo.url(),
        token: None,
    };
    let url = repo.url();
    let mut pairs = vec![
        ("LIVE_CI_PHASE", "plan"),
        ("LIVE_CI_TASK_TOKEN", "token-1"),
        ("LIVE_CI_EXECUTION_ID", id),
        ("LIVE_CI_CFG_PATH", "dev/app"),
        ("LIVE_CI_ROLE_ARN", "arn:aws:iam::111111111111:role/plan"),
        ("HEARTBEAT_SECONDS", "1"),
        ("REPO_CLONE_URL", &url),
        ("POLICY_DIR", "policy"),
    ];
    pairs.extend_from_slice(extra);
    let config: TerraRunConfig = support::config(&pairs);
    let result = terra_run(&config, &clone, None, &ports).await;
    let saved = metadb.saved_plan(id).await.unwrap();
    (result, tokens.take(), github, saved, db)
}

/// A base with the IAM policy, and a commit after it that adds an IAM user
/// and loosens the policy; `(base, commit)`.
fn user_after_policy(repo: &GitRepo) -> (String, String) {
    repo.write("policy/iam.rego", DENY_IAM_USER)
        .write("README.md", "live\n");
    let base = repo.commit("policies");
    aws_unit(repo, "dev/app", USER_WITHOUT_OWNER);
    repo.write("policy/iam.rego", "package live_ci.iam\n");
    let commit = repo.commit("a user; policy loosened");
    (base, commit)
}

/// terra-run's plan phase: the run's base commit holds the policy; the run's
/// commit adds an IAM user (and loosens the policy). The plan fails
/// (`PolicyDenied`, the rule's message as the cause and on the status)
/// before the plan is recorded, so nothing goes to the vote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terra_runs_plan_phase_fails_on_a_denial_of_the_base_policy() {
    let repo = GitRepo::new();
    let (base, commit) = user_after_policy(&repo);
    let ran = tempfile::tempdir().unwrap();
    let ran_file = ran.path().join("ran");
    let tf = templates(&ran_file);
    let (err, mut sent, github, saved) = terra_plan(&repo, &base, &commit, &tf).await;
    let message = "dev/app: denied by policy: data.live_ci.iam.deny: aws_iam_user.bob: IAM users are not allowed, use roles";
    assert_eq!(err.to_string(), message);
    assert_eq!(sent.len(), 1);
    let Sent::Failure { error, cause, .. } = sent.remove(0) else {
        panic!("expected a failure")
    };
    assert_eq!(error, "PolicyDenied");
    assert_eq!(cause, message);
    let status = github
        .statuses()
        .into_iter()
        .rfind(|s| s.context.contains("dev/app"))
        .unwrap();
    assert_eq!(status.state, StatusState::Failure);
    assert_eq!(status.description, message);
    // The plan ran, and was not recorded: nothing for the voters.
    assert!(
        std::fs::read_to_string(&ran_file)
            .unwrap()
            .contains("dev/app")
    );
    assert_eq!(saved, None);
}

/// A broken policy at the run's base stops the plan phase before the plan
/// command runs, naming the file and line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terra_runs_plan_phase_stops_on_a_broken_base_policy_before_planning() {
    let repo = GitRepo::new();
    let (base, _) = user_after_policy(&repo);
    repo.git(&["checkout", "-q", "-b", "broken", &base]);
    repo.write(
        "policy/broken.rego",
        "package live_ci.broken\n\ndeny contains msg if {\n    msg := \n}\n",
    );
    let broken_base = repo.commit("a broken policy");
    aws_unit(&repo, "dev/app", BUCKET_WITH_OWNER);
    let commit = repo.commit("a bucket");
    let ran = tempfile::tempdir().unwrap();
    let ran_file = ran.path().join("ran");
    let tf = templates(&ran_file);
    let (err, sent, _, saved) = terra_plan(&repo, &broken_base, &commit, &tf).await;
    let text = err.to_string();
    assert!(
        text.contains("policy \"policy/broken.rego\" line 4 does not parse: "),
        "{text}"
    );
    assert!(matches!(&sent[..], [Sent::Failure { error, .. }] if error == "PolicyDenied"));
    assert!(!ran_file.exists(), "no plan ran");
    assert_eq!(saved, None);
}

/// The execution id [`terra_plan_with`] plans.
const EXEC_ID: &str = "run-7-x-dev-app-001";

/// `POLICY_OVERRIDE=true`: the base's policy denies the run's IAM user, and
/// the plan goes to the vote anyway: the plan is recorded, the result
/// carries the denial (the mail shows it), the metadb records it for the
/// vote, the approval page's view and the run page. An approve without a
/// reason is refused with nothing recorded; with one it counts, the reason
/// stored beside the vote. A reject needs none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_override_a_denied_plan_goes_to_the_vote_and_an_approve_needs_a_reason() {
    use live_ci_core::deploy::Vote;
    use live_ci_core::port::{ApprovalStore, Ballot, NewApprovalRequest};
    let repo = GitRepo::new();
    let (base, commit) = user_after_policy(&repo);
    let ran = tempfile::tempdir().unwrap();
    let tf = templates(&ran.path().join("ran"));
    let (result, sent, _github, saved, db) =
        terra_plan_with(&repo, &base, &commit, &tf, &[("POLICY_OVERRIDE", "true")]).await;
    let denial =
        "data.live_ci.iam.deny: aws_iam_user.bob: IAM users are not allowed, use roles".to_string();
    let Ok(live_ci_task::terra_run::TerraRunResult::Plan(plan)) = result else {
        panic!("{result:?}")
    };
    assert_eq!(plan.policy_denials, std::slice::from_ref(&denial));
    assert!(matches!(&sent[..], [Sent::Success { .. }]), "{sent:?}");
    let saved = saved.expect("the plan is recorded for the vote");
    let metadb = db.metadb(2).await;
    // The approval request the state machine's next state stores.
    let hash = "ab".repeat(32);
    metadb
        .store_approval_request(&NewApprovalRequest {
            execution_id: EXEC_ID.into(),
            sfn_execution_arn: "arn:aws:states:eu-west-1:1:execution:sm:x".into(),
            task_token_ciphertext: "ciphertext".into(),
            task_token_hash: hash.clone(),
            to_add: 1,
            to_change: 0,
            to_destroy: 0,
            plan_summary: "1 to add".into(),
            logs_url: "https://logs".into(),
            expires_at: i64::try_from(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_millis(),
            )
            .unwrap()
                + 86_400_000,
        })
        .await
        .unwrap();
    let view = metadb.vote_view(EXEC_ID).await.unwrap().unwrap();
    assert_eq!(view.policy_denials, std::slice::from_ref(&denial));
    assert!(!saved.sha256.is_empty());
    let ballot = |voter, vote, reason| Ballot {
        execution_id: EXEC_ID,
        voter,
        vote,
        task_token_hash: &hash,
        lease_secs: 30,
        reason,
        channel: live_ci_core::port::VoteChannel::Mail,
        github_login: None,
    };
    for blank in [None, Some(""), Some("   ")] {
        let refused = metadb
            .vote(&ballot("a@example.com", Vote::Approve, blank))
            .await
            .unwrap()
            .unwrap();
        assert!(refused.reason_required, "{blank:?}");
        assert_eq!(refused.cast, None);
    }
    let tally = metadb.tally(EXEC_ID).await.unwrap().unwrap();
    assert!(
        tally.approval_voters.is_empty(),
        "nothing recorded: {tally:?}"
    );
    let counted = metadb
        .vote(&ballot(
            "a@example.com",
            Vote::Approve,
            Some("  accepted: the user is removed in INC-42  "),
        ))
        .await
        .unwrap()
        .unwrap();
    assert!(!counted.reason_required);
    let cast = counted.cast.unwrap();
    assert!(cast.recorded);
    assert_eq!(cast.tally.approval_voters, ["a@example.com"]);
    // A reject needs no reason (and it decides: one rejection is enough).
    let rejected = metadb
        .vote(&ballot("b@example.com", Vote::Reject, None))
        .await
        .unwrap()
        .unwrap();
    assert!(rejected.cast.unwrap().recorded);
    let run = view.execution.run_id;
    let page = metadb.run_view(run, 10).await.unwrap().unwrap();
    let unit = &page.units[0];
    assert_eq!(unit.policy_denials, std::slice::from_ref(&denial));
    let reasons: Vec<(String, Option<String>)> = unit
        .votes
        .iter()
        .map(|v| (v.voter.clone(), v.reason.clone()))
        .collect();
    assert_eq!(
        reasons,
        [
            (
                "a@example.com".to_string(),
                Some("accepted: the user is removed in INC-42".to_string())
            ),
            ("b@example.com".to_string(), None)
        ]
    );
    let html = page.to_html(0);
    assert!(html.contains("Denied by policy"), "{html}");
    assert!(
        html.contains("accepted: the user is removed in INC-42"),
        "{html}"
    );
    db.drop_db().await;
}

/// `POLICY_COMMAND` in pr-plan: a shell script judging the plan's JSON file
/// (here: no IAM user), run as the plan ran (it sees the unit's
/// `LIVE_CI_CFG_PATH`). A non-zero exit denies with the output's tail; exit
/// 0 passes. With `POLICY_OVERRIDE` on, the denial is overridable: the unit
/// passes, the comment and status say so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_command_denies_and_passes_on_the_pull_request() {
    let repo = GitRepo::new();
    repo.write("README.md", "live\n");
    repo.commit("trunk");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    aws_unit(&repo, "dev/users", USER_WITHOUT_OWNER);
    aws_unit(&repo, "dev/bucket", BUCKET_WITH_OWNER);
    let head = repo.commit("a user and a bucket");
    let tools = tempfile::tempdir().unwrap();
    let script = tools.path().join("no-iam-users.sh");
    let seen = tools.path().join("seen");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$LIVE_CI_CFG_PATH $1\" >> {seen:?}\n\
             if grep -q '\"type\":\"aws_iam_user\"' \"$1\"; then\n  echo 'checking...'\n  \
             echo \"FAILED: <b>IAM user</b> in $LIVE_CI_CFG_PATH\"\n  exit 1\nfi\necho passed\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let command = format!("{} {{plan_json}}", script.display());
    let ran = tempfile::tempdir().unwrap();
    let tf = templates(&ran.path().join("ran"));
    for override_on in [false, true] {
        let github = RecordingGitHost::default();
        let clone = Repo {
            clone_url: repo.url(),
            token: None,
        };
        let mut config = pr_config(&repo, &head, &tf);
        config.common.policy_dir = None;
        config.common.policy_command =
            Some(live_ci_core::policy::PolicyCommand::new(&command).unwrap());
        config.common.policy_override = override_on;
        let report = pr_plan(
            &config,
            &clone,
            None,
            &Statuses::new(&github, Default::default()),
            &support::sts(),
        )
        .await
        .unwrap();
        let outcome = |unit: &str| {
            report
                .plans
                .iter()
                .find(|p| p.path.as_str() == unit)
                .unwrap()
                .outcome
                .clone()
        };
        let message =
            "policy_command: exit code 1: checking... / FAILED: <b>IAM user</b> in dev/users";
        let bucket = outcome("dev/bucket").unwrap();
        assert!(bucket.policy_denials.is_empty());
        let comments = github.comments();
        let body = &comments[&(12, COMMENT_MARKER.to_string())];
        if override_on {
            let users = outcome("dev/users").unwrap();
            assert_eq!(users.policy_denials, [message]);
            assert_eq!(report.failed(), 0);
            assert!(
                body.contains(&format!(
                    "denied by policy (voters may override with a reason): {message}"
                )),
                "{body}"
            );
            let status = github
                .statuses()
                .into_iter()
                .find(|s| s.context == unit_context(&RepoPath::new("dev/users").unwrap()))
                .unwrap();
            assert_eq!(status.state, StatusState::Success);
            assert!(
                status.description.starts_with(
                    "denied by policy (voters may override with a reason): policy_command"
                ),
                "{}",
                status.description
            );
        } else {
            assert_eq!(
                outcome("dev/users").unwrap_err(),
                format!("denied by policy: {message}")
            );
            assert_eq!(report.failed(), 1);
            assert!(
                body.contains(&format!("failed: denied by policy: {message}")),
                "{body}"
            );
        }
    }
    let seen = std::fs::read_to_string(&seen).unwrap();
    assert_eq!(seen.lines().count(), 4, "{seen}");
    assert!(seen.lines().all(|l| l.ends_with(".plan.json")), "{seen}");
    assert!(
        seen.contains("dev/users ") && seen.contains("dev/bucket "),
        "{seen}"
    );
}

/// A policy command that cannot run (not found: the shell's 127) fails the
/// unit naming the command, even with the override on: nothing judged the
/// plan, so nothing can be overridden. In terra-run nothing is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_command_that_cannot_run_fails_the_unit_even_with_the_override() {
    let repo = GitRepo::new();
    let (base, commit) = user_after_policy(&repo);
    let ran = tempfile::tempdir().unwrap();
    let tf = templates(&ran.path().join("ran"));
    let (result, sent, _github, saved, db) = terra_plan_with(
        &repo,
        &base,
        &commit,
        &tf,
        &[
            ("POLICY_OVERRIDE", "true"),
            ("POLICY_COMMAND", "/nonexistent/checker -f {plan_json}"),
        ],
    )
    .await;
    db.drop_db().await;
    let text = result.unwrap_err().to_string();
    assert!(
        text.starts_with("dev/app: the policy command \"/nonexistent/checker -f "),
        "{text}"
    );
    assert!(
        text.contains("could not judge the plan: exit code 127 (not found or not executable)"),
        "{text}"
    );
    assert!(matches!(&sent[..], [Sent::Failure { error, .. }] if error == "PolicyDenied"));
    assert_eq!(saved, None);
}
