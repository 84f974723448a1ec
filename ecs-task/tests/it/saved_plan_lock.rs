//! A saved plan applies in a fresh checkout (issue 31 item 3): the lock file
//! the plan ran with travels in the plan's sealed JSON, under the hash the
//! metadb records with the plan's, and is restored before the apply's `init`;
//! a tampered one refuses the apply. And the plan's own account of its new
//! providers (from `show -json`) records what a unit with a remote module and
//! a generated provider block creates, for the rollback, though the static
//! reading of its files finds no provider. Real terraform, git, PostgreSQL and
//! LocalStack (S3, STS, SSM).
#![allow(clippy::unwrap_used)]

use std::path::Path;

use crate::support;

use live_ci_aws::S3ArtifactStore;
use live_ci_core::deploy::{ExecutionRecord, ExecutionStatus, plan_rollbacks};
use live_ci_core::port::{ArtifactStore, ExecutionStore, RunStore};
use live_ci_core::status::{NoGitHost, Statuses};
use live_ci_core::terraform::plan_key;
use live_ci_metadb::PgMetadb;
use live_ci_task::terra_run::{TerraRunPorts, terra_run};
use live_ci_task::{TaskError, checkout::Repo};
use support::fakes::{RecordingTokens, Sent};
use support::pg::{TestDb, exec, run};
use support::repo::{GitRepo, TfTemplates};
use support::{new_bucket, s3_client};

const AWS_BINARY: &str = "/opt/tf-plugins/registry.terraform.io/hashicorp/aws/5.100.0/linux_amd64/terraform-provider-aws_v5.100.0_x5";

const ID: &str = "run-9-l-dev-app-001";

/// A filesystem mirror offering `example.test/testing/fake` at `versions`:
/// the offline AWS provider binary under another name (a link, not a copy),
/// and a CLI configuration that installs from it only.
fn fake_mirror(root: &Path, name: &str, versions: &[&str]) -> String {
    let mirror = root.join(name);
    for v in versions {
        let dir = mirror.join(format!("example.test/testing/fake/{v}/linux_amd64"));
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(
            AWS_BINARY,
            dir.join(format!("terraform-provider-fake_v{v}_x5")),
        )
        .unwrap();
    }
    let rc = root.join(format!("{name}.tfrc"));
    std::fs::write(
        &rc,
        format!(
            "provider_installation {{\n  filesystem_mirror {{\n    path = \"{}\"\n  }}\n}}\n",
            mirror.display()
        ),
    )
    .unwrap();
    rc.display().to_string()
}

struct Setup {
    _repo: GitRepo,
    _mirrors: tempfile::TempDir,
    tf: TfTemplates,
    metadb: PgMetadb,
    db: TestDb,
    clone_url: String,
    commit: String,
}

/// One unit requiring `example.test/testing/fake >= 1.0.0` with no lock
/// committed: its plan installs from a mirror holding 1.0.0 only, its apply
/// from one holding 1.0.0 and 1.1.0 (the newest version moved on between
/// plan and apply). The apply copies the lock it applied with beside the
/// state, `applied.lock.hcl`.
async fn setup() -> Setup {
    let repo = GitRepo::new();
    repo.write(
        "dev/app/main.tf",
        "terraform {\n  backend \"local\" {}\n  required_providers {\n    fake = {\n      source  = \"example.test/testing/fake\"\n      version = \">= 1.0.0\"\n    }\n  }\n}\n\nresource \"terraform_data\" \"this\" {\n  input = 1\n}\n",
    );
    let commit = repo.commit("app");
    let mirrors = tempfile::tempdir().unwrap();
    let plan_rc = fake_mirror(mirrors.path(), "plan", &["1.0.0"]);
    let apply_rc = fake_mirror(mirrors.path(), "apply", &["1.0.0", "1.1.0"]);
    let tf = TfTemplates::new("");
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let mut e = exec(ID, "dev", &[]);
    e.cfg_path = live_ci_core::RepoPath::new("dev/app").unwrap();
    e.plan_command = format!("export TF_CLI_CONFIG_FILE={plan_rc}; {}", tf.plan);
    // The copy sits between `init` and `apply`: the last program of the
    // command is the tool terra-run asks for the state afterwards.
    e.apply_command = format!(
        "export TF_CLI_CONFIG_FILE={apply_rc}; {}",
        tf.apply.replacen(
            " && terraform apply",
            &format!(
                " && cp .terraform.lock.hcl {}/applied.lock.hcl && terraform apply",
                tf.state.path().display()
            ),
            1
        )
    );
    let run_id = metadb
        .create_run(&run(&commit, 1, vec![e]))
        .await
        .unwrap()
        .run_id;
    assert_eq!(metadb.claim_ready(run_id, 10).await.unwrap().len(), 1);
    Setup {
        clone_url: repo.url(),
        _repo: repo,
        _mirrors: mirrors,
        tf,
        metadb,
        db,
        commit,
    }
}

