//! A run's packed checkout (issue 17) end to end: create-deploy-stack packs
//! the merge commit's checkout into LocalStack S3 and records it on the run in
//! a real PostgreSQL metadb; terra-run (real terraform and git) unpacks it
//! instead of fetching the commit, refuses content that is not the recorded
//! one and archives whose entries escape its scratch directory, and falls back
//! to the fetch when the object is missing or was never stored.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::process::Command;

use live_ci_aws::S3ArtifactStore;
use live_ci_core::deploy::{ExecutionRecord, RunId};
use live_ci_core::port::{ArtifactStore, CachedCheckout, ExecutionStore, RunStore, sha256_hex};
use live_ci_core::status::Statuses;
use live_ci_core::terraform::plan_key;
use live_ci_metadb::PgMetadb;
use live_ci_task::create_deploy_stack::{DeployReport, Wiring, create_deploy_stack};
use live_ci_task::terra_run::{TerraRunPorts, terra_run};
use live_ci_task::{CreateDeployStackConfig, TaskError, TerraRunConfig, checkout::Repo};
use live_ci_testkit::{localstack_endpoint, unique};
use serde_json::Value;
use support::fakes::{MemoryParams, RecordingGitHost, RecordingInvoker, RecordingTokens, Sent};
use support::pg::{TestDb, exec, run};
use support::repo::{GitRepo, TfTemplates};
use support::{new_bucket, s3_client};

const DEV_ONLY: &str = r#"[{"name": "dev", "path": "dev", "voters": ["dev@example.com"],
  "min_approval_count": 1, "min_rejection_count": 1,
  "plan_role_arn": "arn:aws:iam::222222222222:role/plan", "apply_role_arn": "arn:aws:iam::222222222222:role/apply"}]"#;

/// A trunk whose last commit changes `dev/app`, merged through
/// create-deploy-stack with `store` for the packed checkout; the run's one
/// execution is claimed, as when the state machine starts terra-run.
struct Deployed {
    repo: Option<GitRepo>,
    url: String,
    tf: TfTemplates,
    db: TestDb,
    metadb: PgMetadb,
    commit: String,
    report: DeployReport,
    run_id: RunId,
    execution: ExecutionRecord,
    github: RecordingGitHost,
}

async fn deployed<A: ArtifactStore>(store: &A) -> Deployed {
    let repo = GitRepo::new();
    repo.unit("dev/app", "1", &[]);
    repo.commit("base");
    repo.unit("dev/app", "2", &[]);
    let commit = repo.commit("change dev/app");
    merged(store, repo, commit).await
}

/// `repo`'s `commit` merged through create-deploy-stack with `store` for the
/// packed checkout; its one execution claimed.
async fn merged<A: ArtifactStore>(store: &A, repo: GitRepo, commit: String) -> Deployed {
    let url = repo.url();
    let tf = TfTemplates::new("");
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let (params, github, invoker) = (
        MemoryParams::default(),
        RecordingGitHost::default(),
        RecordingInvoker::default(),
    );
    let sts = support::sts();
    let report = create_deploy_stack(
        &merge_config(&url, &commit, &tf),
        &Repo {
            clone_url: url.clone(),
            token: None,
        },
        None,
        &Wiring {
            metadb: &metadb,
            params: &params,
            github: &github,
            invoker: &invoker,
            roles: &sts,
            artifacts: store,
        },
    )
    .await
    .unwrap();
    let run_id = report.run_id.unwrap();
    let mut claimed = metadb.claim_ready(run_id, 10).await.unwrap();
    assert_eq!(claimed.len(), 1);
    Deployed {
        repo: Some(repo),
        url,
        tf,
        db,
        metadb,
        commit,
        report,
        run_id,
        execution: claimed.remove(0),
        github,
    }
}

fn merge_config(url: &str, commit: &str, tf: &TfTemplates) -> CreateDeployStackConfig {
    support::config(&[
        ("REPO_CLONE_URL", url),
        ("LIVE_CI_PR_NUMBER", "1"),
        ("LIVE_CI_COMMIT", commit),
        ("MERGE_LOCK_SSM_KEY", "/live-ci/merge-lock"),
        ("TRIGGER_SF_FUNCTION_NAME", "live-ci-trigger-sf"),
        ("ACCOUNT_PARENT_CFG", DEV_ONLY),
        ("PLAN_COMMAND", tf.plan.as_str()),
        ("APPLY_COMMAND", tf.apply.as_str()),
    ])
}

