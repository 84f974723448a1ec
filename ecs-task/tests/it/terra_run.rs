//! terra-run end to end: a real git repository, real terraform (built-in
//! `terraform_data`, local state outside the checkouts), a real PostgreSQL
//! metadb, saved plans in LocalStack S3, and a recording task-token port.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use crate::support;

use live_ci_aws::S3ArtifactStore;
use live_ci_core::port::{ArtifactStore, ExecutionStore, RunStore};
use live_ci_core::status::{NoGitHost, StatusState, Statuses};
use live_ci_core::terraform::Phase;
use live_ci_core::terraform::plan_key;
use live_ci_metadb::PgMetadb;
use live_ci_task::terra_run::status_context;
use live_ci_task::terra_run::{TerraRunPorts, TerraRunResult, terra_run};
use live_ci_task::{TaskError, TerraRunConfig, checkout::Repo};
use serde_json::Value;
use support::fakes::{MemArtifacts, RecordingGitHost, RecordingTokens, Sent};
use support::pg::{TestDb, exec, run};
use support::repo::{GitRepo, TfTemplates};
use support::{new_bucket, s3_client};

pub(crate) struct Setup {
    _repo: GitRepo,
    pub(crate) tf: TfTemplates,
    pub(crate) metadb: PgMetadb,
    pub(crate) db: TestDb,
    pub(crate) clone_url: String,
    commits: [String; 2],
}

/// Ports on the setup's metadb, with `artifacts`, `tokens` and `roles`, and
/// no commit statuses.
fn ports_without_github<'a, A, R>(
    s: &'a Setup,
    artifacts: &'a A,
    tokens: &'a RecordingTokens,
    roles: &'a R,
) -> TerraRunPorts<'a, PgMetadb, A, RecordingTokens, NoGitHost, R> {
    TerraRunPorts {
        metadb: &s.metadb,
        artifacts,
        tokens,
        roles,
        statuses: Statuses::new(&NoGitHost, Default::default()),
    }
}

/// One unit, two commits, a run at each (the second queues behind the
/// first), each with one execution of the unit.
pub(crate) async fn setup() -> Setup {
    let repo = GitRepo::new();
    repo.unit("dev/app", "1", &[]);
    let c1 = repo.commit("app");
    repo.write("README.md", "docs\n");
    let c2 = repo.commit("docs");
    let tf = TfTemplates::new("sleep 1.5; ");
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let mut run_ids = Vec::new();
    for (commit, id) in [(&c1, "run-7-x-dev-app-001"), (&c2, "run-7-y-dev-app-002")] {
        let mut e = exec(id, "dev", &[]);
        e.cfg_path = live_ci_core::RepoPath::new("dev/app").unwrap();
        e.plan_command = tf.plan.clone();
        e.apply_command = tf.apply.clone();
        e.new_providers = vec!["terraform.io/builtin/terraform".into()];
        run_ids.push(
            metadb
                .create_run(&run(commit, 1, vec![e]))
                .await
                .unwrap()
                .run_id,
        );
    }
    // The first run holds the lock; its execution is running, as when the
    // state machine starts terra-run. The second queues behind it.
    let claimed = metadb.claim_ready(run_ids[0], 10).await.unwrap();
    assert_eq!(claimed.len(), 1);
    Setup {
        clone_url: repo.url(),
        _repo: repo,
        tf,
        metadb,
        db,
        commits: [c1, c2],
    }
}

pub(crate) fn env(id: &str, phase: &str, artifact: Option<&str>, url: &str) -> TerraRunConfig {
    let mut pairs = vec![
        ("LIVE_CI_PHASE", phase),
        ("LIVE_CI_TASK_TOKEN", "token-1"),
        ("LIVE_CI_EXECUTION_ID", id),
        ("LIVE_CI_CFG_PATH", "dev/app"),
        (
            "LIVE_CI_ROLE_ARN",
            if phase == "plan" {
                "arn:aws:iam::111111111111:role/plan"
            } else {
                "arn:aws:iam::111111111111:role/apply"
            },
        ),
        ("HEARTBEAT_SECONDS", "1"),
        ("REPO_CLONE_URL", url),
    ];
    if let Some(a) = artifact {
        pairs.push(("LIVE_CI_PLAN_ARTIFACT", a));
    }
    support::config(&pairs)
}

