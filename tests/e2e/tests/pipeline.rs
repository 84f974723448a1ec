//! The whole pipeline on one machine: one `terraform apply` of `examples/local`
//! into the local cloud, shared by every scenario of this binary (it costs
//! about 90 s), the sample live repository with a merged pull request per
//! scenario (distinct PR numbers and merge commits), the GitHub fake in process.
//! Each scenario asserts the final metadb rows, the Step Functions execution
//! statuses and the terraform state of each unit.
//!
//! Needs `scripts/local-cloud.sh` to be able to start (as in `make test`) and
//! the workspace's debug binaries (`make test` builds them first).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::Context;

use live_ci_e2e::observe::{
    ExecutionRow, Metadb, Outcome, drive, sfn_statuses, sfn_times, tf_resources,
};
use live_ci_e2e::repo::SampleRepo;
use live_ci_e2e::vote::Vote;
use live_ci_e2e::{
    Cloud, Deployment, Merge, REPO_FULL_NAME, repo_root, send_merge_webhook, send_webhook, work_dir,
};
use live_ci_testkit::github::{FakeGitHub, FakePullRequest, MergedPull};

/// The name part of roles whose requests a test makes to be denied (scenario 1
/// does not count their denials as the pipeline's).
const DELIBERATE_DENIALS: &str = "e2e-deliberately-denied";

/// How long one scenario's run may take (several runs queue behind each other).
const RUN_TIMEOUT: Duration = Duration::from_secs(900);

struct Env {
    rt: tokio::runtime::Runtime,
    /// The notification endpoint the notifier Lambda posts to (json format).
    notifications: Receiver,
    github: FakeGitHub,
    cloud: Cloud,
    deployment: Deployment,
    repo: SampleRepo,
    first: Merge,
    /// Added to every PR number: Step Functions execution names are made of the
    /// PR number and the commit, and the sample's commits are the same on every
    /// build, so a re-run against a LocalStack that kept running needs new numbers.
    pr_base: u64,
    /// Scenarios add commits to the one repository the tasks clone.
    git: tokio::sync::Mutex<()>,
    /// The pipeline deploys the trunk: a merge older than a recorded run is
    /// superseded, and a failed unit stays pending in the next run. Scenarios
    /// therefore run one at a time, after the sample's own merge (PR 42).
    serial: tokio::sync::Mutex<()>,
    first_run: tokio::sync::OnceCell<Result<(serde_json::Value, Outcome, Merge), String>>,
    http: reqwest::Client,
    /// The local cloud's IAM denials counted before this binary's deployment.
    iam_denied_before: u64,
}

static ENV: OnceLock<Result<Env, String>> = OnceLock::new();

fn env() -> &'static Env {
    match ENV.get_or_init(|| setup().map_err(|e| format!("{e:#}"))) {
        Ok(env) => env,
        Err(e) => panic!("end-to-end setup failed: {e}"),
    }
}

fn setup() -> anyhow::Result<Env> {
    let started = Instant::now();
    // A runtime of its own that outlives every test: the GitHub fake serves from it.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let notifications = Receiver::start()?;
    let env = rt.block_on(async {
        let github = FakeGitHub::start(REPO_FULL_NAME).await;
        let (repo, first) = SampleRepo::build(&work_dir().join("e2e/live-repo")).await?;
        let cloud = Cloud::up(false).await?;
        let metadb = cloud.fresh_database("live_ci_e2e").await?;
        // allow_destroy on: the destroy scenario needs it (the sample merge's
        // retired legacy queue is then destroyed too; scenario 1 says so).
        let deployment = Deployment::apply_with(
            &cloud,
            &metadb,
            &github.url(),
            &repo.dir,
            false,
            false,
            &[
                ("LIVE_CI_ALLOW_DESTROY", "true".to_string()),
                // The drift rule exists; the drift scenario sends its input itself.
                ("LIVE_CI_DRIFT_SCHEDULE", "rate(1 day)".to_string()),
                // Notifications to a receiver of this process (its URL below).
                ("LIVE_CI_NOTIFICATION_FORMAT", "json".to_string()),
            ],
        )
        .await?;
        // As an operator does: the endpoint's URL into the module's
        // SecureString placeholder, before anything is notified.
        put_notification_url(cloud.endpoint(), &notifications.url()).await?;
        cloud.clear_mailbox(&reqwest::Client::new()).await?;
        // Denials before the pipeline ran (a cloud that kept running) are not its own.
        let iam_denied_before = cloud.iam_stats(&reqwest::Client::new()).await?.denied;
        anyhow::Ok((github, repo, first, cloud, deployment, iam_denied_before))
    })?;
    let (github, repo, first, cloud, deployment, iam_denied_before) = env;
    eprintln!(
        "e2e setup (cloud + terraform apply): {:?}",
        started.elapsed()
    );
    Ok(Env {
        rt,
        notifications,
        iam_denied_before,
        github,
        cloud,
        deployment,
        repo,
        first,
        pr_base: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() % 1_000_000)
            * 100,
        git: tokio::sync::Mutex::new(()),
        serial: tokio::sync::Mutex::new(()),
        first_run: tokio::sync::OnceCell::new(),
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()?,
    })
}

impl Env {
    /// The sample's merged pull request, sent and driven (every vote approves)
    /// once, before any scenario merges anything newer.
    async fn first_run(&self) -> anyhow::Result<&(serde_json::Value, Outcome, Merge)> {
        let result = self
            .first_run
            .get_or_init(|| async {
                let run = async {
                    let _serial = self.serial.lock().await;
                    let merge = Merge {
                        number: self.pr_base + self.first.number,
                        ..self.first.clone()
                    };
                    self.register(&merge).await?;
                    let answer = self.webhook(&merge, "e2e-happy-1").await?;
                    let (_db, outcome) = self.drive(&merge, &|_| Vote::Approve).await?;
                    anyhow::Ok((answer, outcome, merge))
                };
                run.await.map_err(|e| format!("{e:#}"))
            })
            .await;
        result.as_ref().map_err(|e| anyhow::anyhow!("{e}"))
    }

    /// Held for a whole scenario: after the first run, one scenario at a time.
    async fn serial(&self) -> anyhow::Result<tokio::sync::MutexGuard<'_, ()>> {
        self.first_run().await?;
        Ok(self.serial.lock().await)
    }

    /// Tells the fake about a merged pull request.
    async fn register(&self, merge: &Merge) -> anyhow::Result<()> {
        let files = self.repo.files(merge).await?;
        self.github.add_pull_request(FakePullRequest {
            number: merge.number,
            head_sha: merge.head_sha.clone(),
            base: "main".into(),
            files,
            open: false,
        });
        // What GitHub answers the sweep for the merge commit: only merges deploy.
        self.github.add_merged_pull_request(MergedPull {
            number: merge.number,
            merge_commit_sha: merge.merge_commit.clone(),
            base_ref: "main".into(),
            base_sha: merge.base_sha.clone(),
            head_ref: merge.head_ref.clone(),
            head_sha: merge.head_sha.clone(),
        });
        Ok(())
    }

    async fn new_merge(&self, number: u64, files: &[(&str, &str)]) -> anyhow::Result<Merge> {
        let merge = {
            let _serial = self.git.lock().await;
            self.repo
                .merge_pull_request(self.pr_base + number, files)
                .await?
        };
        self.register(&merge).await?;
        Ok(merge)
    }

    /// Delivery ids are unique per deployment: a kept-running receiver
    /// remembers the deliveries it handled.
    async fn webhook(&self, merge: &Merge, delivery: &str) -> anyhow::Result<serde_json::Value> {
        let delivery = format!(
            "{delivery}-{}",
            self.deployment.metadb_url.rsplit('/').next().unwrap_or("")
        );
        let delivery = delivery.as_str();
        let (status, body) = send_merge_webhook(
            &self.http,
            self.cloud.endpoint(),
            &self.deployment,
            merge,
            delivery,
        )
        .await?;
        anyhow::ensure!(status == 200, "webhook answered {status}: {body}");
        Ok(body)
    }

    async fn drive(
        &self,
        merge: &Merge,
        decide: &(dyn Fn(&ExecutionRow) -> Vote + Sync),
    ) -> anyhow::Result<(Metadb, Outcome)> {
        let db = Metadb::connect(&self.deployment.metadb_url).await?;
        let outcome = drive(
            &db,
            &self.http,
            self.cloud.endpoint(),
            &merge.merge_commit,
            RUN_TIMEOUT,
            decide,
            &|_, _| {},
        )
        .await?;
        Ok((db, outcome))
    }

    /// The Step Functions status of each (non-rollback) unit, by cfg_path.
    async fn sfn_by_path(
        &self,
        outcome: &Outcome,
    ) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
        let arns: Vec<String> = outcome
            .run
            .executions
            .iter()
            .filter_map(|e| e.sfn_execution_arn.clone())
            .collect();
        let statuses = sfn_statuses(self.cloud.endpoint(), &arns).await?;
        Ok(outcome
            .run
            .executions
            .iter()
            .filter(|e| !e.is_rollback)
            .filter_map(|e| {
                let arn = e.sfn_execution_arn.as_ref()?;
                Some((e.cfg_path.clone(), statuses.get(arn)?.clone()))
            })
            .collect())
    }
}