/// terra-run's configuration for one phase of `id`, cloning from `url`.
fn phase(id: &str, phase: &str, artifact: Option<&str>, url: &str) -> TerraRunConfig {
    let mut pairs = vec![
        ("LIVE_CI_PHASE", phase),
        ("LIVE_CI_TASK_TOKEN", "token-c"),
        ("LIVE_CI_EXECUTION_ID", id),
        ("LIVE_CI_CFG_PATH", "dev/app"),
        ("HEARTBEAT_SECONDS", "30"),
        ("REPO_CLONE_URL", url),
    ];
    if let Some(a) = artifact {
        pairs.push(("LIVE_CI_PLAN_ARTIFACT", a));
    }
    support::config(&pairs)
}

/// Plans then applies the execution through terra-run; the plan's artifact.
async fn plan_and_apply<A: ArtifactStore>(d: &Deployed, store: &A, url: &str) {
    let tokens = RecordingTokens::default();
    let sts = support::sts();
    let ports = TerraRunPorts {
        metadb: &d.metadb,
        artifacts: store,
        tokens: &tokens,
        roles: &sts,
        statuses: Statuses::new(&d.github, Default::default()),
    };
    let repo = Repo {
        clone_url: url.to_string(),
        token: None,
    };
    let id = &d.execution.execution_id;
    terra_run(&phase(id, "plan", None, url), &repo, None, &ports)
        .await
        .unwrap();
    let sent = tokens.take();
    let Some(Sent::Success { output, .. }) = sent.first() else {
        panic!("the plan failed: {sent:?}")
    };
    let plan: Value = serde_json::from_str(output).unwrap();
    assert_eq!(plan["to_add"].as_u64(), Some(1), "{plan}");
    let artifact = plan["plan_artifact"].as_str().unwrap().to_string();
    support::approve(&d.db.url, &d.metadb, id).await;
    terra_run(
        &phase(id, "apply", Some(&artifact), url),
        &repo,
        None,
        &ports,
    )
    .await
    .unwrap();
    let sent = tokens.take();
    assert!(
        matches!(sent.first(), Some(Sent::Success { .. })),
        "the apply failed: {sent:?}"
    );
    let state = std::fs::read_to_string(d.tf.state_file("dev/app")).unwrap();
    assert!(state.contains("terraform_data"), "{state}");
}

/// create-deploy-stack packs what terra-run needs (the commit alone: its tree
/// and a one-commit `.git`), stores it at its content's key, and records key
/// and digest on the run; the claimed execution record carries them. A
/// redelivered merge packs the same bytes (the key does not change).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_deploy_stack_records_the_runs_checkout_and_the_claim_carries_it() {
    let client = s3_client();
    let bucket = new_bucket(&client, "cds-checkout").await;
    let store = S3ArtifactStore::new(client, &bucket);
    let d = deployed(&store).await;
    let run = d.metadb.run(d.run_id).await.unwrap().unwrap();
    let packed = run.checkout.clone().expect("the run records its checkout");
    assert!(
        packed.key.starts_with(&format!("checkouts/{}/", d.commit)),
        "{packed:?}"
    );
    assert_eq!(d.execution.checkout.as_ref(), Some(&packed));
    assert_eq!(
        d.metadb
            .execution(&d.execution.execution_id)
            .await
            .unwrap()
            .unwrap()
            .checkout
            .as_ref(),
        Some(&packed)
    );
    let bytes = store.get(&packed.key).await.unwrap().unwrap();
    assert_eq!(sha256_hex(&bytes), packed.sha256);
    assert_eq!(CachedCheckout::of(&d.commit, &bytes), packed);

    // The archive is the commit checked out with a one-commit `.git`.
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("repo");
    live_ci_task::checkout_cache::unpack(&bytes, &dir).unwrap();
    let git = |args: &[&str]| live_ci_testkit::git(&dir, args);
    assert_eq!(git(&["rev-parse", "HEAD"]), d.commit);
    assert_eq!(git(&["rev-list", "--count", "HEAD"]), "1");
    assert!(
        std::fs::read_to_string(dir.join("dev/app/main.tf"))
            .unwrap()
            .contains("input = 2")
    );
    assert!(!dir.join(".git/FETCH_HEAD").exists());

    // A redelivery: the run exists; the same commit packs to the same key.
    let again = create_deploy_stack(
        &merge_config(&d.url, &d.commit, &d.tf),
        &Repo {
            clone_url: d.url.clone(),
            token: None,
        },
        None,
        &Wiring {
            metadb: &d.metadb,
            params: &MemoryParams::default(),
            github: &RecordingGitHost::default(),
            invoker: &RecordingInvoker::default(),
            roles: &support::sts(),
            artifacts: &store,
        },
    )
    .await
    .unwrap();
    assert!(!again.created);
    assert_eq!(
        d.metadb.run(d.run_id).await.unwrap().unwrap().checkout,
        Some(packed.clone())
    );
    assert_eq!(store.get(&packed.key).await.unwrap().unwrap(), bytes);
    assert!(d.report.warnings.is_empty(), "{:?}", d.report.warnings);
    d.db.drop_db().await;
}