fn only_sent(tokens: &RecordingTokens) -> Sent {
    let mut sent = tokens.take();
    assert_eq!(sent.len(), 1, "exactly one answer per task: {sent:?}");
    sent.remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_saves_apply_applies_that_plan_and_records_new_resources() {
    let s = setup().await;
    let client = s3_client();
    let bucket = new_bucket(&client, "plans").await;
    let store = S3ArtifactStore::new(client, &bucket);
    let tokens = RecordingTokens::default();
    // Statuses shown as check runs (a GitHub App): the plan's carries its text.
    let github = RecordingGitHost {
        shows_text: true,
        ..RecordingGitHost::default()
    };
    let repo = Repo {
        clone_url: s.clone_url.clone(),
        token: None,
    };
    let sts = support::sts();
    let ports = TerraRunPorts {
        metadb: &s.metadb,
        artifacts: &store,
        tokens: &tokens,
        roles: &sts,
        statuses: Statuses::new(&github, Default::default()),
    };
    let (id1, id2) = ("run-7-x-dev-app-001", "run-7-y-dev-app-002");

    // Plan both executions from the same (empty) state.
    let mut artifacts = Vec::new();
    for (id, commit) in [(id1, &s.commits[0]), (id2, &s.commits[1])] {
        let result = terra_run(
            &env(id, "plan", None, &s.clone_url),
            &repo,
            Some("https://logs/x"),
            &ports,
        )
        .await
        .unwrap();
        let Sent::Success { token, output } = only_sent(&tokens) else {
            panic!("plan failed")
        };
        assert_eq!(token, "token-1");
        let out: Value = serde_json::from_str(&output).unwrap();
        assert_eq!(out["execution_id"], id);
        assert_eq!(
            (
                out["to_add"].as_u64(),
                out["to_change"].as_u64(),
                out["to_destroy"].as_u64()
            ),
            (Some(1), Some(0), Some(0))
        );
        assert_eq!(out["logs_url"], "https://logs/x");
        // The one resource change, as the mail lists it.
        assert_eq!(out["more_changes"], 0, "{out}");
        let first = out["first_changes"].as_array().unwrap();
        assert_eq!(first.len(), 1, "{out}");
        assert!(
            first[0]
                .as_str()
                .unwrap()
                .starts_with("create terraform_data."),
            "{out}"
        );
        let key = plan_key(id, commit);
        assert_eq!(out["plan_artifact"], format!("s3://{bucket}/{key}"));
        assert!(matches!(result, TerraRunResult::Plan(_)));
        // The saved plan is really in S3.
        assert!(
            store
                .get(&key)
                .await
                .unwrap()
                .is_some_and(|b| !b.is_empty())
        );
        artifacts.push(out["plan_artifact"].as_str().unwrap().to_string());
    }
    // The plan slept past the heartbeat interval: heartbeats were sent.
    assert!(!tokens.heartbeats.lock().unwrap().is_empty());
    assert!(
        !s.tf.state_file("dev/app").exists(),
        "a plan changes no state"
    );

    // The voters approve the first execution (real votes in the metadb).
    support::approve(&s.db.url, &s.metadb, id1).await;
    // An apply refuses another execution's plan before running anything.
    let err = terra_run(
        &env(id1, "apply", Some(&artifacts[1]), &s.clone_url),
        &repo,
        None,
        &ports,
    )
    .await
    .unwrap_err();
    assert!(matches!(err, TaskError::PlanArtifact { .. }), "{err}");
    let Sent::Failure { error, cause, .. } = only_sent(&tokens) else {
        panic!("expected a failure")
    };
    assert_eq!(error, "PlanArtifact");
    assert!(
        cause.contains(id1) && cause.contains(&artifacts[1]),
        "{cause}"
    );
    assert!(!s.tf.state_file("dev/app").exists());

    // Apply the first plan: the resource is created and recorded for rollback.
    terra_run(
        &env(id1, "apply", Some(&artifacts[0]), &s.clone_url),
        &repo,
        None,
        &ports,
    )
    .await
    .unwrap();
    let Sent::Success { output, .. } = only_sent(&tokens) else {
        panic!("apply failed")
    };
    let out: Value = serde_json::from_str(&output).unwrap();
    assert_eq!(out["added"], 1);
    assert_eq!(
        out["new_resources"],
        serde_json::json!(["terraform_data.this"])
    );
    assert!(s.tf.state_file("dev/app").exists());
    let record = s.metadb.execution(id1).await.unwrap().unwrap();
    assert_eq!(
        record.new_resources,
        vec!["terraform_data.this".to_string()]
    );

    // The second plan was made before the first apply: it is stale. (Its run
    // starts once the first is done, and its voters approve it.)
    support::approve(&s.db.url, &s.metadb, id2).await;
    let err = terra_run(
        &env(id2, "apply", Some(&artifacts[1]), &s.clone_url),
        &repo,
        None,
        &ports,
    )
    .await
    .unwrap_err();
    assert!(matches!(err, TaskError::StalePlan { .. }), "{err}");
    let Sent::Failure { error, cause, .. } = only_sent(&tokens) else {
        panic!("expected a failure")
    };
    assert_eq!(error, "StalePlan");
    assert!(
        cause.contains("is stale") && cause.contains(&artifacts[1]),
        "{cause}"
    );
    let record = s.metadb.execution(id2).await.unwrap().unwrap();
    assert!(record.new_resources.is_empty());

    // Each phase posted pending then its outcome on the execution's commit,
    // linked to the task's logs.
    let unit = live_ci_core::RepoPath::new("dev/app").unwrap();
    let statuses = github.statuses();
    let of = |commit: &str, phase| -> Vec<(StatusState, String)> {
        statuses
            .iter()
            .filter(|st| st.sha == commit && st.context == status_context(phase, &unit))
            .map(|st| (st.state, st.description.clone()))
            .collect()
    };
    assert_eq!(
        of(&s.commits[0], Phase::Plan),
        vec![
            (StatusState::Pending, "planning".to_string()),
            (
                StatusState::Success,
                "1 to add, 0 to change, 0 to destroy".to_string()
            )
        ]
    );
    // The finished plan's status carries the plan as terraform shows it
    // (`show -no-color`), fitted into a diff block; no other status has text.
    let texts: Vec<(StatusState, Option<String>)> = statuses
        .iter()
        .filter(|st| st.sha == s.commits[0] && st.context == status_context(Phase::Plan, &unit))
        .map(|st| (st.state, st.text.clone()))
        .collect();
    assert_eq!(texts[0], (StatusState::Pending, None));
    let plan = texts[1].1.as_deref().unwrap_or_default();
    assert!(plan.starts_with("```diff\n"), "{plan}");
    assert!(
        plan.contains("+  + resource \"terraform_data\" \"this\" {\n"),
        "{plan}"
    );
    assert!(
        statuses
            .iter()
            .filter(|st| st.context != status_context(Phase::Plan, &unit))
            .all(|st| st.text.is_none()),
        "{statuses:#?}"
    );
    let applies = of(&s.commits[0], Phase::Apply);
    assert_eq!(applies.len(), 4, "{applies:?}");
    assert_eq!(
        applies[1].0,
        StatusState::Failure,
        "another execution's plan"
    );
    assert_eq!(
        applies[3],
        (
            StatusState::Success,
            "1 added, 0 changed, 0 destroyed".to_string()
        )
    );
    let stale = of(&s.commits[1], Phase::Apply);
    assert_eq!(stale[1].0, StatusState::Failure);
    assert!(stale[1].1.contains("is stale"), "{:?}", stale[1]);
    let plan_context = status_context(Phase::Plan, &unit);
    assert!(
        statuses
            .iter()
            .filter(|st| st.context == plan_context)
            .all(|st| st.target_url.as_deref() == Some("https://logs/x"))
    );
    s.db.drop_db().await;
}

/// A plan that changes nothing (read from `show -json`) tells the state
/// machine to skip approval and apply, unless the module keeps unchanged
/// units (`SKIP_UNCHANGED=false`); a plan with changes never does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unchanged_plan_skips_approval_and_apply_when_configured() {
    let s = setup().await;
    let tokens = RecordingTokens::default();
    let artifacts = MemArtifacts::default();
    let github = RecordingGitHost::default();
    let repo = Repo {
        clone_url: s.clone_url.clone(),
        token: None,
    };
    let sts = support::sts();
    let ports = TerraRunPorts {
        metadb: &s.metadb,
        artifacts: &artifacts,
        tokens: &tokens,
        roles: &sts,
        statuses: Statuses::new(&github, Default::default()),
    };
    let (id1, id2) = ("run-7-x-dev-app-001", "run-7-y-dev-app-002");
    let plan_output = |config: &TerraRunConfig| {
        let config = config.clone();
        let repo = &repo;
        let ports = &ports;
        let tokens = &tokens;
        async move {
            terra_run(&config, repo, None, ports).await.unwrap();
            let Sent::Success { output, .. } = only_sent(tokens) else {
                panic!("plan failed")
            };
            serde_json::from_str::<Value>(&output).unwrap()
        }
    };
    let first = plan_output(&env(id1, "plan", None, &s.clone_url)).await;
    assert_eq!(first["to_add"], 1);
    assert_eq!(first["skip_apply"], false, "a plan with changes is applied");
    support::approve(&s.db.url, &s.metadb, id1).await;
    terra_run(
        &env(
            id1,
            "apply",
            Some(first["plan_artifact"].as_str().unwrap()),
            &s.clone_url,
        ),
        &repo,
        None,
        &ports,
    )
    .await
    .unwrap();
    only_sent(&tokens);
    // The second commit changes only a README: its plan changes nothing.
    let unchanged = plan_output(&env(id2, "plan", None, &s.clone_url)).await;
    assert_eq!(
        (
            &unchanged["to_add"],
            &unchanged["to_change"],
            &unchanged["to_destroy"]
        ),
        (&Value::from(0), &Value::from(0), &Value::from(0))
    );
    assert_eq!(unchanged["outputs_changed"], serde_json::json!([]));
    assert_eq!(unchanged["skip_apply"], true);
    let mut keep = env(id2, "plan", None, &s.clone_url);
    keep.common.skip_unchanged = false;
    let kept = plan_output(&keep).await;
    assert_eq!(kept["skip_apply"], false);
    let unit = live_ci_core::RepoPath::new("dev/app").unwrap();
    let last = github
        .statuses()
        .into_iter()
        .rfind(|st| st.sha == s.commits[1] && st.context == status_context(Phase::Plan, &unit))
        .unwrap();
    assert_eq!(
        (last.state, last.description.as_str()),
        (StatusState::Success, "no changes")
    );
    // A host that shows no status text (commit statuses) gets none: no
    // `show -no-color` is run for it.
    assert_eq!(last.text, None);
    s.db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_reach_the_token_with_the_commands_output() {
    let s = setup().await;
    let tokens = RecordingTokens::default();
    let artifacts = MemArtifacts::default();
    let repo = Repo {
        clone_url: s.clone_url.clone(),
        token: None,
    };
    let sts = support::sts();
    let ports = ports_without_github(&s, &artifacts, &tokens, &sts);
    // A failing command: the failure names the command and carries its last lines.
    let config = env("run-7-x-dev-app-001", "plan", None, &s.clone_url);
    support::record_command(
        &s.db.url,
        "run-7-x-dev-app-001",
        "plan",
        "echo 'Error: Invalid provider configuration'; exit 1",
    )
    .await;
    let err = terra_run(&config, &repo, None, &ports).await.unwrap_err();
    assert!(matches!(err, TaskError::CommandFailed { .. }), "{err}");
    let Sent::Failure { error, cause, .. } = only_sent(&tokens) else {
        panic!("expected a failure")
    };
    assert_eq!(error, "CommandFailed");
    assert!(
        cause.contains("Invalid provider configuration") && cause.contains("code 1"),
        "{cause}"
    );
    assert!(
        artifacts.objects.lock().unwrap().is_empty(),
        "no plan saved"
    );

    // An unknown execution fails the token too.
    let config = env("run-7-nope-001", "plan", None, &s.clone_url);
    let err = terra_run(&config, &repo, None, &ports).await.unwrap_err();
    assert!(err.to_string().contains("\"run-7-nope-001\""), "{err}");
    assert!(matches!(only_sent(&tokens), Sent::Failure { .. }));

    // Apply without a saved plan (approved): a clear error, nothing applied.
    support::approve(&s.db.url, &s.metadb, "run-7-x-dev-app-001").await;
    let key = plan_key("run-7-x-dev-app-001", &s.commits[0]);
    let config = env(
        "run-7-x-dev-app-001",
        "apply",
        Some(&artifacts.uri(&key)),
        &s.clone_url,
    );
    let err = terra_run(&config, &repo, None, &ports).await.unwrap_err();
    assert!(
        err.to_string().contains("no saved plan is recorded"),
        "{err}"
    );
    assert!(!s.tf.state_file("dev/app").exists());
    assert!(matches!(only_sent(&tokens), Sent::Failure { .. }));
    s.db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_phase_runs_with_a_home_tmpdir_and_plugin_cache_of_its_own_then_gone() {
    let s = setup().await;
    let tokens = RecordingTokens::default();
    let artifacts = MemArtifacts::default();
    let repo = Repo {
        clone_url: s.clone_url.clone(),
        token: None,
    };
    let sts = support::sts();
    let ports = ports_without_github(&s, &artifacts, &tokens, &sts);
    let seen = tempfile::tempdir().unwrap();
    let report = seen.path().join("dirs");
    // What a plan's code could do: read where it runs and plant a file there
    // for whatever runs next (harmless here: were the protection gone, it
    // would land in this machine's real home).
    let config = env("run-7-x-dev-app-001", "plan", None, &s.clone_url);
    support::record_command(
        &s.db.url,
        "run-7-x-dev-app-001",
        "plan",
        &format!(
            "printf '%s\\n' \"$HOME\" \"$TMPDIR\" \"$TF_PLUGIN_CACHE_DIR\" > {report:?} && \
             echo planted > \"$HOME/.live-ci-test-planted\" && exit 1"
        ),
    )
    .await;
    terra_run(&config, &repo, None, &ports).await.unwrap_err();
    assert!(matches!(only_sent(&tokens), Sent::Failure { .. }));
    let dirs: Vec<std::path::PathBuf> = std::fs::read_to_string(&report)
        .unwrap()
        .lines()
        .map(Into::into)
        .collect();
    assert_eq!(dirs.len(), 3, "{dirs:?}");
    let task_home = std::env::var("HOME").unwrap_or_default();
    for dir in &dirs {
        assert_ne!(dir.as_os_str(), task_home.as_str(), "{dirs:?}");
        assert!(
            dir.starts_with(std::env::temp_dir())
                && dir.to_string_lossy().contains("live-ci-task-"),
            "in the phase's scratch: {dir:?}"
        );
        assert!(!dir.exists(), "deleted with the phase: {dir:?}");
    }
    assert!(dirs[2].starts_with(&dirs[0]), "the cache is in the home");
    s.db.drop_db().await;
}

/// Plans both executions into `bucket` and returns their artifact URIs.
async fn plan_both<M: RunStore + ExecutionStore, R: live_ci_core::port::RoleAssumer>(
    s: &Setup,
    ports: &TerraRunPorts<'_, M, S3ArtifactStore, RecordingTokens, RecordingGitHost, R>,
    repo: &Repo,
) -> Vec<String> {
    let mut artifacts = Vec::new();
    for id in ["run-7-x-dev-app-001", "run-7-y-dev-app-002"] {
        terra_run(&env(id, "plan", None, &s.clone_url), repo, None, ports)
            .await
            .unwrap();
        let Sent::Success { output, .. } = only_sent(ports.tokens) else {
            panic!("plan failed")
        };
        let out: Value = serde_json::from_str(&output).unwrap();
        artifacts.push(out["plan_artifact"].as_str().unwrap().to_string());
    }
    artifacts
}

/// The approved plan is the applied plan: a plan object replaced in S3
/// between plan and apply (here by the other execution's valid plan) is
/// refused by its SHA-256, and terraform apply never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_swapped_in_s3_is_refused_and_nothing_is_applied() {
    let s = setup().await;
    let client = s3_client();
    // Unversioned: the key alone finds whatever was written last.
    let bucket = new_bucket(&client, "swap").await;
    let store = S3ArtifactStore::new(client.clone(), &bucket);
    let tokens = RecordingTokens::default();
    let github = RecordingGitHost::default();
    let sts = support::sts();
    let repo = Repo {
        clone_url: s.clone_url.clone(),
        token: None,
    };
    let ports = TerraRunPorts {
        metadb: &s.metadb,
        artifacts: &store,
        tokens: &tokens,
        roles: &sts,
        statuses: Statuses::new(&github, Default::default()),
    };
    let (id1, id2) = ("run-7-x-dev-app-001", "run-7-y-dev-app-002");
    plan_both(&s, &ports, &repo).await;
    let key1 = plan_key(id1, &s.commits[0]);
    let key2 = plan_key(id2, &s.commits[1]);
    let approved = store.get(&key1).await.unwrap().unwrap();
    let saved = s.metadb.saved_plan(id1).await.unwrap().unwrap();
    assert_eq!(saved.key, key1);
    assert_eq!(saved.sha256, live_ci_core::port::sha256_hex(&approved));
    assert_eq!(
        saved.version_id, None,
        "an unversioned bucket has no versions"
    );
    // The plan's show -json is stored beside it, sealed to the plan's hash,
    // its own hash recorded with the plan: what the approval page shows.
    let sealed = store
        .get(&live_ci_core::plan_view::json_key(&key1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        saved.json_sha256.as_deref(),
        Some(live_ci_core::port::sha256_hex(&sealed).as_str())
    );
    let view = live_ci_core::plan_view::open(&saved, Some(&sealed)).unwrap();
    assert!(view.resource_count() > 0, "{view:?}");
    assert!(
        view.resources()
            .all(|r| r.address.starts_with("terraform_data.")),
        "{view:?}"
    );

    // Someone with write access to the bucket swaps in another valid plan.
    let other = store.get(&key2).await.unwrap().unwrap();
    assert_ne!(other, approved);
    store.put(&key1, other).await.unwrap();
    let marker = s.tf.state.path().join("apply-ran");
    let config = env(id1, "apply", Some(&store.uri(&key1)), &s.clone_url);
    support::record_command(
        &s.db.url,
        id1,
        "apply",
        &format!("touch {}; {}", marker.display(), s.tf.apply),
    )
    .await;
    support::approve(&s.db.url, &s.metadb, id1).await;
    let err = terra_run(&config, &repo, None, &ports).await.unwrap_err();
    assert!(matches!(err, TaskError::PlanArtifact { .. }), "{err}");
    let Sent::Failure { error, cause, .. } = only_sent(&tokens) else {
        panic!("expected a failure")
    };
    assert_eq!(error, "PlanArtifact");
    assert!(
        cause.contains("is not the approved plan") && cause.contains(&saved.sha256),
        "{cause}"
    );
    assert!(!marker.exists(), "the apply command never ran");
    assert!(!s.tf.state_file("dev/app").exists(), "nothing applied");
    s.db.drop_db().await;
}

/// In a versioned bucket (the module's), the apply downloads the version the
/// plan task recorded: a newer object at the same key is never applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_versioned_plan_is_read_at_its_recorded_version() {
    let s = setup().await;
    let client = s3_client();
    let bucket = new_bucket(&client, "pinned").await;
    client
        .put_bucket_versioning()
        .bucket(&bucket)
        .versioning_configuration(
            aws_sdk_s3::types::VersioningConfiguration::builder()
                .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .unwrap();
    let store = S3ArtifactStore::new(client.clone(), &bucket);
    let tokens = RecordingTokens::default();
    let github = RecordingGitHost::default();
    let sts = support::sts();
    let repo = Repo {
        clone_url: s.clone_url.clone(),
        token: None,
    };
    let ports = TerraRunPorts {
        metadb: &s.metadb,
        artifacts: &store,
        tokens: &tokens,
        roles: &sts,
        statuses: Statuses::new(&github, Default::default()),
    };
    let id1 = "run-7-x-dev-app-001";
    let artifacts = plan_both(&s, &ports, &repo).await;
    let key1 = plan_key(id1, &s.commits[0]);
    let saved = s.metadb.saved_plan(id1).await.unwrap().unwrap();
    let version = saved
        .version_id
        .clone()
        .expect("a versioned bucket names the version");
    // A newer object at the key: garbage that no hash could match.
    let newer = store.put(&key1, b"not a plan".to_vec()).await.unwrap();
    assert!(newer.is_some_and(|v| v != version));
    support::approve(&s.db.url, &s.metadb, id1).await;
    terra_run(
        &env(id1, "apply", Some(&artifacts[0]), &s.clone_url),
        &repo,
        None,
        &ports,
    )
    .await
    .unwrap();
    assert!(matches!(only_sent(&tokens), Sent::Success { .. }));
    assert!(
        s.tf.state_file("dev/app").exists(),
        "the approved plan applied"
    );

    // A version that is gone is a clear error, not a fallback to the newest.
    let id2 = "run-7-y-dev-app-002";
    let key2 = plan_key(id2, &s.commits[1]);
    let v2 = s
        .metadb
        .saved_plan(id2)
        .await
        .unwrap()
        .unwrap()
        .version_id
        .unwrap();
    client
        .delete_object()
        .bucket(&bucket)
        .key(&key2)
        .version_id(&v2)
        .send()
        .await
        .unwrap();
    store.put(&key2, b"replacement".to_vec()).await.unwrap();
    support::approve(&s.db.url, &s.metadb, id2).await;
    let err = terra_run(
        &env(id2, "apply", Some(&artifacts[1]), &s.clone_url),
        &repo,
        None,
        &ports,
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string()
            .contains(&format!("no such saved plan (version {v2})")),
        "{err}"
    );
    assert!(matches!(only_sent(&tokens), Sent::Failure { .. }));
    s.db.drop_db().await;
}

/// terra-run assumes the role of the unit's own account from the metadb
/// record; an execution input naming another role is refused before anything
/// runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_accounts_role_is_refused() {
    let s = setup().await;
    let tokens = RecordingTokens::default();
    let artifacts = MemArtifacts::default();
    let sts = support::fakes::RecordingRoles::new(support::sts());
    let repo = Repo {
        clone_url: s.clone_url.clone(),
        token: None,
    };
    let ports = ports_without_github(&s, &artifacts, &tokens, &sts);
    let id = "run-7-x-dev-app-001";
    let mut config = env(id, "plan", None, &s.clone_url);
    config.role_arn = Some("arn:aws:iam::999999999999:role/apply".into());
    let err = terra_run(&config, &repo, None, &ports).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("\"arn:aws:iam::999999999999:role/apply\" is not the plan role"),
        "{err}"
    );
    assert!(sts.calls().is_empty(), "no role assumed");
    assert!(matches!(only_sent(&tokens), Sent::Failure { .. }));
    // The record's own plan role is assumed for a plan.
    terra_run(&env(id, "plan", None, &s.clone_url), &repo, None, &ports)
        .await
        .unwrap();
    let calls = sts.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0, "arn:aws:iam::111111111111:role/plan");
    assert_eq!(calls[0].1, format!("live-ci-plan-{id}"));
    s.db.drop_db().await;
}

