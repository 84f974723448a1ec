//! Stacks deploy, or say why not: a `terragrunt.stack.hcl` of two units from
//! local sources is generated into pr-plan's and create-deploy-stack's
//! checkouts, planned by real terraform (through the configurable plan
//! command: terragrunt is not installed here, so what terragrunt itself does
//! with `values` at run time is not exercised) and recorded for deployment in
//! dependency order; terra-run's own checkout generates them too. A change to
//! a stack with a remote source fails both tasks before anything is written,
//! naming the stack and the construct.
#![allow(clippy::unwrap_used)]

use crate::support;

use live_ci_core::port::{ExecutionStore, RunStore};
use live_ci_core::status::{StatusState, Statuses, context};
use live_ci_task::checkout::{Checkout, Repo};
use live_ci_task::create_deploy_stack::{DeployReport, Wiring, create_deploy_stack};
use live_ci_task::pr_plan::{COMMENT_MARKER, pr_plan};
use live_ci_task::{CreateDeployStackConfig, Result};
use support::fakes::{MemArtifacts, MemoryParams, RecordingGitHost, RecordingInvoker};
use support::pg::TestDb;
use support::repo::{GitRepo, TfTemplates};

const LOCK: &str = "/live-ci/merge-lock";

const LIVE: &str = r#"[{"name": "live", "path": "live", "voters": ["dev@example.com"],
  "min_approval_count": 1, "min_rejection_count": 1,
  "plan_role_arn": "arn:aws:iam::222222222222:role/plan", "apply_role_arn": "arn:aws:iam::222222222222:role/apply"}]"#;

const TF: &str = "terraform {\n  backend \"local\" {}\n}\n\nresource \"terraform_data\" \"this\" {\n  input = 1\n}\n";

/// Two units from local sources; `app` depends on `net` through its values.
const STACK: &str = r#"unit "net" {
  source = "../catalog/net"
  path   = "net"
  values = { name = "net" }
}

unit "app" {
  source = "../catalog/app"
  path   = "app"
  values = {
    name    = "app"
    net_dir = "../net"
  }
}
"#;

const REMOTE_STACK: &str = r#"unit "net" {
  source = "git::https://github.com/acme/catalog.git//net?ref=v1"
  path   = "net"
}
"#;

/// `live/x` on main; the branch `feature` adds `stack` at
/// `live/terragrunt.stack.hcl` with the catalog. Returns the repository (on
/// main) and the feature head.
fn feature(stack: &str) -> (GitRepo, String) {
    let repo = GitRepo::new();
    repo.unit("live/x", "1", &[]);
    repo.commit("base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.write("catalog/net/main.tf", TF)
        .write(
            "catalog/net/terragrunt.hcl",
            "inputs = { name = values.name }\n",
        )
        .write("catalog/app/main.tf", TF)
        .write(
            "catalog/app/terragrunt.hcl",
            "dependency \"net\" {\n  config_path = values.net_dir\n}\n",
        )
        .write("live/terragrunt.stack.hcl", stack);
    let head = repo.commit("a stack");
    repo.git(&["checkout", "-q", "main"]);
    (repo, head)
}

/// Merges `feature` into main with a merge commit, returned.
fn merge(repo: &GitRepo) -> String {
    repo.git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.com",
        "merge",
        "-q",
        "--no-ff",
        "-m",
        "merge",
        "feature",
    ]);
    repo.git(&["rev-parse", "HEAD"])
}

fn deploy_config(url: &str, commit: &str) -> CreateDeployStackConfig {
    support::config(&[
        ("REPO_CLONE_URL", url),
        ("LIVE_CI_PR_NUMBER", "9"),
        ("LIVE_CI_COMMIT", commit),
        ("LIVE_CI_BASE_REF", "main"),
        ("MERGE_LOCK_SSM_KEY", LOCK),
        ("TRIGGER_SF_FUNCTION_NAME", "live-ci-trigger-sf"),
        ("ACCOUNT_PARENT_CFG", LIVE),
        ("MAX_PARALLEL", "3"),
    ])
}

struct Fakes {
    params: MemoryParams,
    github: RecordingGitHost,
    invoker: RecordingInvoker,
    sts: live_ci_aws::StsRoleAssumer,
    checkouts: MemArtifacts,
}

impl Fakes {
    fn new() -> Self {
        Fakes {
            params: MemoryParams::default(),
            github: RecordingGitHost::default(),
            invoker: RecordingInvoker::default(),
            sts: support::sts(),
            checkouts: MemArtifacts::default(),
        }
    }