/// With the run's checkout in S3, plan and apply need no repository: the
/// clone URL names a directory that no longer exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_with_a_packed_checkout_plans_and_applies_without_the_repository() {
    let client = s3_client();
    let bucket = new_bucket(&client, "no-repo").await;
    let store = S3ArtifactStore::new(client, &bucket);
    let mut d = deployed(&store).await;
    assert!(d.execution.checkout.is_some());
    let gone = d.repo.take().unwrap();
    let path = gone.path().to_path_buf();
    drop(gone);
    assert!(!path.exists());
    plan_and_apply(&d, &store, &path.display().to_string()).await;
    d.db.drop_db().await;
}

/// Different bytes at the recorded key (here a valid archive of a changed
/// tree) fail the token with the digest error naming the key and both
/// digests; nothing runs: no plan is stored or recorded, no state is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_packed_checkout_fails_the_token_and_runs_nothing() {
    let client = s3_client();
    let bucket = new_bucket(&client, "tampered").await;
    let store = S3ArtifactStore::new(client, &bucket);
    let d = deployed(&store).await;
    let packed = d.execution.checkout.clone().unwrap();
    let original = store.get(&packed.key).await.unwrap().unwrap();
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("repo");
    live_ci_task::checkout_cache::unpack(&original, &tree).unwrap();
    std::fs::write(
        tree.join("dev/app/main.tf"),
        "terraform {\n  backend \"local\" {}\n}\n\nresource \"terraform_data\" \"this\" {\n  input = 666\n}\n",
    )
    .unwrap();
    let tampered = live_ci_task::checkout_cache::pack(&tree).unwrap();
    store.put(&packed.key, tampered.clone()).await.unwrap();

    let tokens = RecordingTokens::default();
    let sts = support::sts();
    let ports = TerraRunPorts {
        metadb: &d.metadb,
        artifacts: &store,
        tokens: &tokens,
        roles: &sts,
        statuses: Statuses::new(&d.github, Default::default()),
    };
    let marker = work.path().join("plan-ran");
    let id = &d.execution.execution_id;
    let config = phase(id, "plan", None, &d.url);
    support::record_command(
        &d.db.url,
        id,
        "plan",
        &format!("touch {}; {}", marker.display(), d.tf.plan),
    )
    .await;
    let repo = Repo {
        clone_url: d.url.clone(),
        token: None,
    };
    let err = terra_run(&config, &repo, None, &ports).await.unwrap_err();
    assert!(matches!(err, TaskError::CachedCheckout { .. }), "{err}");
    let sent = tokens.take();
    let [Sent::Failure { error, cause, .. }] = sent.as_slice() else {
        panic!("expected one failure: {sent:?}")
    };
    assert_eq!(error, "CheckoutArchive");
    for part in [&packed.key, &packed.sha256, &sha256_hex(&tampered)] {
        assert!(cause.contains(part.as_str()), "{part} not in {cause}");
    }
    assert!(!marker.exists(), "the plan command never ran");
    assert_eq!(d.metadb.saved_plan(id).await.unwrap(), None);
    assert_eq!(
        store.get(&plan_key(id, &d.commit)).await.unwrap(),
        None,
        "no plan stored"
    );
    assert!(!d.tf.state_file("dev/app").exists(), "no state written");
    d.db.drop_db().await;
}