/// The apply is the approved apply: an apply task started with a forged input
/// — another command, another role, an execution its voters rejected, one
/// not (yet) approved, one whose run was superseded or that was aborted —
/// applies nothing (the apply command, which would leave a marker, never
/// runs; the unit's state is never written; no role is assumed) and its
/// failure says why. Then the same execution, approved, applies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apply_with_a_forged_input_applies_nothing_and_says_why() {
    let s = setup().await;
    let client = s3_client();
    let bucket = new_bucket(&client, "forged").await;
    let store = S3ArtifactStore::new(client, &bucket);
    let tokens = RecordingTokens::default();
    let sts = support::fakes::RecordingRoles::new(support::sts());
    let repo = Repo {
        clone_url: s.clone_url.clone(),
        token: None,
    };
    let ports = ports_without_github(&s, &store, &tokens, &sts);
    let id = "run-7-x-dev-app-001";
    terra_run(&env(id, "plan", None, &s.clone_url), &repo, None, &ports)
        .await
        .unwrap();
    let Sent::Success { output, .. } = only_sent(&tokens) else {
        panic!("plan failed")
    };
    let artifact = serde_json::from_str::<Value>(&output).unwrap()["plan_artifact"]
        .as_str()
        .unwrap()
        .to_string();
    let marker = s.tf.state.path().join("apply-ran");
    support::record_command(
        &s.db.url,
        id,
        "apply",
        &format!("touch {}; {}", marker.display(), s.tf.apply),
    )
    .await;
    let planned_roles = sts.calls().len();
    let sql = |statement: &'static str| {
        let url = s.db.url.clone();
        async move {
            live_ci_metadb::connect(&url)
                .await
                .unwrap()
                .execute(statement, &[&id])
                .await
                .unwrap();
        }
    };
    let refused = |config: TerraRunConfig, why: &'static str| {
        let (repo, ports, tokens, marker, s) = (&repo, &ports, &tokens, &marker, &s);
        async move {
            let err = terra_run(&config, repo, None, ports).await.unwrap_err();
            let Sent::Failure { error, cause, .. } = only_sent(tokens) else {
                panic!("expected a failure")
            };
            assert!(cause.contains(why), "{why}: {cause}");
            assert!(!marker.exists(), "{why}: the apply command never ran");
            assert!(
                !s.tf.state_file("dev/app").exists(),
                "{why}: nothing applied"
            );
            (err, error)
        }
    };
    let apply = || env(id, "apply", Some(&artifact), &s.clone_url);

    // Not approved yet: one vote of the two needed.
    live_ci_core::port::ApprovalStore::cast_vote(
        &s.metadb,
        id,
        "a@example.com",
        live_ci_core::deploy::Vote::Approve,
    )
    .await
    .unwrap();
    let (err, name) = refused(
        apply(),
        "is not approved: 1 of the 2 approvals it needs are recorded (decision None)",
    )
    .await;
    assert!(matches!(err, TaskError::Refused { .. }), "{err}");
    assert_eq!(name, "Refused");
    // A decision written without the votes to reach it.
    sql("UPDATE executions SET decision = 'approve' WHERE execution_id = $1").await;
    refused(
        apply(),
        "1 of the 2 approvals it needs are recorded (decision Some(\"approve\"))",
    )
    .await;
    // Rejected by its voters.
    sql("UPDATE executions SET decision = NULL WHERE execution_id = $1").await;
    live_ci_core::port::ApprovalStore::cast_vote(
        &s.metadb,
        id,
        "c@example.com",
        live_ci_core::deploy::Vote::Reject,
    )
    .await
    .unwrap();
    assert_eq!(
        live_ci_core::port::ApprovalStore::decide(&s.metadb, id)
            .await
            .unwrap(),
        Some(live_ci_core::deploy::Vote::Reject)
    );
    refused(apply(), "was rejected by its voters").await;
    sql("DELETE FROM votes WHERE execution = (SELECT id FROM executions WHERE execution_id = $1)")
        .await;
    sql("UPDATE executions SET decision = NULL WHERE execution_id = $1").await;

    // Approved now; but the input asks for another command, or another role.
    support::approve(&s.db.url, &s.metadb, id).await;
    let mut other_command = apply();
    other_command.command = Some("terraform destroy -auto-approve".into());
    refused(
        other_command,
        "LIVE_CI_COMMAND \"terraform destroy -auto-approve\" is not the recorded apply command",
    )
    .await;
    let mut other_role = apply();
    other_role.role_arn = Some("arn:aws:iam::999999999999:role/apply".into());
    refused(
        other_role,
        "\"arn:aws:iam::999999999999:role/apply\" is not the apply role",
    )
    .await;
    // Its run superseded, then the execution aborted.
    sql("UPDATE runs SET status = 'superseded' WHERE run_id = (SELECT run_id FROM executions WHERE execution_id = $1)").await;
    refused(apply(), "is superseded, not running").await;
    sql("UPDATE runs SET status = 'running' WHERE run_id = (SELECT run_id FROM executions WHERE execution_id = $1)").await;
    sql("UPDATE executions SET status = 'aborted' WHERE execution_id = $1").await;
    refused(apply(), "is aborted, not running").await;
    assert_eq!(
        sts.calls().len(),
        planned_roles,
        "no role was assumed for a refused apply"
    );

    // The approved, running execution with the record's command applies.
    sql("UPDATE executions SET status = 'running' WHERE execution_id = $1").await;
    terra_run(&apply(), &repo, None, &ports).await.unwrap();
    assert!(matches!(only_sent(&tokens), Sent::Success { .. }));
    assert!(marker.exists() && s.tf.state_file("dev/app").exists());
    s.db.drop_db().await;
}