fn config(
    phase: &str,
    artifact: Option<&str>,
    url: &str,
    cfg_path: &str,
) -> live_ci_task::TerraRunConfig {
    let mut pairs = vec![
        ("LIVE_CI_PHASE", phase),
        ("LIVE_CI_TASK_TOKEN", "token-1"),
        ("LIVE_CI_EXECUTION_ID", ID),
        ("LIVE_CI_CFG_PATH", cfg_path),
        ("HEARTBEAT_SECONDS", "5"),
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

fn ports<'a, R>(
    s: &'a Setup,
    store: &'a S3ArtifactStore,
    tokens: &'a RecordingTokens,
    roles: &'a R,
) -> TerraRunPorts<'a, PgMetadb, S3ArtifactStore, RecordingTokens, NoGitHost, R> {
    TerraRunPorts {
        metadb: &s.metadb,
        artifacts: store,
        tokens,
        roles,
        statuses: Statuses::new(&NoGitHost, Default::default()),
    }
}

/// The version of `example.test/testing/fake` a lock file pins.
fn locked_fake_version(lock: &str) -> Option<String> {
    let block = lock
        .split("provider \"example.test/testing/fake\"")
        .nth(1)?;
    let line = block
        .lines()
        .find(|l| l.trim_start().starts_with("version"))?;
    Some(line.split('"').nth(1)?.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_apply_installs_the_provider_version_the_plan_locked_though_a_newer_one_matches() {
    let s = setup().await;
    let client = s3_client();
    let bucket = new_bucket(&client, "lock").await;
    let store = S3ArtifactStore::new(client, &bucket);
    let tokens = RecordingTokens::default();
    let sts = support::sts();
    let ports = ports(&s, &store, &tokens, &sts);
    let repo = Repo {
        clone_url: s.clone_url.clone(),
        token: None,
    };
    terra_run(
        &config("plan", None, &s.clone_url, "dev/app"),
        &repo,
        None,
        &ports,
    )
    .await
    .unwrap();
    let Sent::Success { output, .. } = only_sent(&tokens) else {
        panic!("plan failed")
    };
    let artifact = serde_json::from_str::<serde_json::Value>(&output).unwrap()["plan_artifact"]
        .as_str()
        .unwrap()
        .to_string();
    // The lock travels in the sealed JSON, whose hash is recorded with the plan's.
    let saved = s.metadb.saved_plan(ID).await.unwrap().unwrap();
    let sealed = store
        .get(&live_ci_core::plan_view::json_key(&saved.key))
        .await
        .unwrap()
        .unwrap();
    let carried = live_ci_core::plan_view::open_for_apply(&saved, Some(&sealed)).unwrap();
    let lock = carried.lock_file.expect("the plan's lock file is carried");
    assert_eq!(
        locked_fake_version(&lock).as_deref(),
        Some("1.0.0"),
        "{lock}"
    );

    support::approve(&s.db.url, &s.metadb, ID).await;
    terra_run(
        &config("apply", Some(&artifact), &s.clone_url, "dev/app"),
        &repo,
        None,
        &ports,
    )
    .await
    .unwrap_or_else(|e| panic!("the apply of the planned providers failed: {e}"));
    let Sent::Success { .. } = only_sent(&tokens) else {
        panic!("apply failed")
    };
    let applied = std::fs::read_to_string(s.tf.state.path().join("applied.lock.hcl")).unwrap();
    assert_eq!(
        locked_fake_version(&applied).as_deref(),
        Some("1.0.0"),
        "the apply used the planned version, not the newest: {applied}"
    );
    assert!(s.tf.state_file("dev/app").exists());
    s.db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_file_changed_in_the_plan_store_refuses_the_apply_naming_execution_and_object() {
    let s = setup().await;
    let client = s3_client();
    let bucket = new_bucket(&client, "locktamper").await;
    let store = S3ArtifactStore::new(client, &bucket);
    let tokens = RecordingTokens::default();
    let sts = support::sts();
    let ports = ports(&s, &store, &tokens, &sts);
    let repo = Repo {
        clone_url: s.clone_url.clone(),
        token: None,
    };
    terra_run(
        &config("plan", None, &s.clone_url, "dev/app"),
        &repo,
        None,
        &ports,
    )
    .await
    .unwrap();
    let _ = only_sent(&tokens);
    let key = plan_key(ID, &s.commit);
    let json_key = live_ci_core::plan_view::json_key(&key);
    // Someone with write access to the bucket pins another version.
    let sealed = String::from_utf8(store.get(&json_key).await.unwrap().unwrap()).unwrap();
    assert!(sealed.contains(r#"version     = \"1.0.0\""#), "{sealed}");
    let tampered = sealed.replace(r#"version     = \"1.0.0\""#, r#"version     = \"1.1.0\""#);
    store.put(&json_key, tampered.into_bytes()).await.unwrap();

    let marker = s.tf.state.path().join("apply-ran");
    let recorded = s.metadb.execution(ID).await.unwrap().unwrap().apply_command;
    support::record_command(
        &s.db.url,
        ID,
        "apply",
        &format!("touch {}; {recorded}", marker.display()),
    )
    .await;
    support::approve(&s.db.url, &s.metadb, ID).await;
    let err = terra_run(
        &config("apply", Some(&store.uri(&key)), &s.clone_url, "dev/app"),
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
        cause.contains(ID)
            && cause.contains(&store.uri(&json_key))
            && cause.contains("nothing was applied"),
        "{cause}"
    );
    assert!(!marker.exists(), "the apply command never ran");
    assert!(!s.tf.state_file("dev/app").exists(), "nothing applied");
    s.db.drop_db().await;
}

/// A unit whose files name no provider (its resource comes from a module
/// fetched by `git::file://`, a provider block is generated by its commands,
/// as terragrunt's `generate` would): the static reading records no new
/// provider, the plan's `show -json` names both the generated block's and the
/// module resource's, so the apply records the module's resource for
/// rollback, and the rollback's destroy removes it like a local unit's.
/// (The module's resource is the built-in `terraform_data`: the local cloud
/// enforces IAM, and the tests' target-account roles hold no grant.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_module_with_a_generated_provider_is_recorded_and_rolled_back() {
    // The module: a git repository of its own.
    let module = GitRepo::new();
    let name = live_ci_testkit::unique("/e2e/lockfile/remote");
    module.write(
        "main.tf",
        &format!("resource \"terraform_data\" \"marker\" {{\n  input = \"{name}\"\n}}\n"),
    );
    module.commit("module");
    let unit_tf = format!(
        "terraform {{\n  backend \"local\" {{}}\n}}\n\nmodule \"m\" {{\n  source = \"git::file://{}?ref=main\"\n}}\n",
        module.path().display()
    );
    // What create-deploy-stack reads from the unit's files: no provider.
    let tree = live_ci_core::tree::MemTree::new()
        .with("dev/app/main.tf", &unit_tf)
        .unwrap()
        .with("dev/app/terragrunt.hcl", "")
        .unwrap();
    let index = live_ci_terragrunt::providers::ProviderIndex::new(&tree).unwrap();
    let unit = live_ci_terragrunt::unit::Unit::new(live_ci_core::RepoPath::new("dev/app").unwrap());
    assert!(index.providers(&unit).unwrap().is_empty());

    let repo = GitRepo::new();
    repo.write("dev/app/main.tf", &unit_tf);
    // A unit as discovery finds one: terra-run's static reading is
    // create-deploy-stack's.
    repo.write("dev/app/terragrunt.hcl", "");
    let commit = repo.commit("app");
    let mirrors = tempfile::tempdir().unwrap();
    let rc = fake_mirror(mirrors.path(), "plan", &["1.0.0"]);
    // terragrunt's `generate "provider"`, done by the commands themselves.
    let generate = format!(
        "printf '%s\\n' 'terraform {{' '  required_providers {{' '    fake = {{ source = \"example.test/testing/fake\" }}' '  }}' '}}' 'provider \"fake\" {{}}' > provider_generated.tf; export TF_CLI_CONFIG_FILE={rc}; "
    );
    let tf = TfTemplates::new("");
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let mut e = exec(ID, "dev", &[]);
    e.cfg_path = live_ci_core::RepoPath::new("dev/app").unwrap();
    e.plan_command = format!("{generate}{}", tf.plan);
    e.apply_command = format!("{generate}{}", tf.apply);
    e.new_providers = Vec::new();
    let run_id = metadb
        .create_run(&run(&commit, 1, vec![e]))
        .await
        .unwrap()
        .run_id;
    assert_eq!(metadb.claim_ready(run_id, 10).await.unwrap().len(), 1);
    let s = Setup {
        clone_url: repo.url(),
        _repo: repo,
        _mirrors: mirrors,
        tf,
        metadb,
        db,
        commit,
    };
    let client = s3_client();
    let bucket = new_bucket(&client, "remote").await;
    let store = S3ArtifactStore::new(client, &bucket);
    let tokens = RecordingTokens::default();
    let sts = support::sts();
    let ports = ports(&s, &store, &tokens, &sts);
    let git = Repo {
        clone_url: s.clone_url.clone(),
        token: None,
    };
    terra_run(
        &config("plan", None, &s.clone_url, "dev/app"),
        &git,
        None,
        &ports,
    )
    .await
    .unwrap_or_else(|e| panic!("plan: {e}"));
    let Sent::Success { output, .. } = only_sent(&tokens) else {
        panic!("plan failed")
    };
    let artifact = serde_json::from_str::<serde_json::Value>(&output).unwrap()["plan_artifact"]
        .as_str()
        .unwrap()
        .to_string();
    let saved = s.metadb.saved_plan(ID).await.unwrap().unwrap();
    let sealed = store
        .get(&live_ci_core::plan_view::json_key(&saved.key))
        .await
        .unwrap()
        .unwrap();
    let carried = live_ci_core::plan_view::open_for_apply(&saved, Some(&sealed)).unwrap();
    assert_eq!(
        carried.new_providers,
        vec![
            "example.test/testing/fake".to_string(),
            "terraform.io/builtin/terraform".to_string()
        ]
    );
    support::approve(&s.db.url, &s.metadb, ID).await;
    terra_run(
        &config("apply", Some(&artifact), &s.clone_url, "dev/app"),
        &git,
        None,
        &ports,
    )
    .await
    .unwrap_or_else(|e| panic!("apply: {e}"));
    let _ = only_sent(&tokens);
    let record = s.metadb.execution(ID).await.unwrap().unwrap();
    assert_eq!(
        record.new_resources,
        vec!["module.m.terraform_data.marker".to_string()]
    );

    // The run failed elsewhere: its rollback destroys exactly that, as a
    // local unit's would.
    let mut failed: ExecutionRecord = record.clone();
    failed.execution_id = "run-9-l-dev-other-002".into();
    failed.cfg_path = live_ci_core::RepoPath::new("dev/other").unwrap();
    failed.status = ExecutionStatus::Failed;
    failed.new_resources = Vec::new();
    let mut done = record.clone();
    done.status = ExecutionStatus::Succeeded;
    let rollbacks = plan_rollbacks(&[done, failed]);
    assert_eq!(rollbacks.len(), 1, "{rollbacks:?}");
    let rb = &rollbacks[0];
    assert_eq!(rb.resources, record.new_resources);
    // Its destroy plan, run through terra-run like any plan, then applied.
    let rb_id = rb.execution.execution_id.clone();
    // What trigger-sf records when the execution ends.
    live_ci_metadb::connect(&s.db.url)
        .await
        .unwrap()
        .execute(
            "UPDATE executions SET status = 'succeeded', finished_at = now() WHERE execution_id = $1",
            &[&ID],
        )
        .await
        .unwrap();
    let added = s
        .metadb
        .add_rollbacks(record.run_id, &rollbacks)
        .await
        .unwrap();
    assert_eq!(added, vec![rb_id.clone()]);
    let rb_config = |phase: &str, artifact: Option<&str>| {
        let mut pairs = vec![
            ("LIVE_CI_PHASE", phase),
            ("LIVE_CI_TASK_TOKEN", "token-1"),
            ("LIVE_CI_EXECUTION_ID", rb_id.as_str()),
            ("LIVE_CI_CFG_PATH", "dev/app"),
            ("HEARTBEAT_SECONDS", "5"),
            ("REPO_CLONE_URL", s.clone_url.as_str()),
        ];
        if let Some(a) = artifact {
            pairs.push(("LIVE_CI_PLAN_ARTIFACT", a));
        }
        support::config::<live_ci_task::TerraRunConfig>(&pairs)
    };
    terra_run(&rb_config("plan", None), &git, None, &ports)
        .await
        .unwrap_or_else(|e| panic!("rollback plan: {e}"));
    let Sent::Success { output, .. } = only_sent(&tokens) else {
        panic!("rollback plan failed")
    };
    let plan: serde_json::Value = serde_json::from_str(&output).unwrap();
    assert_eq!(plan["to_destroy"], 1, "{plan}");
    support::approve(&s.db.url, &s.metadb, &rb_id).await;
    terra_run(
        &rb_config("apply", plan["plan_artifact"].as_str()),
        &git,
        None,
        &ports,
    )
    .await
    .unwrap_or_else(|e| panic!("rollback apply: {e}"));
    let _ = only_sent(&tokens);
    let state = std::fs::read_to_string(s.tf.state_file("dev/app")).unwrap();
    assert!(!state.contains("terraform_data"), "{state}");
    s.db.drop_db().await;
}