/// Raw archive entries: (path, type, link target).
type RawEntries = Vec<(String, tar::EntryType, String)>;

/// A tar header naming `path` as is (the builder refuses such paths, which is
/// the point): a regular file with `data`, or a link to `link`.
fn raw_entry(
    builder: &mut tar::Builder<Vec<u8>>,
    path: &str,
    kind: tar::EntryType,
    link: &str,
    data: &[u8],
) {
    let mut header = tar::Header::new_old();
    let name = &mut header.as_old_mut().name;
    name[..path.len()].copy_from_slice(path.as_bytes());
    let linkname = &mut header.as_old_mut().linkname;
    linkname[..link.len()].copy_from_slice(link.as_bytes());
    header.set_entry_type(kind);
    header.set_mode(0o644);
    header.set_size(data.len() as u64);
    header.set_cksum();
    builder.append(&header, data).unwrap();
}

/// Archives whose entries escape the scratch directory are refused before
/// anything is written: a path climbing with `..`, an absolute path, a write
/// through a symbolic link the archive made, a hard link to a file outside.
/// Each is recorded as the run's checkout (as if the packer had been
/// subverted), so only the unpacking stands in the way; nothing appears
/// outside and the victim file keeps its content.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_with_an_escaping_entry_is_refused_and_writes_nothing_outside() {
    let client = s3_client();
    let bucket = new_bucket(&client, "escape").await;
    let store = S3ArtifactStore::new(client, &bucket);
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    // Outside: a directory beside the task's scratch directories.
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, "original").unwrap();
    let outside_name = outside.path().file_name().unwrap().to_str().unwrap();
    let outside_abs = outside.path().display().to_string();
    let regular = tar::EntryType::Regular;
    let cases: Vec<(&str, RawEntries)> = vec![
        (
            "climbs",
            vec![(
                format!("../../{outside_name}/climbed"),
                regular,
                String::new(),
            )],
        ),
        (
            "absolute",
            vec![(format!("{outside_abs}/absolute"), regular, String::new())],
        ),
        (
            "through a link",
            vec![
                ("dev".into(), tar::EntryType::Symlink, outside_abs.clone()),
                ("dev/through-link".into(), regular, String::new()),
            ],
        ),
        (
            "hard link",
            vec![
                (
                    "app.tf".into(),
                    tar::EntryType::Link,
                    victim.display().to_string(),
                ),
                ("app.tf".into(), regular, String::new()),
            ],
        ),
    ];
    let tokens = RecordingTokens::default();
    let github = RecordingGitHost::default();
    let sts = support::sts();
    let ports = TerraRunPorts {
        metadb: &metadb,
        artifacts: &store,
        tokens: &tokens,
        roles: &sts,
        statuses: Statuses::new(&github, Default::default()),
    };
    for (i, (case, entries)) in cases.iter().enumerate() {
        let mut builder = tar::Builder::new(Vec::new());
        for (path, kind, link) in entries {
            raw_entry(&mut builder, path, *kind, link, b"pwned");
        }
        let bytes = builder.into_inner().unwrap();
        let commit = format!("{i:0>40}");
        let packed = CachedCheckout::of(&commit, &bytes);
        store.put(&packed.key, bytes).await.unwrap();
        let id = format!("run-7-esc{i}-dev-app-00{i}");
        let marker = outside.path().join(format!("ran-{i}"));
        let mut e = exec(&id, "dev", &[]);
        e.cfg_path = live_ci_core::RepoPath::new("dev/app").unwrap();
        e.plan_command = format!("touch {}", marker.display());
        let mut r = run(&commit, 1, vec![e]);
        r.checkout = Some(packed.clone());
        metadb.create_run(&r).await.unwrap();
        let config = phase(&id, "plan", None, "/nonexistent/live-ci-repo");
        let err = terra_run(
            &config,
            &Repo {
                clone_url: "/nonexistent/live-ci-repo".into(),
                token: None,
            },
            None,
            &ports,
        )
        .await
        .unwrap_err();
        assert!(
            matches!(err, TaskError::CachedCheckout { .. }),
            "{case}: {err}"
        );
        let sent = tokens.take();
        let [Sent::Failure { error, cause, .. }] = sent.as_slice() else {
            panic!("{case}: expected one failure: {sent:?}")
        };
        assert_eq!(error, "CheckoutArchive", "{case}");
        let named = &entries.last().unwrap().0;
        assert!(
            cause.contains(&packed.key) && cause.contains(named.as_str()),
            "{case}: {cause}"
        );
        assert!(!marker.exists(), "{case}: the command ran");
    }
    let mut left: Vec<String> = std::fs::read_dir(outside.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    left.sort();
    assert_eq!(left, ["victim"], "written outside the scratch directory");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "original");
    db.drop_db().await;
}