/// A git host that refuses every status (GitHub down), counting the attempts.
#[derive(Debug, Default)]
struct RefusingGitHost {
    attempts: std::sync::Mutex<u32>,
}

impl live_ci_core::port::GitHost for RefusingGitHost {
    type Error = support::fakes::FakeError;

    async fn set_status(
        &self,
        _: &live_ci_core::status::CommitStatus,
    ) -> Result<(), support::fakes::FakeError> {
        *self.attempts.lock().unwrap() += 1;
        Err(support::fakes::FakeError("github is down".into()))
    }

    async fn pull_request_files(&self, _: u64) -> Result<Vec<String>, support::fakes::FakeError> {
        Err(support::fakes::FakeError("github is down".into()))
    }

    async fn open_pull_requests(
        &self,
        _: &str,
    ) -> Result<Vec<live_ci_core::status::PullRequest>, support::fakes::FakeError> {
        Err(support::fakes::FakeError("github is down".into()))
    }

    async fn upsert_comment(
        &self,
        _: u64,
        _: &str,
        _: &str,
    ) -> Result<(), support::fakes::FakeError> {
        Err(support::fakes::FakeError("github is down".into()))
    }

    async fn bot_comment(
        &self,
        _: u64,
        _: &str,
    ) -> Result<Option<String>, support::fakes::FakeError> {
        Err(support::fakes::FakeError("github is down".into()))
    }
}

