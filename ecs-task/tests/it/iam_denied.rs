//! A denied call surfaces naming role, action and resource (issue 28, item 5)
//! for each subcommand of the task: create-deploy-stack (its trigger-sf invoke),
//! pr-plan (the account's plan role), terra-run (the saved plan's upload). Each
//! runs with the real AWS adapter on a session of a role the test made, whose
//! policy lacks (or explicitly denies) that one call; the local cloud's IAM
//! refuses it and the test asserts AWS's own text where the component reports
//! it — the error, the failed commit status, the task token's failure cause —
//! within seconds (no hang, no retry loop).
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use crate::support;

use live_ci_aws::{LambdaInvoker, S3ArtifactStore, StsRoleAssumer};
use live_ci_core::status::{NoGitHost, StatusState, Statuses};
use live_ci_task::checkout::Repo;
use live_ci_task::create_deploy_stack::{Wiring, create_deploy_stack};
use live_ci_task::pr_plan::pr_plan;
use live_ci_task::terra_run::{TerraRunPorts, terra_run};
use live_ci_testkit::aws::{iam_enforced, role_session};
use support::fakes::{MemArtifacts, MemoryParams, RecordingGitHost, RecordingTokens, Sent};
use support::repo::{GitRepo, TfTemplates};

/// The local cloud's endpoint, or None (the test is skipped) when it does not
/// enforce IAM.
async fn enforcing() -> Option<String> {
    let endpoint = live_ci_testkit::localstack_endpoint().unwrap();
    if iam_enforced(&endpoint).await {
        Some(endpoint)
    } else {
        eprintln!("skipping: the local cloud does not enforce IAM");
        None
    }
}

/// A session of a new role with `policy`; (the session's ARN prefix as AWS's
/// denial names it, the SDK config).
async fn session(endpoint: &str, name: &str, policy: &str) -> (String, aws_config::SdkConfig) {
    let role = live_ci_testkit::unique(name);
    let (role_arn, config) = role_session(endpoint, &role, policy).await;
    let session = role_arn
        .replace(":iam::", ":sts::")
        .replace(":role/", ":assumed-role/");
    (format!("{session}/test"), config)
}

/// create-deploy-stack hands the run to trigger-sf with `lambda:InvokeFunction`;
/// a task role without it gets Lambda's AccessDeniedException, and the task
/// fails with AWS's text naming the role, the action and the function, on the
/// merge commit's failed status too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_deploy_stack_denied_the_trigger_sf_invoke_fails_naming_role_action_and_function() {
    let Some(endpoint) = enforcing().await else {
        return;
    };
    let (session, aws) = session(
        &endpoint,
        "cds-denied",
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"lambda:GetFunction","Resource":"*"}]}"#,
    )
    .await;
    let repo = GitRepo::new();
    repo.unit("dev/a", "1", &[]);
    repo.commit("base");
    repo.unit("dev/a", "2", &[]);
    let merge = repo.commit("change a");
    let tf = TfTemplates::new("");
    let accounts = r#"[{"name": "dev", "path": "dev", "voters": ["dev@example.com"],
      "min_approval_count": 1, "min_rejection_count": 1,
      "plan_role_arn": "arn:aws:iam::222222222222:role/plan", "apply_role_arn": "arn:aws:iam::222222222222:role/apply"}]"#;
    let function = live_ci_testkit::unique("live-ci-trigger-sf");
    let config: live_ci_task::CreateDeployStackConfig = support::config(&[
        ("REPO_CLONE_URL", &repo.url()),
        ("LIVE_CI_PR_NUMBER", "7"),
        ("LIVE_CI_COMMIT", &merge),
        ("LIVE_CI_BASE_REF", "main"),
        ("LIVE_CI_HEAD_REF", "feature"),
        ("MERGE_LOCK_SSM_KEY", "/live-ci/merge-lock"),
        ("TRIGGER_SF_FUNCTION_NAME", &function),
        ("ACCOUNT_PARENT_CFG", accounts),
        ("MAX_PARALLEL", "1"),
        ("PLAN_COMMAND", &tf.plan),
    ]);
    let db = support::pg::TestDb::new().await;
    let metadb = db.metadb(2).await;
    let params = MemoryParams::default();
    let github = RecordingGitHost::default();
    let invoker = LambdaInvoker::new(live_ci_aws::sdk::lambda::Client::new(&aws));
    let roles = support::sts();
    let artifacts = MemArtifacts::default();
    let ports = Wiring {
        metadb: &metadb,
        params: &params,
        github: &github,
        invoker: &invoker,
        roles: &roles,
        artifacts: &artifacts,
    };
    let clone = Repo {
        clone_url: repo.url(),
        token: None,
    };
    let started = Instant::now();
    let err = create_deploy_stack(&config, &clone, None, &ports)
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(30));
    let expected = format!(
        "User: {session} is not authorized to perform: lambda:InvokeFunction on resource: arn:aws:lambda:us-east-1:000000000000:function:{function}"
    );
    let text = format!("{err:#}");
    assert!(text.contains(&expected), "{text}");
    let statuses = github.statuses();
    let failed = statuses
        .iter()
        .rfind(|s| s.sha == merge && s.state == StatusState::Failure);
    assert!(failed.is_some(), "no failed status: {statuses:?}");
    db.drop_db().await;
}