/// An archive whose digest is the recorded one but whose `.git` does not name
/// the run's commit as its detached HEAD is refused and nothing runs: another
/// commit checked out, a HEAD that names a branch (even one at the run's
/// commit: the packer always detaches), a HEAD that is a link, and no `.git`.
/// terra-run reads `.git/HEAD` itself (no git process), so each layout is
/// recorded as the run's checkout (as if the packer or the record had been
/// subverted) and only that check stands in the way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_that_does_not_hold_the_runs_commit_detached_is_refused() {
    let client = s3_client();
    let bucket = new_bucket(&client, "head").await;
    let store = S3ArtifactStore::new(client, &bucket);
    let d = deployed(&store).await;
    let original = store
        .get(&d.execution.checkout.as_ref().unwrap().key)
        .await
        .unwrap()
        .unwrap();
    let other = "0123456789abcdef0123456789abcdef01234567";
    let work = tempfile::tempdir().unwrap();
    type Change = Box<dyn Fn(&std::path::Path)>;
    let head_of = |tree: &std::path::Path| tree.join(".git/HEAD");
    let cases: Vec<(&str, &str, Change)> = vec![
        (
            "another commit",
            "not the run's commit",
            Box::new(move |tree| std::fs::write(head_of(tree), format!("{other}\n")).unwrap()),
        ),
        (
            "a branch at the run's commit",
            "not a detached commit id",
            Box::new({
                let commit = d.commit.clone();
                move |tree| {
                    std::fs::create_dir_all(tree.join(".git/refs/heads")).unwrap();
                    std::fs::write(tree.join(".git/refs/heads/main"), format!("{commit}\n"))
                        .unwrap();
                    std::fs::write(head_of(tree), "ref: refs/heads/main\n").unwrap();
                }
            }),
        ),
        (
            "a link",
            "is not a regular file",
            Box::new({
                let commit = d.commit.clone();
                move |tree| {
                    std::fs::write(tree.join("id"), format!("{commit}\n")).unwrap();
                    std::fs::remove_file(head_of(tree)).unwrap();
                    std::os::unix::fs::symlink("../id", head_of(tree)).unwrap();
                }
            }),
        ),
        (
            "no .git",
            "cannot be read",
            Box::new(|tree| std::fs::remove_dir_all(tree.join(".git")).unwrap()),
        ),
        // The digest is the archive's; the files must still be the commit's
        // tree (issue 27 item 6 i), and the archive's git configuration is
        // never read: its fsmonitor canary does not run.
        (
            "a changed file and a hostile .git/config",
            "\"dev/app/main.tf\"] differ",
            Box::new({
                let canary = work.path().join("config-canary");
                move |tree| {
                    std::fs::write(tree.join("dev/app/main.tf"), "# tampered\n").unwrap();
                    let config = tree.join(".git/config");
                    let mut text = std::fs::read_to_string(&config).unwrap();
                    text.push_str(&format!(
                        "[core]\n\tfsmonitor = \"touch '{}'; false\"\n",
                        canary.display()
                    ));
                    std::fs::write(config, text).unwrap();
                }
            }),
        ),
        (
            "an added file",
            "\"dev/app/extra.tf\"] differ",
            Box::new(|tree| std::fs::write(tree.join("dev/app/extra.tf"), "locals {}\n").unwrap()),
        ),
        (
            "an alternate object store",
            "\".git/objects/info/alternates\"",
            Box::new(|tree| {
                std::fs::create_dir_all(tree.join(".git/objects/info")).unwrap();
                std::fs::write(tree.join(".git/objects/info/alternates"), "/tmp\n").unwrap();
            }),
        ),
        (
            "a common dir elsewhere",
            "\".git/commondir\"",
            Box::new(|tree| std::fs::write(tree.join(".git/commondir"), "/tmp\n").unwrap()),
        ),
    ];
    let tokens = RecordingTokens::default();
    let sts = support::sts();
    for (i, (case, why, change)) in cases.iter().enumerate() {
        // A database of its own per case: a run per commit.
        let db = TestDb::new().await;
        let metadb = db.metadb(2).await;
        let ports = TerraRunPorts {
            metadb: &metadb,
            artifacts: &store,
            tokens: &tokens,
            roles: &sts,
            statuses: Statuses::new(&d.github, Default::default()),
        };
        let tree = work.path().join(format!("tree-{i}"));
        live_ci_task::checkout_cache::unpack(&original, &tree).unwrap();
        change(&tree);
        let bytes = live_ci_task::checkout_cache::pack(&tree).unwrap();
        let packed = CachedCheckout::of(&d.commit, &bytes);
        store.put(&packed.key, bytes).await.unwrap();
        let id = format!("run-7-head{i}-dev-app-00{i}");
        let marker = work.path().join(format!("ran-{i}"));
        let mut e = exec(&id, "dev", &[]);
        e.cfg_path = live_ci_core::RepoPath::new("dev/app").unwrap();
        e.plan_command = format!("touch {}; {}", marker.display(), d.tf.plan);
        let mut r = run(&d.commit, 1, vec![e]);
        r.checkout = Some(packed.clone());
        metadb.create_run(&r).await.unwrap();
        let config = phase(&id, "plan", None, &d.url);
        let repo = Repo {
            clone_url: d.url.clone(),
            token: None,
        };
        let err = terra_run(&config, &repo, None, &ports).await.unwrap_err();
        assert!(
            matches!(err, TaskError::CachedCheckout { .. }),
            "{case}: {err}"
        );
        let sent = tokens.take();
        let [Sent::Failure { error, cause, .. }] = sent.as_slice() else {
            panic!("{case}: expected one failure: {sent:?}")
        };
        assert_eq!(error, "CheckoutArchive", "{case}");
        assert!(
            cause.contains(&packed.key) && cause.contains(why),
            "{case}: {cause}"
        );
        assert!(!marker.exists(), "{case}: the command ran");
        db.drop_db().await;
    }
    assert!(
        !work.path().join("config-canary").exists(),
        "the archive's .git/config ran its fsmonitor"
    );
    d.db.drop_db().await;
}