/// Statuses are advisory: a plan whose pending and success statuses both fail
/// to post still succeeds and answers its token with the plan.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_github_refuses_does_not_fail_the_plan() {
    let s = setup().await;
    let artifacts = support::fakes::MemArtifacts::default();
    let tokens = RecordingTokens::default();
    let github = RefusingGitHost::default();
    let sts = support::sts();
    let ports = TerraRunPorts {
        metadb: &s.metadb,
        artifacts: &artifacts,
        tokens: &tokens,
        roles: &sts,
        statuses: Statuses::new(&github, Default::default()),
    };
    let repo = Repo {
        clone_url: s.clone_url.clone(),
        token: None,
    };
    let result = terra_run(
        &env("run-7-x-dev-app-001", "plan", None, &s.clone_url),
        &repo,
        None,
        &ports,
    )
    .await;
    assert!(matches!(result, Ok(TerraRunResult::Plan(_))), "{result:?}");
    assert!(matches!(only_sent(&tokens), Sent::Success { .. }));
    assert_eq!(*github.attempts.lock().unwrap(), 2, "pending, then success");
    s.db.drop_db().await;
}

/// GitHub that answers pending statuses and never answers a final one.
#[derive(Debug, Default)]
struct FinalStatusHangs;

impl live_ci_core::port::GitHost for FinalStatusHangs {
    type Error = support::fakes::FakeError;