    async fn deploy<M: RunStore>(
        &self,
        metadb: &M,
        config: &CreateDeployStackConfig,
    ) -> Result<DeployReport> {
        let ports = Wiring {
            metadb,
            params: &self.params,
            github: &self.github,
            invoker: &self.invoker,
            roles: &self.sts,
            artifacts: &self.checkouts,
        };
        let repo = Repo {
            clone_url: config.common.clone_url.clone(),
            token: None,
        };
        create_deploy_stack(config, &repo, None, &ports).await
    }
}

/// pr-plan of `head` with a plan command that fails unless the generated
/// values file is on disk, holding the unit's own name.
async fn plan_pr(
    repo: &GitRepo,
    head: &str,
    github: &RecordingGitHost,
) -> Result<live_ci_task::pr_plan::PrPlanReport> {
    let tf = TfTemplates::new(
        "grep -qx \"name = \\\"$(basename \"$LIVE_CI_CFG_PATH\")\\\"\" terragrunt.values.hcl && ",
    );
    let config: live_ci_task::PrPlanConfig = support::config(&[
        ("REPO_CLONE_URL", &repo.url()),
        ("LIVE_CI_PR_NUMBER", "12"),
        ("LIVE_CI_COMMIT", head),
        ("LIVE_CI_BASE_REF", "main"),
        ("PLAN_COMMAND", &tf.plan),
    ]);
    let clone = Repo {
        clone_url: repo.url(),
        token: None,
    };
    pr_plan(
        &config,
        &clone,
        None,
        &Statuses::new(github, Default::default()),
        &support::sts(),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stack_of_two_local_units_is_planned_by_pr_plan_and_deployed_by_create_deploy_stack() {
    let (repo, head) = feature(STACK);

    // pr-plan: both generated units planned by terraform in their generated
    // directories (the plan command checks each one's values file).
    let github = RecordingGitHost::default();
    let report = plan_pr(&repo, &head, &github).await.unwrap();
    let planned: Vec<(String, std::result::Result<(), String>)> = report
        .plans
        .iter()
        .map(|p| {
            (
                p.path.to_string(),
                p.outcome.as_ref().map(|_| ()).map_err(Clone::clone),
            )
        })
        .collect();
    assert_eq!(
        planned,
        [
            ("live/.terragrunt-stack/app".to_string(), Ok(())),
            ("live/.terragrunt-stack/net".to_string(), Ok(())),
        ]
    );
    let body = &github.comments()[&(12, COMMENT_MARKER.to_string())];
    assert!(body.contains("live/.terragrunt-stack/net"), "{body}");

    // create-deploy-stack: the run holds both, app after net.
    let merge = merge(&repo);
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let fakes = Fakes::new();
    let report = fakes
        .deploy(&metadb, &deploy_config(&repo.url(), &merge))
        .await
        .unwrap();
    let order: Vec<(String, Vec<String>)> = report
        .plan
        .units
        .iter()
        .map(|u| {
            (
                u.path.to_string(),
                u.dependencies.iter().map(ToString::to_string).collect(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("live/.terragrunt-stack/net".to_string(), vec![]),
            (
                "live/.terragrunt-stack/app".to_string(),
                vec!["live/.terragrunt-stack/net".to_string()]
            ),
        ]
    );
    let mut executions: Vec<String> = metadb
        .executions(report.run_id.unwrap())
        .await
        .unwrap()
        .iter()
        .map(|e| e.cfg_path.to_string())
        .collect();
    executions.sort();
    assert_eq!(
        executions,
        ["live/.terragrunt-stack/app", "live/.terragrunt-stack/net"]
    );
    db.drop_db().await;

    // terra-run's checkout (the commit alone) has the generated files too.
    let checkout = Checkout::commit_only(
        &Repo {
            clone_url: repo.url(),
            token: None,
        },
        &merge,
    )
    .unwrap();
    let app = checkout.dir().join("live/.terragrunt-stack/app");
    assert_eq!(std::fs::read_to_string(app.join("main.tf")).unwrap(), TF);
    assert_eq!(
        std::fs::read_to_string(app.join("terragrunt.values.hcl")).unwrap(),
        "# Auto-generated by the terragrunt.stack.hcl file by Terragrunt. Do not edit manually\n\
         name = \"app\"\n\
         net_dir = \"../net\"\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_to_a_remote_source_stack_fails_both_tasks_before_anything_is_written() {
    let (repo, head) = feature(REMOTE_STACK);
    let expected = "stack \"live/terragrunt.stack.hcl\" is changed by ";
    let construct = "live/terragrunt.stack.hcl: unit \"net\": source \
                     \"git::https://github.com/acme/catalog.git//net?ref=v1\" is remote";

    // pr-plan: nothing planned; the status and the comment say why.
    let github = RecordingGitHost::default();
    let err = plan_pr(&repo, &head, &github)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.starts_with(expected), "{err}");
    assert!(err.contains(construct), "{err}");
    let body = &github.comments()[&(12, COMMENT_MARKER.to_string())];
    assert!(body.contains("is remote"), "{body}");
    let statuses = github.statuses();
    assert_eq!(statuses.len(), 1, "{statuses:?}");
    assert_eq!(statuses[0].state, StatusState::Failure);

    // create-deploy-stack: no run, no lock, no parameter, nothing invoked.
    let merge = merge(&repo);
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let fakes = Fakes::new();
    let err = fakes
        .deploy(&metadb, &deploy_config(&repo.url(), &merge))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.starts_with(expected), "{err}");
    assert!(err.contains(construct), "{err}");
    assert_eq!(metadb.run(1).await.unwrap(), None);
    assert_eq!(metadb.merge_lock().await.unwrap().run_id, None);
    assert!(fakes.params.puts().is_empty());
    assert!(fakes.invoker.calls.lock().unwrap().is_empty());
    let statuses = fakes.github.statuses();
    assert_eq!(statuses.len(), 1);
    assert_eq!(statuses[0].state, StatusState::Failure);
    assert_eq!(statuses[0].context, context::CREATE_DEPLOY_STACK);
    db.drop_db().await;
}

/// The stack of [`STACK`] without its `app` unit.
const STACK_WITHOUT_APP: &str = r#"unit "net" {
  source = "../catalog/net"
  path   = "net"
  values = { name = "net" }
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_removed_from_a_stack_is_destroyed_from_the_base_or_named_as_not_destroyed() {
    // main holds the two-unit stack; a second pull request drops `app`.
    let (repo, _) = feature(STACK);
    merge(&repo);
    repo.git(&["checkout", "-q", "-b", "drop-app"]);
    repo.write("live/terragrunt.stack.hcl", STACK_WITHOUT_APP);
    repo.commit("drop app from the stack");
    repo.git(&["checkout", "-q", "main"]);
    repo.git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.com",
        "merge",
        "-q",
        "--no-ff",
        "-m",
        "merge drop-app",
        "drop-app",
    ]);
    let merged = repo.git(&["rev-parse", "HEAD"]);
    let app = "live/.terragrunt-stack/app";

    // With ALLOW_DESTROY the run destroys app (no file of it is in the diff:
    // generated files are not committed) and re-applies net.
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let mut config = deploy_config(&repo.url(), &merged);
    config.common.allow_destroy = true;
    let report = Fakes::new().deploy(&metadb, &config).await.unwrap();
    let run_id = report.run_id.unwrap();
    let mut executions: Vec<(String, live_ci_core::deploy::Action)> = metadb
        .executions(run_id)
        .await
        .unwrap()
        .iter()
        .map(|e| (e.cfg_path.to_string(), e.action))
        .collect();
    executions.sort();
    assert_eq!(
        executions,
        [
            (app.to_string(), live_ci_core::deploy::Action::Destroy),
            (
                "live/.terragrunt-stack/net".to_string(),
                live_ci_core::deploy::Action::Apply
            ),
        ]
    );
    assert!(report.not_destroyed.is_empty(), "{report:?}");
    // The destroy runs from the run's base, whose checkout still generates app.
    let base = metadb.run(run_id).await.unwrap().unwrap().base_sha;
    let checkout = Checkout::commit_only(
        &Repo {
            clone_url: repo.url(),
            token: None,
        },
        &base,
    )
    .unwrap();
    assert!(checkout.dir().join(app).join("main.tf").is_file());
    db.drop_db().await;

    // Without it, app is named as not destroyed, never dropped in silence.
    let db = TestDb::new().await;
    let metadb = db.metadb(2).await;
    let report = Fakes::new()
        .deploy(&metadb, &deploy_config(&repo.url(), &merged))
        .await
        .unwrap();
    assert_eq!(
        report
            .not_destroyed
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        [app]
    );
    db.drop_db().await;
}