/// The run's object is gone (expired, deleted): terra-run warns and fetches
/// the commit from the repository, and the unit still deploys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_packed_checkout_falls_back_to_the_fetch_and_the_unit_deploys() {
    let client = s3_client();
    let bucket = new_bucket(&client, "missing").await;
    let store = S3ArtifactStore::new(client.clone(), &bucket);
    let d = deployed(&store).await;
    let packed = d.execution.checkout.clone().unwrap();
    client
        .delete_object()
        .bucket(&bucket)
        .key(&packed.key)
        .send()
        .await
        .unwrap();
    assert_eq!(store.get(&packed.key).await.unwrap(), None);
    plan_and_apply(&d, &store, &d.url).await;
    assert_eq!(store.get(&packed.key).await.unwrap(), None);
    d.db.drop_db().await;
}

/// The task's environment as the module gives it (terraform's offline mirror
/// included), for the real binary.
fn task_binary(env: &[(&str, &str)]) -> Command {
    task_binary_at(env!("CARGO_BIN_EXE_live-ci-task"), env)
}

/// [`task_binary`] with another build of the binary (for the measurement).
fn task_binary_at(program: &str, env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(program);
    cmd.arg("terra-run").env_clear();
    for (k, v) in std::env::vars() {
        if k == "PATH" || k == "HOME" || k.starts_with("TF_") {
            cmd.env(k, v);
        }
    }
    cmd.env("AWS_ENDPOINT_URL", localstack_endpoint().unwrap())
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("LIVE_CI_TASK_TOKEN", "token-timeline")
        .env("LIVE_CI_PHASE", "plan")
        .env("SHOW_COMMAND", support::repo::SHOW_COMMAND)
        .envs(env.iter().copied());
    cmd
}