    async fn set_status(
        &self,
        status: &live_ci_core::status::CommitStatus,
    ) -> Result<(), Self::Error> {
        if status.state != StatusState::Pending {
            std::future::pending::<()>().await;
        }
        Ok(())
    }

    async fn pull_request_files(&self, _number: u64) -> Result<Vec<String>, Self::Error> {
        Ok(Vec::new())
    }

    async fn open_pull_requests(
        &self,
        _base: &str,
    ) -> Result<Vec<live_ci_core::status::PullRequest>, Self::Error> {
        Ok(Vec::new())
    }

    async fn upsert_comment(&self, _n: u64, _m: &str, _b: &str) -> Result<(), Self::Error> {
        Ok(())
    }

    async fn bot_comment(&self, _n: u64, _m: &str) -> Result<Option<String>, Self::Error> {
        Ok(None)
    }
}

/// The task's answer moves the state machine on; its final commit status is
/// advisory and goes alongside, never in front of it: a GitHub that hangs
/// still lets the answer through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_does_not_wait_for_the_final_status() {
    let s = setup().await;
    let tokens = RecordingTokens::default();
    let artifacts = MemArtifacts::default();
    let repo = Repo {
        clone_url: s.clone_url.clone(),
        token: None,
    };
    let sts = support::sts();
    let github = FinalStatusHangs;
    let ports = TerraRunPorts {
        metadb: &s.metadb,
        artifacts: &artifacts,
        tokens: &tokens,
        roles: &sts,
        statuses: Statuses::new(&github, Default::default()),
    };
    let config = env("run-7-x-dev-app-001", "plan", None, &s.clone_url);
    support::record_command(
        &s.db.url,
        "run-7-x-dev-app-001",
        "plan",
        "echo 'Error: quota exceeded'; exit 1",
    )
    .await;
    let ran = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        terra_run(&config, &repo, None, &ports),
    )
    .await;
    assert!(
        ran.is_err(),
        "the final status post hangs, so the task does"
    );
    let Sent::Failure { error, .. } = only_sent(&tokens) else {
        panic!("expected the failure to reach the token")
    };
    assert_eq!(error, "CommandFailed");
    s.db.drop_db().await;
}