/// pr-plan assumes each account's plan role; a task role that may not
/// (`sts:AssumeRole` allowed on another role only) gets STS's AccessDenied, and
/// pr-plan fails with AWS's text naming the role, the action and the plan role,
/// before any plan runs; a failed status is posted. Nothing hangs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pr_plan_denied_the_plan_role_fails_naming_role_action_and_plan_role() {
    let Some(endpoint) = enforcing().await else {
        return;
    };
    let (session, aws) = session(
        &endpoint,
        "pr-plan-denied",
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sts:AssumeRole","Resource":"arn:aws:iam::222222222222:role/another"}]}"#,
    )
    .await;
    let repo = GitRepo::new();
    repo.unit("dev/a", "1", &[]);
    repo.commit("base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.unit("dev/a", "10", &[]);
    let head = repo.commit("change a");
    let tf = TfTemplates::new("");
    let plan_role = "arn:aws:iam::222222222222:role/plan";
    let accounts = format!(
        r#"[{{"name": "dev", "path": "dev", "voters": ["dev@example.com"],
      "min_approval_count": 1, "min_rejection_count": 1,
      "plan_role_arn": "{plan_role}", "apply_role_arn": "arn:aws:iam::222222222222:role/apply"}}]"#
    );
    let config: live_ci_task::PrPlanConfig = support::config(&[
        ("REPO_CLONE_URL", &repo.url()),
        ("LIVE_CI_PR_NUMBER", "12"),
        ("LIVE_CI_COMMIT", &head),
        ("LIVE_CI_BASE_REF", "main"),
        ("PLAN_COMMAND", &tf.plan),
        ("MAX_PARALLEL", "1"),
        ("ACCOUNT_PARENT_CFG", &accounts),
    ]);
    let github = RecordingGitHost::default();
    let roles = StsRoleAssumer::new(live_ci_aws::sdk::sts::Client::new(&aws));
    let clone = Repo {
        clone_url: repo.url(),
        token: None,
    };
    let started = Instant::now();
    let err = pr_plan(
        &config,
        &clone,
        None,
        &Statuses::new(&github, Default::default()),
        &roles,
    )
    .await
    .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(30));
    let expected = format!(
        "User: {session} is not authorized to perform: sts:AssumeRole on resource: {plan_role}"
    );
    let text = format!("{err:#}");
    assert!(text.contains(&expected), "{text}");
    let statuses = github.statuses();
    assert!(
        statuses
            .iter()
            .any(|s| s.sha == head && s.state == StatusState::Failure),
        "{statuses:?}"
    );
    assert!(!tf.state_file("dev/a").exists());
}

/// terra-run's plan phase saves the plan to the plans bucket with
/// `s3:PutObject`; a task role without it gets S3's AccessDenied, and the task
/// token is failed with a cause naming the role, the action and the object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terra_run_denied_the_plan_upload_fails_its_token_naming_role_action_and_object() {
    let Some(endpoint) = enforcing().await else {
        return;
    };
    let s = crate::terra_run::setup().await;
    let admin = support::s3_client();
    let bucket = support::new_bucket(&admin, "plans-denied").await;
    let (session, aws) = session(
        &endpoint,
        "terra-run-denied",
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"},{"Effect":"Deny","Action":"s3:PutObject","Resource":"*"}]}"#,
    )
    .await;
    let client = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&aws)
            .force_path_style(true)
            .build(),
    );
    let store = S3ArtifactStore::new(client, &bucket);
    let tokens = RecordingTokens::default();
    let roles = support::sts();
    let ports = TerraRunPorts {
        metadb: &s.metadb,
        artifacts: &store,
        tokens: &tokens,
        roles: &roles,
        statuses: Statuses::new(&NoGitHost, Default::default()),
    };
    let repo = Repo {
        clone_url: s.clone_url.clone(),
        token: None,
    };
    let id = "run-7-x-dev-app-001";
    let started = Instant::now();
    let result = terra_run(
        &crate::terra_run::env(id, "plan", None, &s.clone_url),
        &repo,
        None,
        &ports,
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(60));
    assert!(result.is_err(), "{result:?}");
    let sent = tokens.take();
    let [Sent::Failure { cause, .. }] = sent.as_slice() else {
        panic!("not one failure: {sent:?}");
    };
    let expected = format!(
        "User: {session} is not authorized to perform: s3:PutObject on resource: arn:aws:s3:::{bucket}/"
    );
    assert!(cause.contains(&expected), "{cause}");
    s.db.drop_db().await;
}