/// The marks of the binary's "task timeline" line (ms since its start).
fn timeline(stderr: &str) -> Vec<(String, u64)> {
    // The log's field names and values come wrapped in ANSI colours.
    let mut plain = String::with_capacity(stderr.len());
    let mut chars = stderr.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    let line = plain
        .lines()
        .find(|l| l.contains("task timeline"))
        .unwrap_or_else(|| panic!("no task timeline: {stderr}"));
    let marks = line
        .split("marks=")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    marks
        .split(',')
        .map(|m| {
            let (n, at) = m.split_once(':').unwrap();
            (n.to_string(), at.parse().unwrap())
        })
        .collect()
}

fn at(marks: &[(String, u64)], name: &str) -> Option<u64> {
    marks.iter().find(|(n, _)| n == name).map(|(_, at)| *at)
}

/// Both ways through the real binary: a run whose checkout could not be
/// stored (create-deploy-stack's bucket does not exist) has no record and its
/// plan fetches the commit; a run with one plans from the unpacked archive,
/// its repository gone. Each task's timeline shows which, and prints the
/// checkout's time (execution record read → checkout ready) for the report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_task_timeline_shows_a_fetch_without_a_packed_checkout_and_an_unpack_with_one() {
    let client = s3_client();
    let plans = new_bucket(&client, "timeline").await;
    let store = S3ArtifactStore::new(client.clone(), &plans);
    let unstored = S3ArtifactStore::new(client, unique("no-such-bucket").to_lowercase());
    let mut results = Vec::new();
    for (how, packed) in [("fetched", false), ("unpacked", true)] {
        let mut d = if packed {
            deployed(&store).await
        } else {
            deployed(&unstored).await
        };
        assert_eq!(d.execution.checkout.is_some(), packed, "{how}");
        if !packed {
            assert!(
                d.report
                    .warnings
                    .iter()
                    .any(|w| w.contains("checkout is not cached") && w.contains("storing")),
                "create-deploy-stack says why: {:?}",
                d.report.warnings
            );
        }
        let url = if packed {
            let gone = d.repo.take().unwrap();
            let path = gone.path().display().to_string();
            drop(gone);
            path
        } else {
            d.url.clone()
        };
        let out = task_binary(&[
            ("METADB_URL", d.db.url.as_str()),
            ("PLAN_BUCKET", plans.as_str()),
            ("REPO_CLONE_URL", url.as_str()),
            ("LIVE_CI_EXECUTION_ID", d.execution.execution_id.as_str()),
        ])
        .output()
        .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stdout.contains("live-ci: plan saved to"),
            "{how}: {stdout}\n{stderr}"
        );
        assert_eq!(
            stdout.contains("unpacked from the run's packed checkout"),
            packed,
            "{how}: {stdout}"
        );
        let marks = timeline(&stderr);
        assert_eq!(
            at(&marks, "checkout_download").is_some(),
            packed,
            "{marks:?}"
        );
        let checkout = at(&marks, "checkout").unwrap() - at(&marks, "execution").unwrap();
        results.push(format!("{how}: checkout {checkout} ms ({marks:?})"));
        d.db.drop_db().await;
    }
    eprintln!("task timeline, plan phase: {}", results.join("; "));
}