/// terra-run's start reads the execution's record beside the schema check
/// (`startup::read_while_migrating`, one metadb round trip fewer per task).
/// The record is kept only when no migration ran: one read while the schema
/// was one migration behind is dropped, and terra-run reads it again. terra-run
/// then uses the record it is handed only when it is its own execution's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_record_read_at_start_is_used_only_when_no_migration_ran_and_it_is_this_executions() {
    use live_ci_task::startup::read_while_migrating;
    use live_ci_task::terra_run::terra_run_with;

    let s = setup().await;
    let (id1, id2) = ("run-7-x-dev-app-001", "run-7-y-dev-app-002");
    let read = read_while_migrating(&s.metadb, id1).await.unwrap();
    assert!(read.is_some());
    assert_eq!(read, s.metadb.execution(id1).await.unwrap());
    assert_eq!(
        read_while_migrating(&s.metadb, "run-9-z-dev-nope-009")
            .await
            .unwrap(),
        None
    );

    // The schema one migration behind (0012 adds functions only, so the
    // record itself still reads): the read beside the migration is dropped.
    live_ci_metadb::connect(&s.db.url)
        .await
        .unwrap()
        .batch_execute(
            "DROP FUNCTION live_ci_vote, live_ci_vote_view, live_ci_decide, \
             live_ci_claim_delivery, live_ci_tally_json; \
             DELETE FROM schema_migrations WHERE version = 12",
        )
        .await
        .unwrap();
    assert_eq!(
        read_while_migrating(&s.metadb, id1).await.unwrap(),
        None,
        "a record read while migrating is not trusted"
    );
    assert_eq!(
        s.metadb.migrate().await.unwrap(),
        Vec::<u32>::new(),
        "the start migrated"
    );

    let tokens = RecordingTokens::default();
    let artifacts = MemArtifacts::default();
    let sts = support::sts();
    let ports = ports_without_github(&s, &artifacts, &tokens, &sts);
    let repo = Repo {
        clone_url: s.clone_url.clone(),
        token: None,
    };
    let marks = tempfile::tempdir().unwrap();
    let handed = |id: &str, marker: &str| {
        let mut record = read.clone().unwrap();
        record.execution_id = id.to_string();
        record.plan_command = format!(
            "touch {}; {}",
            marks.path().join(marker).display(),
            record.plan_command
        );
        record
    };
    for (record, marker, used) in [
        (handed(id1, "own"), "own", true),
        (handed(id2, "other"), "other", false),
    ] {
        // The handed record's command is its own: the input names none.
        let mut config = env(id1, "plan", None, &s.clone_url);
        config.command = None;
        terra_run_with(&config, &repo, None, &ports, Some(record))
            .await
            .unwrap();
        assert!(matches!(only_sent(&tokens), Sent::Success { .. }));
        assert_eq!(marks.path().join(marker).exists(), used, "{marker}");
    }
    s.db.drop_db().await;
}