fn summary(outcome: &Outcome) -> String {
    outcome
        .run
        .executions
        .iter()
        .map(|e| {
            format!(
                "{} {} {} {:?}",
                e.cfg_path, e.action, e.status, e.status_reason
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Scenario 1: A signed merge webhook: the affected units are planned, approved through
/// the mailed links, applied in dependency order; the lock is released and the
/// commit statuses are recorded.
#[test]
fn a_merged_pull_request_is_planned_approved_and_applied_in_order() {
    let env = env();
    env.rt
        .block_on(async {
            let started = Instant::now();
            let (answer, outcome, merge) = env.first_run().await?;
            assert_eq!(answer["started"], "create-deploy-stack", "{answer}");
            let db = Metadb::connect(&env.deployment.metadb_url).await?;
            let run = &outcome.run;
            assert_eq!(run.status, "succeeded", "{}", summary(outcome));
            let by_path = run.by_path();
            // The PR widens the shared VPC (its dependents follow) and adds the
            // dev worker, in both accounts; the retired legacy queue is no
            // longer in the tree, so nothing applies it (allow_destroy is on
            // here: it is destroyed, below).
            for unit in [
                "shared/us-east-1/network/vpc",
                "shared/us-east-1/network/dns",
                "dev/us-east-1/db",
                "dev/us-east-1/app",
                "dev/us-east-1/worker",
            ] {
                let e = by_path
                    .get(unit)
                    .unwrap_or_else(|| panic!("{unit} not deployed:\n{}", summary(outcome)));
                assert_eq!(e.status, "succeeded", "{}", summary(outcome));
                assert_eq!(e.decision.as_deref(), Some("approve"));
                assert!(
                    outcome.votes.contains_key(&e.execution_id),
                    "voted on {unit}"
                );
            }
            let legacy = by_path.get("dev/us-east-1/legacy-queue");
            assert_eq!(
                legacy.map(|e| (e.action.as_str(), e.status.as_str())),
                Some(("destroy", "succeeded")),
                "{}",
                summary(outcome)
            );
            assert!(run.executions.iter().all(|e| e.status == "succeeded"));
            // Dependency order: no unit was claimed before what it waits for finished,
            // within the run and across accounts (dev waits for shared).
            assert_eq!(db.order_violations(run.run_id).await?, vec![]);
            assert_eq!(db.account_order_violations(run.run_id).await?, vec![]);
            // The lock is released once the run has finished (trigger_sf does it).
            let released = wait_for(Duration::from_secs(60), || async {
                Ok(db.lock_holder().await? != Some(run.run_id))
            })
            .await?;
            assert!(
                released,
                "the merge lock is still held by run {}",
                run.run_id
            );

            let sfn = env.sfn_by_path(outcome).await?;
            assert_eq!(
                sfn.len(),
                by_path.len(),
                "every unit had an execution: {sfn:?}"
            );
            assert!(sfn.values().all(|s| s == "SUCCEEDED"), "{sfn:?}");

            // Terraform state: applied units hold their resource.
            for (path, e) in &by_path {
                if e.action == "apply" {
                    let resources =
                        tf_resources(&env.deployment.state_dir, &merge.merge_commit, path)
                            .unwrap_or_default();
                    assert!(
                        resources.contains("terraform_data.this"),
                        "{path}: {resources:?}"
                    );
                }
            }

            // Commit statuses on the merge commit: each context ended in success.
            let statuses = env.github.latest_statuses(&merge.merge_commit);
            assert!(!statuses.is_empty(), "no commit status was posted");
            for (context, s) in &statuses {
                assert_eq!(s.state, "success", "{context}: {s:?}");
            }

            // The merged pull request followed its deploy: exactly one deploy
            // comment of the run, its last body saying it deployed (trigger_sf
            // writes it after the invocation that ended the run).
            // `live_ci_core::deploy_comment::marker`.
            let marker = format!("<!-- live-ci:deploy run={} -->", run.run_id);
            let deployed = wait_for(Duration::from_secs(60), || async {
                Ok(env.github.comments(merge.number).iter().any(|c| {
                    c.body.starts_with(&marker) && c.body.contains("### live-ci deploy: deployed\n")
                }))
            })
            .await?;
            let ours: Vec<_> = env
                .github
                .comments(merge.number)
                .into_iter()
                .filter(|c| c.body.contains("<!-- live-ci:deploy run="))
                .collect();
            assert!(deployed && ours.len() == 1, "deploy comments: {ours:#?}");

            eprintln!(
                "happy path: {} units in {:?} (run {:?})",
                by_path.len(),
                started.elapsed(),
                outcome.elapsed
            );

            // Under the local cloud's IAM enforcement (localcloud/README.md "IAM")
            // the whole run was authorised: every role's policies allowed what it did.
            let iam = env.cloud.iam_stats(&env.http).await?;
            if iam.enforced {
                eprintln!(
                    "IAM: {} requests authorised, {} denied",
                    iam.authorised, iam.denied
                );
                assert!(iam.authorised > 0, "no request was evaluated: {iam:?}");
                // Every call of live-ci's own roles is in the local cloud's action
                // table (checked against the Service Authorization Reference); the
                // target accounts' roles run terraform, whose calls are only counted.
                eprintln!("IAM: unmapped calls (action: count): {:?}", iam.unmapped);
                let own = iam.unmapped_own_calls();
                assert!(
                    own.is_empty(),
                    "live-ci's roles made calls outside iam_actions.py: {own:#?}"
                );
                // Least privilege, measured (infra/README.md): statements that allowed
                // nothing, and statements never the only one to allow a request.
                for (statement, used) in &iam.statements {
                    if used.allowed == 0 {
                        eprintln!("IAM: allowed nothing: {statement}");
                    } else if used.sole == 0 {
                        eprintln!("IAM: never the only one to allow: {statement}");
                    }
                }
                let new = usize::try_from(iam.denied.saturating_sub(env.iam_denied_before))
                    .unwrap_or(usize::MAX);
                // The roles that count: the module's (its tag) and the target
                // accounts'. Suites in other lanes share the local cloud and
                // are denied on purpose with roles of their own (e.g.
                // stepfunctions' `live-ci-sfn-no-publish-…`).
                let module = env.cloud.module_roles("live-ci").await?;
                assert!(!module.is_empty(), "no role tagged live-ci:name = live-ci");
                let own_account = format!(":iam::{}:", live_ci_e2e::DEPLOYMENT_ACCOUNT);
                let counted = |role: &str| module.contains(role) || !role.contains(&own_account);
                // Deliberate denials: the role probe's (its session name says
                // so) and the topic test's forged publish.
                let denials: Vec<_> = iam.denials[iam.denials.len().saturating_sub(new)..]
                    .iter()
                    .filter(|d| !d.values().any(|v| v.contains(PROBE_SESSION)))
                    .filter(|d| {
                        !d.get("role")
                            .is_some_and(|r| r.contains(DELIBERATE_DENIALS))
                    })
                    .filter(|d| d.get("role").is_none_or(|r| counted(r)))
                    .collect();
                assert!(denials.is_empty(), "denied: {denials:#?}");
            }
            anyhow::Ok(())
        })
        .unwrap_or_else(|e| panic!("{e:#}"));
}

/// The STS session name of the role probe below: its denials are the test's.
const PROBE_SESSION: &str = "live-ci-e2e-probe";

/// Every `sts:AssumeRole` resource `document` (a policy JSON) allows.
fn assume_role_grants(document: &serde_json::Value) -> BTreeSet<String> {
    let list = |v: &serde_json::Value| -> Vec<String> {
        match v {
            serde_json::Value::String(s) => vec![s.clone()],
            serde_json::Value::Array(a) => a
                .iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        }
    };
    let statements = match &document["Statement"] {
        serde_json::Value::Array(a) => a.clone(),
        one => vec![one.clone()],
    };
    let covers = |pattern: &str| {
        let p = pattern.to_ascii_lowercase();
        p == "*" || p == "sts:*" || p == "sts:assumerole" || p == "sts:assume*"
    };
    statements
        .iter()
        .filter(|st| st["Effect"] == "Allow")
        .filter(|st| {
            list(&st["Action"]).iter().any(|a| covers(a))
                || (!st["NotAction"].is_null() && !list(&st["NotAction"]).iter().any(|a| covers(a)))
        })
        .flat_map(|st| list(&st["Resource"]))
        .collect()
}

/// Issue 27 item 2: IAM, not the task's code, decides which account role a
/// job may assume. From the policies as terraform rendered them into the
/// local cloud's IAM (every inline and attached policy of every role of the
/// deployment): each account's plan-phase terra-run role may assume exactly
/// that account's plan role, its apply-phase role exactly its apply role,
/// pr-plan exactly the plan roles, create-deploy-stack (`scan_type = graph`)
/// and every other role none; so an account's apply role is assumable by its
/// apply-phase role alone. Then, under the local cloud's IAM enforcement, a
/// real STS call with a plan-phase role's credentials: the account's apply
/// role and another account's plan role are denied with AWS's message naming
/// the role, the action and the resource; its own plan role is assumed.
#[test]
fn each_task_role_may_assume_exactly_its_accounts_role_of_its_phase() {
    let env = env();
    env.rt
        .block_on(async {
            let d = &env.deployment;
            let name = d
                .state_machine_arn
                .rsplit(':')
                .next()
                .and_then(|n| n.strip_suffix("-deployment"))
                .context("the state machine is <name>-deployment")?
                .to_string();
            let accounts: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(
                repo_root().join("examples/live-repo/accounts.json"),
            )?)?;
            let key = env
                .cloud
                .env
                .get("AWS_ACCESS_KEY_ID")
                .cloned()
                .unwrap_or_else(|| "test".into());
            let secret = env
                .cloud
                .env
                .get("AWS_SECRET_ACCESS_KEY")
                .cloned()
                .unwrap_or_else(|| "test".into());
            let creds = |k: &str, s: &str, t: Option<String>| {
                aws_sdk_sts::config::Credentials::new(k, s, t, None, "e2e")
            };
            let iam = aws_sdk_iam::Client::from_conf(
                aws_sdk_iam::Config::builder()
                    .behavior_version(aws_sdk_iam::config::BehaviorVersion::latest())
                    .endpoint_url(env.cloud.endpoint())
                    .region(aws_sdk_iam::config::Region::new("us-east-1"))
                    .credentials_provider(creds(&key, &secret, None))
                    .build(),
            );
            let sts_as = |c: aws_sdk_sts::config::Credentials| {
                aws_sdk_sts::Client::from_conf(
                    aws_sdk_sts::Config::builder()
                        .behavior_version(aws_sdk_sts::config::BehaviorVersion::latest())
                        .endpoint_url(env.cloud.endpoint())
                        .region(aws_sdk_sts::config::Region::new("us-east-1"))
                        .credentials_provider(c)
                        .build(),
                )
            };
            let decode = |text: &str| -> anyhow::Result<serde_json::Value> {
                let text = if text.trim_start().starts_with('{') {
                    text.to_string()
                } else {
                    form_urlencoded::parse(format!("d={text}").as_bytes())
                        .next()
                        .map(|(_, v)| v.into_owned())
                        .unwrap_or_default()
                };
                Ok(serde_json::from_str(&text)?)
            };

            // The rendered policies, per role of this deployment.
            let mut grants: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            let roles = iam.list_roles().max_items(1000).send().await?;
            for role in roles.roles() {
                let role_name = role.role_name();
                if !role_name.starts_with(&format!("{name}-")) {
                    continue;
                }
                let mut granted = BTreeSet::new();
                let inline = iam.list_role_policies().role_name(role_name).send().await?;
                for policy in inline.policy_names() {
                    let doc = iam
                        .get_role_policy()
                        .role_name(role_name)
                        .policy_name(policy)
                        .send()
                        .await?;
                    granted.extend(assume_role_grants(&decode(doc.policy_document())?));
                }
                let attached = iam
                    .list_attached_role_policies()
                    .role_name(role_name)
                    .send()
                    .await?;
                for policy in attached.attached_policies() {
                    let arn = policy.policy_arn().unwrap_or_default();
                    let meta = iam.get_policy().policy_arn(arn).send().await?;
                    let version = meta
                        .policy()
                        .and_then(|p| p.default_version_id())
                        .unwrap_or("v1");
                    let doc = iam
                        .get_policy_version()
                        .policy_arn(arn)
                        .version_id(version)
                        .send()
                        .await?;
                    let text = doc
                        .policy_version()
                        .and_then(|v| v.document())
                        .unwrap_or("{}");
                    granted.extend(assume_role_grants(&decode(text)?));
                }
                grants.insert(role_name.to_string(), granted);
            }
            let field =
                |a: &serde_json::Value, f: &str| a[f].as_str().unwrap_or_default().to_string();
            let mut expected: BTreeMap<String, BTreeSet<String>> = grants
                .keys()
                .map(|k| (k.clone(), BTreeSet::new()))
                .collect();
            for a in &accounts {
                let account = field(a, "name");
                expected.insert(
                    format!("{name}-plan-{account}"),
                    BTreeSet::from([field(a, "plan_role_arn")]),
                );
                expected.insert(
                    format!("{name}-apply-{account}"),
                    BTreeSet::from([field(a, "apply_role_arn")]),
                );
            }
            expected.insert(
                format!("{name}-task-pr-plan"),
                accounts.iter().map(|a| field(a, "plan_role_arn")).collect(),
            );
            // The drift check plans every unit: the plan roles, as pr-plan.
            expected.insert(
                format!("{name}-task-drift"),
                accounts.iter().map(|a| field(a, "plan_role_arn")).collect(),
            );
            assert_eq!(grants, expected, "sts:AssumeRole resources per role");
            for a in &accounts {
                let apply = field(a, "apply_role_arn");
                let who: Vec<&String> = grants
                    .iter()
                    .filter(|(_, g)| g.contains(&apply))
                    .map(|(r, _)| r)
                    .collect();
                assert_eq!(
                    who,
                    [&format!("{name}-apply-{}", field(a, "name"))],
                    "who may assume {apply}"
                );
            }

            // A real STS call as the plan-phase task role of the second account.
            let (dev, other) = (&accounts[1], &accounts[0]);
            let task_role = d.outputs["terra_run_role_arns"]["value"][field(dev, "name")]["plan"]
                .as_str()
                .context("terra_run_role_arns output")?
                .to_string();
            let admin = sts_as(creds(&key, &secret, None));
            let session = admin
                .assume_role()
                .role_arn(&task_role)
                .role_session_name(PROBE_SESSION)
                .send()
                .await?;
            let c = session
                .credentials()
                .context("the task role's credentials")?;
            let as_plan_task = sts_as(creds(
                c.access_key_id(),
                c.secret_access_key(),
                Some(c.session_token().to_string()),
            ));
            for target in [field(dev, "apply_role_arn"), field(other, "plan_role_arn")] {
                let err = as_plan_task
                    .assume_role()
                    .role_arn(&target)
                    .role_session_name(PROBE_SESSION)
                    .send()
                    .await
                    .expect_err("the plan-phase role must not assume it");
                let message = format!("{}", aws_sdk_sts::error::DisplayErrorContext(&err));
                assert!(
                    message.contains("AccessDenied")
                        && message
                            .contains(&format!("assumed-role/{name}-plan-{}/", field(dev, "name")))
                        && message.contains(&format!(
                            "is not authorized to perform: sts:AssumeRole on resource: {target}"
                        )),
                    "{target}: {message}"
                );
            }
            as_plan_task
                .assume_role()
                .role_arn(field(dev, "plan_role_arn"))
                .role_session_name(PROBE_SESSION)
                .send()
                .await
                .context("the plan-phase role assumes its account's plan role")?;
            anyhow::Ok(())
        })
        .unwrap_or_else(|e| panic!("{e:#}"));
}

/// The approval topic carries task tokens: its policy (infra/events.tf) lets only
/// the state machine publish. A role of the account whose own IAM policy allows
/// `sns:Publish` on every topic is refused by the topic's explicit deny, named in
/// the error with the role, the action and the topic; the state machine's own
/// publishes pass (scenario 1 fails on any denial).
#[test]
fn the_approval_topic_refuses_any_publisher_but_the_state_machine() {
    let env = env();
    env.rt
        .block_on(async {
            let role = live_ci_testkit::unique(DELIBERATE_DENIALS);
            let policy = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sns:Publish","Resource":"*"}]}"#;
            let (role_arn, config) =
                live_ci_testkit::aws::role_session(env.cloud.endpoint(), &role, policy).await;
            let topic = &env.deployment.approval_topic_arn;
            let err = aws_sdk_sns::Client::new(&config)
                .publish()
                .topic_arn(topic)
                .message(r#"{"task_token":"forged"}"#)
                .send()
                .await
                .expect_err("a publisher other than the state machine was accepted");
            assert_eq!(
                aws_sdk_sns::error::ProvideErrorMetadata::code(&err),
                Some("AuthorizationError"),
                "{err:?}"
            );
            let text = format!("{}", aws_sdk_sns::error::DisplayErrorContext(&err));
            let session = role_arn
                .replace(":iam::", ":sts::")
                .replace(":role/", ":assumed-role/");
            assert!(
                text.contains(&format!(
                    "User: {session}/test is not authorized to perform: sns:Publish on resource: {topic} with an explicit deny in a resource-based policy"
                )),
                "{text}"
            );
            anyhow::Ok(())
        })
        .unwrap_or_else(|e| panic!("{e:#}"));
}

/// Polls `check` every second until it is true or `timeout` passes.
async fn wait_for<F, Fut>(timeout: Duration, check: F) -> anyhow::Result<bool>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    let start = Instant::now();
    loop {
        if check().await? {
            return Ok(true);
        }
        if start.elapsed() > timeout {
            return Ok(false);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Scenario 5: The same delivery twice: one run.
#[test]
fn the_same_webhook_delivered_twice_deploys_once() {
    let env = env();
    env.rt
        .block_on(async {
            let _serial = env.serial().await?;
            let merge = env
                .new_merge(
                    45,
                    &[(
                        "shared/us-east-1/logs/main.tf",
                        "# Built-in resources only.\nresource \"terraform_data\" \"this\" {\n  input = { retention = 45 }\n}\n",
                    )],
                )
                .await?;
            let first = env.webhook(&merge, "e2e-twice-45").await?;
            let second = env.webhook(&merge, "e2e-twice-45").await?;
            assert_eq!(first["started"], "create-deploy-stack", "{first}");
            let (db, outcome) = env.drive(&merge, &|_| Vote::Approve).await?;
            assert_eq!(outcome.run.status, "succeeded", "{}", summary(&outcome));
            // Let a second task, had one started, write its run.
            tokio::time::sleep(Duration::from_secs(5)).await;
            let runs = db.runs(&merge.merge_commit).await?;
            assert_eq!(runs.len(), 1, "second answer: {second}");
            let units: Vec<&str> = runs[0]
                .executions
                .iter()
                .map(|e| e.cfg_path.as_str())
                .collect();
            assert!(units.contains(&"shared/us-east-1/logs"), "{units:?}");
            assert_eq!(
                runs[0].executions.len(),
                runs[0]
                    .executions
                    .iter()
                    .map(|e| &e.cfg_path)
                    .collect::<std::collections::BTreeSet<_>>()
                    .len(),
                "no unit twice"
            );
            let sfn = env.sfn_by_path(&outcome).await?;
            assert!(sfn.values().all(|s| s == "SUCCEEDED"), "{sfn:?}");
            let resources = tf_resources(
                &env.deployment.state_dir,
                &merge.merge_commit,
                "shared/us-east-1/logs",
            )
            .unwrap_or_default();
            assert!(resources.contains("terraform_data.this"), "{resources:?}");
            anyhow::Ok(())
        })
        .unwrap_or_else(|e| panic!("{e:#}"));
}

fn terraform_data(input: &str) -> String {
    format!(
        "# Built-in resources only.\nresource \"terraform_data\" \"this\" {{\n  input = {input}\n}}\n\noutput \"id\" {{\n  value = terraform_data.this.id\n}}\n"
    )
}

/// Scenario 2: A rejection: that unit is rejected, its dependents aborted, the others finish.
#[test]
fn a_rejected_unit_aborts_its_dependents_and_the_others_finish() {
    let env = env();
    env.rt
        .block_on(async {
            let _serial = env.serial().await?;
            let vpc = "shared/us-east-1/network/vpc";
            let logs = "shared/us-east-1/logs";
            let merge = env
                .new_merge(
                    46,
                    &[
                        (
                            &format!("{vpc}/main.tf"),
                            &terraform_data("{ cidr = \"10.2.0.0/16\" }"),
                        ),
                        (
                            &format!("{logs}/main.tf"),
                            &terraform_data("{ retention = 46 }"),
                        ),
                    ],
                )
                .await?;
            env.webhook(&merge, "e2e-reject-46").await?;
            let (_db, outcome) = env
                .drive(&merge, &|e| {
                    if e.cfg_path == vpc {
                        Vote::Reject
                    } else {
                        Vote::Approve
                    }
                })
                .await?;
            let by_path = outcome.run.by_path();
            let text = summary(&outcome);
            assert_eq!(outcome.run.status, "failed", "{text}");
            assert_eq!(by_path[vpc].status, "failed", "{text}");
            assert_eq!(by_path[vpc].decision.as_deref(), Some("reject"), "{text}");
            assert_eq!(by_path[logs].status, "succeeded", "{text}");
            // dns depends on the VPC: never started.
            let dns = "shared/us-east-1/network/dns";
            assert_eq!(by_path[dns].status, "aborted", "{text}");
            assert!(by_path[dns].sfn_execution_arn.is_none(), "{text}");

            let sfn = env.sfn_by_path(&outcome).await?;
            assert_eq!(sfn[vpc], "FAILED", "{sfn:?}");
            assert_eq!(sfn[logs], "SUCCEEDED", "{sfn:?}");
            // Rejected: no apply, so no state holds the VPC at this commit.
            let vpc_state = tf_resources(&env.deployment.state_dir, &merge.merge_commit, vpc)
                .unwrap_or_default();
            assert!(!vpc_state.contains("terraform_data.this"), "{vpc_state:?}");
            let logs_state = tf_resources(&env.deployment.state_dir, &merge.merge_commit, logs)
                .unwrap_or_default();
            assert!(logs_state.contains("terraform_data.this"), "{logs_state:?}");
            anyhow::Ok(())
        })
        .unwrap_or_else(|e| panic!("{e:#}"));
}

/// Scenario 3: A failing apply: failed, its dependents aborted, and the resources the
/// run added with a new provider are rolled back.
#[test]
fn a_failing_apply_fails_aborts_dependents_and_rolls_back() {
    let env = env();
    env.rt
        .block_on(async {
            let _serial = env.serial().await?;
            let db_unit = "dev/us-east-1/db";
            let app = "dev/us-east-1/app";
            // Plans fine; the provisioner fails at apply.
            let failing = "# Fails at apply time.\nresource \"terraform_data\" \"this\" {\n  input = { size = 47 }\n  provisioner \"local-exec\" {\n    command = \"exit 3\"\n  }\n}\n\noutput \"id\" {\n  value = terraform_data.this.id\n}\n";
            let merge = env
                .new_merge(47, &[(&format!("{db_unit}/main.tf"), failing)])
                .await?;
            env.webhook(&merge, "e2e-fail-47").await?;
            let (_db, outcome) = env.drive(&merge, &|_| Vote::Approve).await?;
            let by_path = outcome.run.by_path();
            let text = summary(&outcome);
            assert_eq!(outcome.run.status, "failed", "{text}");
            assert_eq!(by_path[db_unit].status, "failed", "{text}");
            assert_eq!(by_path[db_unit].decision.as_deref(), Some("approve"), "{text}");
            assert_eq!(by_path[app].status, "aborted", "{text}");
            let sfn = env.sfn_by_path(&outcome).await?;
            assert_eq!(sfn[db_unit], "FAILED", "{sfn:?}");
            assert!(!sfn.contains_key(app), "{sfn:?}");
            // Rollback executions, if the run recorded any, all ended.
            for e in outcome.run.executions.iter().filter(|e| e.is_rollback) {
                assert!(
                    matches!(e.status.as_str(), "succeeded" | "failed" | "aborted"),
                    "{text}"
                );
            }
            // The failed apply left the resource tainted in state, or none: not applied cleanly.
            eprintln!("failing apply: {text}");
            // The failed unit stays pending: a fix merged next deploys it (and
            // the dependent that was aborted).
            fix_forward(env, 57, db_unit, "{ size = 57 }", &[db_unit, app]).await?;
            anyhow::Ok(())
        })
        .unwrap_or_else(|e| panic!("{e:#}"));
}

/// Scenario 4: A second PR merged during a deploy is queued, then deployed.
#[test]
fn a_pull_request_merged_during_a_deploy_is_queued_then_deployed() {
    let env = env();
    env.rt
        .block_on(async {
            let _serial = env.serial().await?;
            let cdn = "dev/us-east-1/cdn";
            let first = env
                .new_merge(
                    48,
                    &[(&format!("{cdn}/main.tf"), &terraform_data("{ ttl = 48 }"))],
                )
                .await?;
            env.webhook(&first, "e2e-queue-48").await?;
            let db = Metadb::connect(&env.deployment.metadb_url).await?;
            // Wait until the first run is running (it may itself queue behind
            // another scenario's run first).
            let running = wait_for(RUN_TIMEOUT, || async {
                Ok(db
                    .runs(&first.merge_commit)
                    .await?
                    .first()
                    .is_some_and(|r| r.status == "running"))
            })
            .await?;
            assert!(running, "the first run never ran");
            let second = env
                .new_merge(
                    49,
                    &[(&format!("{cdn}/main.tf"), &terraform_data("{ ttl = 49 }"))],
                )
                .await?;
            env.webhook(&second, "e2e-queue-49").await?;
            let queued = wait_for(Duration::from_secs(180), || async {
                Ok(!db.runs(&second.merge_commit).await?.is_empty())
            })
            .await?;
            assert!(queued, "no run for the second merge");
            let first_now = db.runs(&first.merge_commit).await?;
            let second_now = db.runs(&second.merge_commit).await?;
            if first_now[0].status == "running" {
                assert_eq!(
                    second_now[0].status, "queued",
                    "behind the running first run"
                );
            }
            let (a, b) = tokio::join!(
                env.drive(&first, &|_| Vote::Approve),
                env.drive(&second, &|_| Vote::Approve)
            );
            let (_, a) = a?;
            let (_, b) = b?;
            assert_eq!(a.run.status, "succeeded", "{}", summary(&a));
            assert_eq!(b.run.status, "succeeded", "{}", summary(&b));
            assert!(b.run.run_id > a.run.run_id, "merge order");
            let sfn = env.sfn_by_path(&b).await?;
            assert_eq!(sfn[cdn], "SUCCEEDED", "{sfn:?}");
            for merge in [&first, &second] {
                let state = tf_resources(&env.deployment.state_dir, &merge.merge_commit, cdn)
                    .unwrap_or_default();
                assert!(state.contains("terraform_data.this"), "{state:?}");
            }
            anyhow::Ok(())
        })
        .unwrap_or_else(|e| panic!("{e:#}"));
}

/// Scenario 3b: a unit that brought in a new provider (aws, at LocalStack) was
/// applied, then another unit's apply failed: the run rolls back the new
/// provider's resources (a `-destroy -target` execution), keeping the rest.
#[test]
fn a_failed_run_rolls_back_the_resources_of_new_providers() {
    let env = env();
    env.rt
        .block_on(async {
            let _serial = env.serial().await?;
            let logs = "shared/us-east-1/logs";
            let cdn = "dev/us-east-1/cdn";
            let with_aws = format!(
                "{}\nprovider \"aws\" {{\n  region                      = \"us-east-1\"\n  skip_credentials_validation = true\n  skip_requesting_account_id  = true\n  skip_metadata_api_check     = true\n}}\n\nresource \"aws_ssm_parameter\" \"marker\" {{\n  name  = \"/e2e/rollback-{}\"\n  type  = \"String\"\n  value = \"added by this change\"\n}}\n",
                terraform_data("{ retention = 50 }"),
                env.pr_base + 50
            );
            let failing = "# Fails at apply time.\nresource \"terraform_data\" \"this\" {\n  input = { ttl = 50 }\n  provisioner \"local-exec\" {\n    command = \"exit 4\"\n  }\n}\n";
            let merge = env
                .new_merge(
                    50,
                    &[
                        (&format!("{logs}/main.tf"), &with_aws),
                        (&format!("{cdn}/main.tf"), failing),
                    ],
                )
                .await?;
            env.webhook(&merge, "e2e-rollback-50").await?;
            let (_db, outcome) = env.drive(&merge, &|_| Vote::Approve).await?;
            let text = summary(&outcome);
            let by_path = outcome.run.by_path();
            assert_eq!(outcome.run.status, "failed", "{text}");
            assert_eq!(by_path[logs].status, "succeeded", "{text}");
            assert_eq!(by_path[cdn].status, "failed", "{text}");
            let rollback = outcome
                .run
                .executions
                .iter()
                .find(|e| e.is_rollback && e.cfg_path == logs)
                .unwrap_or_else(|| panic!("no rollback of {logs}:\n{text}"));
            assert_eq!(rollback.status, "succeeded", "{text}");
            let state = tf_resources(&env.deployment.state_dir, &merge.merge_commit, logs)
                .unwrap_or_default();
            assert!(!state.contains("aws_ssm_parameter.marker"), "{state:?}");
            assert!(state.contains("terraform_data.this"), "{state:?}");
            fix_forward(env, 58, cdn, "{ ttl = 58 }", &[cdn]).await?;
            anyhow::Ok(())
        })
        .unwrap_or_else(|e| panic!("{e:#}"));
}

/// Merges a passing `unit` after a scenario left it failed on the trunk, and
/// deploys it: the run holds `expected` (the failed units stay pending until a
/// run applies them) and succeeds.
async fn fix_forward(
    env: &Env,
    number: u64,
    unit: &str,
    input: &str,
    expected: &[&str],
) -> anyhow::Result<()> {
    let fix = env
        .new_merge(
            number,
            &[(&format!("{unit}/main.tf"), &terraform_data(input))],
        )
        .await?;
    env.webhook(&fix, &format!("e2e-fix-{number}")).await?;
    let (_db, outcome) = env.drive(&fix, &|_| Vote::Approve).await?;
    let text = summary(&outcome);
    assert_eq!(outcome.run.status, "succeeded", "{text}");
    let by_path = outcome.run.by_path();
    for unit in expected {
        assert_eq!(
            by_path.get(*unit).map(|e| e.status.as_str()),
            Some("succeeded"),
            "{text}"
        );
    }
    Ok(())
}

/// Scenario 6: two merges whose create-deploy-stack tasks finish in reverse
/// order deploy in trunk order: the newer merge's run deploys the range from
/// the last deployed commit (both merges' units); the older merge, arriving
/// last, is recorded as superseded and never applied over it.
#[test]
fn two_merges_finishing_in_reverse_order_deploy_in_trunk_order() {
    let env = env();
    env.rt
        .block_on(async {
            let _serial = env.serial().await?;
            let worker = "dev/us-east-1/worker";
            let logs = "shared/us-east-1/logs";
            let older = env
                .new_merge(
                    52,
                    &[(
                        &format!("{worker}/main.tf"),
                        &terraform_data("{ size = 52 }"),
                    )],
                )
                .await?;
            let newer = env
                .new_merge(
                    53,
                    &[(
                        &format!("{logs}/main.tf"),
                        &terraform_data("{ retention = 53 }"),
                    )],
                )
                .await?;
            // The newer merge's task runs (and finishes) first.
            env.webhook(&newer, "e2e-reverse-53").await?;
            let db = Metadb::connect(&env.deployment.metadb_url).await?;
            let created = wait_for(Duration::from_secs(180), || async {
                Ok(!db.runs(&newer.merge_commit).await?.is_empty())
            })
            .await?;
            assert!(created, "no run for the newer merge");
            env.webhook(&older, "e2e-reverse-52").await?;
            let (_, superseded) = env.drive(&older, &|_| Vote::Approve).await?;
            assert_eq!(
                superseded.run.status,
                "superseded",
                "{}",
                summary(&superseded)
            );
            assert!(
                superseded.run.executions.is_empty(),
                "{}",
                summary(&superseded)
            );
            let (_, outcome) = env.drive(&newer, &|_| Vote::Approve).await?;
            let text = summary(&outcome);
            assert_eq!(outcome.run.status, "succeeded", "{text}");
            let by_path = outcome.run.by_path();
            for unit in [worker, logs] {
                assert_eq!(
                    by_path.get(unit).map(|e| e.status.as_str()),
                    Some("succeeded"),
                    "{unit}: {text}"
                );
                let state = tf_resources(&env.deployment.state_dir, &newer.merge_commit, unit)
                    .unwrap_or_default();
                assert!(state.contains("terraform_data.this"), "{unit}: {state:?}");
            }
            // Nothing was ever applied at the older commit.
            let older_state = tf_resources(&env.deployment.state_dir, &older.merge_commit, worker)
                .unwrap_or_default();
            assert!(older_state.is_empty(), "{older_state:?}");
            anyhow::Ok(())
        })
        .unwrap_or_else(|e| panic!("{e:#}"));
}

/// Issue 12: a fork's pull request runs no code. The receiver (deployed by the
/// module, trust list from `pr_plan_author_associations`) answers "not planned",
/// posts the Merge Lock and a pending `live-ci: plan` status saying how to
/// get a plan to the GitHub fake, and starts no pr-plan task.
#[test]
fn a_fork_pull_request_is_not_planned() {
    let env = env();
    env.rt
        .block_on(async {
            let number = env.pr_base + 43;
            let head = "e4d1a9c07b3f25d8e6a1c4b9f0d7e2a5c8b3f161";
            env.github.add_pull_request(FakePullRequest {
                number,
                head_sha: head.into(),
                base: "main".into(),
                files: vec!["dev/us-east-1/artifacts/terragrunt.hcl".into()],
                open: true,
            });
            let path = repo_root().join("tests/fixtures/github/pull_request_opened_fork.json");
            let mut payload: serde_json::Value = serde_json::from_slice(&std::fs::read(&path)?)?;
            payload["number"] = number.into();
            payload["pull_request"]["number"] = number.into();
            let delivery = format!(
                "fork-{}",
                env.deployment.metadb_url.rsplit('/').next().unwrap_or("")
            );
            let (status, body) = send_webhook(
                &env.http,
                env.cloud.endpoint(),
                &env.deployment,
                "pull_request",
                &delivery,
                serde_json::to_vec(&payload)?,
            )
            .await?;
            anyhow::ensure!(status == 200, "webhook answered {status}: {body}");
            let expected = "not planned: a maintainer comments \"/live-ci plan\" to plan it \
                            (its head is in the fork drive-by-dev/infrastructure-live)";
            assert_eq!(body["not_planned"], expected, "{body}");
            assert!(body.get("task_arn").is_none(), "{body}");
            let statuses = env.github.latest_statuses(head);
            assert_eq!(statuses["live-ci: plan"].state, "pending");
            assert_eq!(statuses["live-ci: plan"].description, expected);
            assert!(statuses.contains_key("Merge Lock"), "{statuses:?}");
            // The only kinds of call for this head: its files and its statuses
            // (no pull request fetch, no permission check, no task). Deduplicated:
            // a Merge Lock refresh (the scheduled sweep repairing the lock, or a
            // run starting) also reads the files of this open pull request and
            // posts its lock status, as it does for every open pull request.
            let calls: std::collections::BTreeSet<String> = env
                .github
                .requests()
                .await
                .iter()
                .filter(|r| {
                    r.url.path().contains(&format!("/pulls/{number}"))
                        || r.url.path().ends_with(head)
                })
                .map(|r| format!("{} {}", r.method, r.url.path()))
                .collect();
            assert_eq!(
                calls,
                [
                    format!("GET /repos/{REPO_FULL_NAME}/pulls/{number}/files"),
                    format!("POST /repos/{REPO_FULL_NAME}/statuses/{head}"),
                ]
                .into_iter()
                .collect::<std::collections::BTreeSet<_>>()
            );
            anyhow::Ok(())
        })
        .unwrap();
}

/// Invokes trigger_sf as the sweep's schedule does (`{"sweep": true}`) and
/// returns its report.
async fn invoke_sweep(endpoint: &str) -> anyhow::Result<serde_json::Value> {
    let config = aws_sdk_lambda::Config::builder()
        .behavior_version(aws_sdk_lambda::config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_sdk_lambda::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_lambda::config::Credentials::new(
            "test", "test", None, None, "e2e",
        ))
        .build();
    let out = aws_sdk_lambda::Client::from_conf(config)
        .invoke()
        .function_name("live-ci-trigger-sf")
        .payload(aws_sdk_lambda::primitives::Blob::new(r#"{"sweep": true}"#))
        .send()
        .await
        .map_err(|e| anyhow::anyhow!("invoking the sweep: {e:?}"))?;
    let payload = out
        .payload()
        .map(|b| b.as_ref().to_vec())
        .unwrap_or_default();
    anyhow::ensure!(
        out.function_error().is_none(),
        "the sweep failed: {}",
        String::from_utf8_lossy(&payload)
    );
    Ok(serde_json::from_slice(&payload)?)
}

/// Issue 13 (3): a merge whose webhook was lost is deployed anyway. The pull
/// request merges on the GitHub fake (the trunk moves) but no webhook is
/// delivered; the sweep finds the trunk head unknown to the metadb, launches
/// create-deploy-stack for it (ECS RunTask in the local cloud), and the unit
/// is planned, approved and applied; the next sweep launches nothing more.
#[test]
fn a_merge_whose_webhook_was_lost_is_deployed_by_the_sweep() {
    let env = env();
    env.rt
        .block_on(async {
            let _serial = env.serial().await?;
            let cdn = "dev/us-east-1/cdn";
            let lost = env
                .new_merge(
                    61,
                    &[(&format!("{cdn}/main.tf"), &terraform_data("{ ttl = 61 }"))],
                )
                .await?;
            env.github.set_branch("main", &lost.merge_commit);
            let report = invoke_sweep(env.cloud.endpoint()).await?;
            let db = Metadb::connect(&env.deployment.metadb_url).await?;
            // The one-minute schedule may have swept first: then its launch is
            // the one that creates the run, and this sweep launched nothing.
            let launched = &report["trunk_launch"];
            if !launched.is_null() {
                assert_eq!(launched["commit"], lost.merge_commit.as_str(), "{report}");
                assert_eq!(launched["pull_request"], lost.number, "{report}");
            }
            let created = wait_for(Duration::from_secs(300), || async {
                Ok(!db.runs(&lost.merge_commit).await?.is_empty())
            })
            .await?;
            assert!(
                created,
                "no run for the merge whose webhook was lost: {report}"
            );
            let again = invoke_sweep(env.cloud.endpoint()).await?;
            assert!(again["trunk_launch"].is_null(), "launched twice: {again}");
            let (_, outcome) = env.drive(&lost, &|_| Vote::Approve).await?;
            let text = summary(&outcome);
            assert_eq!(
                outcome.run.by_path().get(cdn).map(|e| e.status.as_str()),
                Some("succeeded"),
                "{text}"
            );
            let sfn = env.sfn_by_path(&outcome).await?;
            assert_eq!(sfn[cdn], "SUCCEEDED", "{sfn:?}");
            let state = tf_resources(&env.deployment.state_dir, &lost.merge_commit, cdn)
                .unwrap_or_default();
            assert!(state.contains("terraform_data.this"), "{state:?}");
            anyhow::Ok(())
        })
        .unwrap_or_else(|e| panic!("{e:#}"));
}

/// Issue 13 (4): with `allow_destroy` on, a merge that removes two units, one
/// depending on the other, destroys both from the checkout before their
/// removal, each approved through its mailed links like any unit, and the
/// dependent first (its Step Functions execution stopped before the other's
/// started).
#[test]
fn removed_units_are_destroyed_dependents_first() {
    let env = env();
    env.rt
        .block_on(async {
            let _serial = env.serial().await?;
            let queue = "dev/us-east-1/jobs-queue";
            let consumer = "dev/us-east-1/jobs-consumer";
            let root = "include \"root\" {\n  path = find_in_parent_folders(\"root.hcl\")\n}\n";
            let queue_hcl = format!("{root}\ninputs = {{\n  name = \"jobs\"\n}}\n");
            let consumer_hcl = format!(
                "{root}\ndependency \"queue\" {{\n  config_path = \"../jobs-queue\"\n\n  mock_outputs = {{\n    id = \"mock-queue\"\n  }}\n}}\n\ninputs = {{\n  queue_id = dependency.queue.outputs.id\n}}\n"
            );
            let added = env
                .new_merge(
                    71,
                    &[
                        (&format!("{queue}/terragrunt.hcl"), &queue_hcl),
                        (&format!("{queue}/main.tf"), &terraform_data("{ name = \"jobs\" }")),
                        (&format!("{consumer}/terragrunt.hcl"), &consumer_hcl),
                        (&format!("{consumer}/main.tf"), &terraform_data("{ workers = 2 }")),
                    ],
                )
                .await?;
            env.webhook(&added, "e2e-destroy-71").await?;
            let (_, outcome) = env.drive(&added, &|_| Vote::Approve).await?;
            let text = summary(&outcome);
            assert_eq!(outcome.run.status, "succeeded", "{text}");
            for unit in [queue, consumer] {
                let state = tf_resources(&env.deployment.state_dir, &added.merge_commit, unit)
                    .unwrap_or_default();
                assert!(state.contains("terraform_data.this"), "{unit}: {state:?}");
            }

            // One pull request retires both units.
            let removal = {
                let _git = env.git.lock().await;
                env.repo
                    .merge_change(env.pr_base + 72, &[], &[queue, consumer])
                    .await?
            };
            env.register(&removal).await?;
            env.webhook(&removal, "e2e-destroy-72").await?;
            let (db, outcome) = env.drive(&removal, &|_| Vote::Approve).await?;
            let text = summary(&outcome);
            assert_eq!(outcome.run.status, "succeeded", "{text}");
            let by_path = outcome.run.by_path();
            for unit in [queue, consumer] {
                let e = by_path
                    .get(unit)
                    .unwrap_or_else(|| panic!("{unit} not in the run:\n{text}"));
                assert_eq!((e.action.as_str(), e.status.as_str()), ("destroy", "succeeded"), "{text}");
                assert_eq!(e.decision.as_deref(), Some("approve"), "{text}");
                assert!(outcome.votes.contains_key(&e.execution_id), "voted on {unit}");
                // Destroyed from the range start's checkout: the state its
                // apply wrote there no longer holds the resource.
                let state = tf_resources(&env.deployment.state_dir, &added.merge_commit, unit);
                assert_eq!(state, Some(Default::default()), "{unit}");
            }
            assert_eq!(db.order_violations(outcome.run.run_id).await?, vec![]);
            // Dependents first, as Step Functions saw it.
            let arn = |unit: &str| by_path[unit].sfn_execution_arn.clone().unwrap_or_default();
            let times = sfn_times(env.cloud.endpoint(), &[arn(consumer), arn(queue)]).await?;
            let (_, consumer_stop) = times[&arn(consumer)];
            let (queue_start, _) = times[&arn(queue)];
            let consumer_stop = consumer_stop.unwrap_or(i64::MAX);
            assert!(
                consumer_stop <= queue_start,
                "{consumer} stopped at {consumer_stop}, {queue} started at {queue_start}"
            );
            let sfn = env.sfn_by_path(&outcome).await?;
            assert_eq!((sfn[queue].as_str(), sfn[consumer].as_str()), ("SUCCEEDED", "SUCCEEDED"));
            anyhow::Ok(())
        })
        .unwrap_or_else(|e| panic!("{e:#}"));
}

/// trigger-sf invoked with `payload` (what an EventBridge rule sends it).
async fn invoke_trigger_sf(endpoint: &str, payload: &str) -> anyhow::Result<serde_json::Value> {
    let config = aws_sdk_lambda::Config::builder()
        .behavior_version(aws_sdk_lambda::config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_sdk_lambda::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_lambda::config::Credentials::new(
            "test", "test", None, None, "e2e",
        ))
        .build();
    let out = aws_sdk_lambda::Client::from_conf(config)
        .invoke()
        .function_name("live-ci-trigger-sf")
        .payload(aws_sdk_lambda::primitives::Blob::new(
            payload.as_bytes().to_vec(),
        ))
        .send()
        .await
        .map_err(|e| anyhow::anyhow!("invoking trigger-sf with {payload}: {e:?}"))?;
    let answer = out
        .payload()
        .map(|b| b.as_ref().to_vec())
        .unwrap_or_default();
    anyhow::ensure!(
        out.function_error().is_none(),
        "trigger-sf failed on {payload}: {}",
        String::from_utf8_lossy(&answer)
    );
    Ok(serde_json::from_slice(&answer)?)
}

/// Issue 32 item 4 in the local cloud: the drift rule's input
/// (`{"drift": true, "time": …}`, what EventBridge sends) to trigger-sf, which
/// starts the drift task (ECS RunTask, the local cloud's agent runs the real
/// `live-ci-task drift`); the task plans every unit of the trunk with the
/// plan roles, records the check in the metadb through the Data API as its
/// own login, and opens one issue per drifted unit in the GitHub fake. The
/// merge lock is not taken. The check's results, the issues and `live-ci
/// drift`'s table are printed (the note quotes them).
#[test]
fn a_scheduled_drift_check_records_results_and_opens_issues() {
    let env = env();
    env.rt
        .block_on(async {
            let _serial = env.serial().await?;
            let db = Metadb::connect(&env.deployment.metadb_url).await?;
            let lock_before = db.lock_holder().await?;
            let tick = format!(
                "e2e-{}",
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)?
                    .as_secs()
            );
            let payload = serde_json::json!({"drift": true, "time": tick}).to_string();
            let report = invoke_trigger_sf(env.cloud.endpoint(), &payload).await?;
            eprintln!("trigger-sf answered: {report}");
            assert!(
                report["drift_launch"].as_str().is_some_and(|a| !a.is_empty()),
                "{report}"
            );
            let pg = live_ci_metadb::connect(&env.deployment.metadb_url).await?;
            let recorded = wait_for(Duration::from_secs(600), || async {
                let n: i64 = pg
                    .query_one("SELECT count(*) FROM drift_checks", &[])
                    .await?
                    .get(0);
                Ok(n > 0)
            })
            .await?;
            assert!(recorded, "no drift check was recorded: {report}");
            // The issues are opened after the check is recorded.
            tokio::time::sleep(Duration::from_secs(5)).await;
            let rows = pg
                .query(
                    "SELECT r.unit, r.state, r.add_count, r.change_count, r.destroy_count, c.commit_id \
                     FROM drift_results r JOIN drift_checks c USING (check_id) ORDER BY r.unit",
                    &[],
                )
                .await?;
            let results: Vec<(String, String)> = rows
                .iter()
                .map(|r| (r.get::<_, String>(0), r.get::<_, String>(1)))
                .collect();
            for r in &rows {
                eprintln!(
                    "drift result: {} {} +{} ~{} -{} at {}",
                    r.get::<_, String>(0),
                    r.get::<_, String>(1),
                    r.get::<_, i32>(2),
                    r.get::<_, i32>(3),
                    r.get::<_, i32>(4),
                    r.get::<_, String>(5)
                );
            }
            assert!(!results.is_empty());
            let drifted: Vec<&String> = results
                .iter()
                .filter(|(_, s)| s == "drifted")
                .map(|(u, _)| u)
                .collect();
            let issues = env.github.issues();
            for issue in &issues {
                eprintln!(
                    "github issue #{} by {} [{}] {:?}:\n{}",
                    issue.number,
                    issue.login,
                    issue.labels.join(","),
                    issue.title,
                    issue.body
                );
            }
            let titled: BTreeSet<String> = issues.iter().map(|i| i.title.clone()).collect();
            let expected: BTreeSet<String> =
                drifted.iter().map(|u| format!("Drift in {u}")).collect();
            assert_eq!(titled, expected, "one issue per drifted unit");
            assert!(
                issues
                    .iter()
                    .all(|i| i.labels == ["live-ci-drift"] && i.state == "open"),
                "{issues:?}"
            );
            // The drift job's own login exists, made by the migrator.
            let db_name = env
                .deployment
                .metadb_url
                .split('?')
                .next()
                .and_then(|b| b.rsplit('/').next())
                .unwrap_or_default()
                .to_string();
            let login: i64 = pg
                .query_one(
                    "SELECT count(*) FROM pg_roles WHERE rolname = $1 AND pg_has_role(rolname, 'live_ci_drift', 'member')",
                    &[&format!("{db_name}_drift_login")],
                )
                .await?
                .get(0);
            assert_eq!(login, 1, "the drift login is a member of live_ci_drift");
            assert_eq!(db.lock_holder().await?, lock_before, "the lock is untouched");
            // One notification per check with drift, through SNS and the
            // notifier Lambda to the receiver.
            let notified = wait_for(Duration::from_secs(120), || async {
                Ok(env
                    .notifications
                    .bodies()
                    .iter()
                    .any(|b| b.contains("drift_detected")))
            })
            .await?;
            for b in env.notifications.bodies() {
                eprintln!("notification received: {b}");
            }
            assert!(notified, "no drift notification reached the receiver");
            let cli = std::process::Command::new(
                std::env::var_os("CARGO_BIN_EXE_live-ci")
                    .map(std::path::PathBuf::from)
                    .unwrap_or_else(|| {
                        std::path::PathBuf::from(
                            std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| {
                                repo_root().join("target").display().to_string()
                            }),
                        )
                        .join("debug/live-ci")
                    }),
            )
            .args(["drift", "--database-url", &env.deployment.metadb_url])
            .output()?;
            eprintln!(
                "live-ci drift:\n{}{}",
                String::from_utf8_lossy(&cli.stdout),
                String::from_utf8_lossy(&cli.stderr)
            );
            anyhow::Ok(())
        })
        .unwrap_or_else(|e| panic!("{e:#}"));
}

/// An HTTP endpoint on 127.0.0.1 (the notifier allows plain HTTP to loopback
/// only) that keeps every request body and answers 200.
struct Receiver {
    port: u16,
    bodies: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Receiver {
    fn start() -> anyhow::Result<Self> {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = bodies.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(&stream);
                let mut length = 0usize;
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                    if line == "\r\n" {
                        break;
                    }
                    if let Some((k, v)) = line.split_once(':')
                        && k.eq_ignore_ascii_case("content-length")
                    {
                        length = v.trim().parse().unwrap_or(0);
                    }
                    line.clear();
                }
                let mut body = vec![0; length];
                if reader.read_exact(&mut body).is_ok() {
                    kept.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(String::from_utf8_lossy(&body).into_owned());
                }
                let _ = (&stream).write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                );
            }
        });
        Ok(Receiver { port, bodies })
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hook", self.port)
    }

    fn bodies(&self) -> Vec<String> {
        self.bodies
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// `ssm:PutParameter` of the module's notification URL placeholder
/// (`/live-ci/notification-url`), as the local cloud's admin.
async fn put_notification_url(endpoint: &str, url: &str) -> anyhow::Result<()> {
    let body = serde_json::json!({
        "Name": "/live-ci/notification-url",
        "Value": url,
        "Type": "SecureString",
        "Overwrite": true,
    });
    let answer = reqwest::Client::new()
        .post(endpoint)
        .header("content-type", "application/x-amz-json-1.1")
        .header("x-amz-target", "AmazonSSM.PutParameter")
        .header(
            "authorization",
            "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/ssm/aws4_request, SignedHeaders=host, Signature=0",
        )
        .body(body.to_string())
        .send()
        .await?;
    let status = answer.status();
    let text = answer.text().await?;
    anyhow::ensure!(
        status.is_success(),
        "PutParameter answered {status}: {text}"
    );
    Ok(())
}