/// Not a check but the measurement of issue 17's "task code": the real binary
/// plans then applies a new unit (so its apply records new provider
/// resources) from the run's packed checkout, `LIVE_CI_MEASURE_RUNS` times
/// (default 10), and prints each step's median (ms from the previous mark, as
/// `make bench-pipeline` splits them) per phase. By hand:
/// `LIVE_CI_MEASURE_RUNS=10 cargo test -p live-ci-task --test it measure_ -- --ignored --nocapture`
/// (with the Makefile's test environment: PostgreSQL and LocalStack).
/// `LIVE_CI_MEASURE_BINS=/a/live-ci-task:/b/live-ci-task` compares builds on
/// a shared machine: each round runs every one of them in turn.
/// `LIVE_CI_MEASURE_DATA_API=1` has the tasks reach the metadb through the
/// local cloud's RDS Data API (the module's default) instead of `METADB_URL`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, run by hand"]
async fn measure_the_task_timeline_of_a_new_units_plan_and_apply() {
    let runs: usize = std::env::var("LIVE_CI_MEASURE_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10);
    let client = s3_client();
    let plans = new_bucket(&client, "measure").await;
    let store = S3ArtifactStore::new(client, &plans);
    let repo = GitRepo::new();
    repo.write("README.md", "docs\n");
    repo.commit("base");
    repo.unit("dev/app", "1", &[]);
    let commit = repo.commit("add dev/app");
    // The repository stays alive (`_repo`) while the tasks run.
    let Deployed {
        repo: _repo,
        url,
        db,
        metadb,
        execution,
        ..
    } = merged(&store, repo, commit.clone()).await;
    // Every apply below is of this approved execution.
    support::approve(&db.url, &metadb, &execution.execution_id).await;
    assert!(execution.checkout.is_some());
    assert!(
        !execution.new_providers.is_empty(),
        "a new unit's apply records its resources"
    );
    let id = execution.execution_id.as_str();
    let artifact = format!("s3://{plans}/{}", plan_key(id, &commit));
    let cluster = match std::env::var("LIVE_CI_MEASURE_DATA_API").as_deref() {
        Ok("1") => Some(
            live_ci_testkit::data_api::create_cluster(
                &localstack_endpoint().unwrap(),
                &unique("measure"),
                &db.name,
                "liveci_master",
            )
            .await
            .unwrap(),
        ),
        _ => None,
    };
    let metadb_env: Vec<(&str, &str)> = match &cluster {
        Some(c) => vec![
            ("METADB_CLUSTER_ARN", c.cluster_arn.as_str()),
            ("METADB_SECRET_ARN", c.secret_arn.as_str()),
            ("METADB_NAME", c.database.as_str()),
        ],
        None => vec![("METADB_URL", db.url.as_str())],
    };
    let bins: Vec<String> = std::env::var("LIVE_CI_MEASURE_BINS")
        .map(|b| b.split(':').map(str::to_string).collect())
        .unwrap_or_else(|_| vec![env!("CARGO_BIN_EXE_live-ci-task").to_string()]);
    let mut steps: std::collections::BTreeMap<(String, String), Vec<u64>> = Default::default();
    for (_, (b, bin)) in (0..runs).flat_map(|r| bins.iter().enumerate().map(move |b| (r, b))) {
        let tag = if bins.len() > 1 {
            format!("bin{b} ")
        } else {
            String::new()
        };
        for (phase, artifact) in [("plan", None), ("apply", Some(artifact.as_str()))] {
            let mut env = metadb_env.clone();
            env.extend([
                ("PLAN_BUCKET", plans.as_str()),
                ("REPO_CLONE_URL", url.as_str()),
                ("LIVE_CI_EXECUTION_ID", id),
                ("LIVE_CI_PHASE", phase),
            ]);
            env.extend(artifact.map(|a| ("LIVE_CI_PLAN_ARTIFACT", a)));
            let out = task_binary_at(bin, &env).output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            let phase = format!("{tag}{phase}");
            let phase = phase.as_str();
            assert!(
                stdout.contains("unpacked from the run's packed checkout")
                    && (phase.ends_with("plan") || stdout.contains("recorded for rollback")),
                "{phase}: {stdout}\n{stderr}"
            );
            let marks = timeline(&stderr);
            // Spans that concurrent steps cannot blur: the record read to the
            // checkout and the role both ready, and the whole task.
            let ready = ["checkout", "role"]
                .iter()
                .filter_map(|n| at(&marks, n))
                .max()
                .unwrap();
            for (span, ms) in [
                (
                    "= execution..checkout+role",
                    ready - at(&marks, "execution").unwrap(),
                ),
                ("= start..answered", at(&marks, "answered").unwrap()),
            ] {
                steps
                    .entry((phase.to_string(), span.to_string()))
                    .or_default()
                    .push(ms);
            }
            let mut previous = 0;
            for (name, at) in marks {
                steps
                    .entry((phase.to_string(), name))
                    .or_default()
                    .push(at - previous);
                previous = at;
            }
        }
    }
    for ((phase, name), mut ms) in steps {
        ms.sort_unstable();
        eprintln!(
            "{phase} {name}: p50 {} ms (min {}, max {}, n {})",
            ms[ms.len() / 2],
            ms[0],
            ms[ms.len() - 1],
            ms.len()
        );
    }
    db.drop_db().await;
}