/// ECS stops a task with SIGTERM, then SIGKILL after the stop timeout: the
/// running command is asked to stop as Ctrl-C asks (SIGINT to its process
/// group), runs its own clean-up (terraform: state written, lock released),
/// and the token names the interruption. Alone in its process: the SIGTERM is
/// sent to this test process, which is the task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_stopped_while_its_command_runs_interrupts_the_command_and_says_so() {
    if !support::alone_in_process(
        "terra_run::a_task_stopped_while_its_command_runs_interrupts_the_command_and_says_so",
    ) {
        return;
    }
    let s = setup().await;
    let tokens = RecordingTokens::default();
    let artifacts = MemArtifacts::default();
    let repo = Repo {
        clone_url: s.clone_url.clone(),
        token: None,
    };
    let sts = support::sts();
    let ports = ports_without_github(&s, &artifacts, &tokens, &sts);
    let marks = tempfile::tempdir().unwrap();
    let started = marks.path().join("started");
    let cleaned = marks.path().join("cleaned");
    let script = marks.path().join("terraform-like.sh");
    std::fs::write(
        &script,
        format!(
            "trap 'echo state-saved > {cleaned:?}; exit 130' INT\ntouch {started:?}\n\
             while :; do sleep 0.1; done\n"
        ),
    )
    .unwrap();
    let config = env("run-7-x-dev-app-001", "plan", None, &s.clone_url);
    support::record_command(
        &s.db.url,
        "run-7-x-dev-app-001",
        "plan",
        &format!("sh {script:?}"),
    )
    .await;
    let stop = support::stop_this_task_once_started(&started);
    let (done, ()) = tokio::join!(
        tokio::time::timeout(
            Duration::from_secs(60),
            terra_run(&config, &repo, None, &ports)
        ),
        stop
    );
    let err = done
        .expect("the command stopped by itself, long before a SIGKILL would come")
        .unwrap_err();
    // The shell running the template may die of the SIGINT itself (no code).
    assert!(matches!(err, TaskError::Interrupted { .. }), "{err}");
    assert_eq!(
        std::fs::read_to_string(&cleaned).unwrap().trim(),
        "state-saved",
        "the command's own clean-up ran"
    );
    match only_sent(&tokens) {
        Sent::Failure { error, cause, .. } => {
            assert_eq!(error, "Interrupted");
            assert!(cause.contains("SIGTERM"), "{cause}");
        }
        other => panic!("{other:?}"),
    }
    s.db.drop_db().await;
}

/// An apply that fails after it created resources (here the command creates
/// the unit's resource, then exits 7 from a trap, as a failing second
/// resource or hook would) records them like a successful apply: the run's rollback
/// (`plan_rollbacks` takes failed applies) destroys them too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_apply_still_records_what_it_created_for_rollback() {
    let s = setup().await;
    let client = s3_client();
    let bucket = new_bucket(&client, "plans").await;
    let store = S3ArtifactStore::new(client, &bucket);
    let tokens = RecordingTokens::default();
    let repo = Repo {
        clone_url: s.clone_url.clone(),
        token: None,
    };
    let sts = support::sts();
    let ports = ports_without_github(&s, &store, &tokens, &sts);
    let id = "run-7-x-dev-app-001";
    terra_run(&env(id, "plan", None, &s.clone_url), &repo, None, &ports)
        .await
        .unwrap();
    let Sent::Success { output, .. } = only_sent(&tokens) else {
        panic!("plan failed")
    };
    let artifact = serde_json::from_str::<Value>(&output).unwrap()["plan_artifact"]
        .as_str()
        .unwrap()
        .to_string();
    live_ci_metadb::connect(&s.db.url)
        .await
        .unwrap()
        .execute(
            "UPDATE executions SET apply_command = 'trap ''exit 7'' EXIT; ' || apply_command \
             WHERE execution_id = $1",
            &[&id],
        )
        .await
        .unwrap();

    support::approve(&s.db.url, &s.metadb, id).await;
    let err = terra_run(
        &env(id, "apply", Some(&artifact), &s.clone_url),
        &repo,
        None,
        &ports,
    )
    .await
    .unwrap_err();
    assert!(matches!(err, TaskError::CommandFailed { .. }), "{err}");
    let Sent::Failure { error, .. } = only_sent(&tokens) else {
        panic!("expected the failure to reach the token")
    };
    assert_eq!(error, "CommandFailed");
    assert!(s.tf.state_file("dev/app").exists(), "the apply created it");
    let record = s.metadb.execution(id).await.unwrap().unwrap();
    assert_eq!(
        record.new_resources,
        vec!["terraform_data.this".to_string()],
        "recorded for the rollback"
    );
    s.db.drop_db().await;
}
