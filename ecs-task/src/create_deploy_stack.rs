//! `create-deploy-stack`: a merge on the trunk becomes a run. It clones the
//! merge commit and places it on the trunk against the runs already recorded
//! (ancestry through git): a merge that a queued or started run already covers
//! is recorded as superseded and never applied; otherwise the run deploys the
//! whole range from the newest started run's commit (the first parent when
//! there is none) to the merge commit, whatever the merge style, plus the units
//! whose last deployment failed. It finds the affected units (graph scan, or
//! plan scan), maps them onto accounts, builds the deployment plan and each
//! unit's commands and new providers, then writes the run and all its
//! executions in one metadb transaction, which also takes the merge lock (or
//! queues the run; queued runs start newest-on-the-trunk first). The parameter
//! store mirrors the lock; `trigger_sf` is invoked with `{"run_id": N}`.
//!
//! Everything that can fail on bad input (a broken `terragrunt.hcl`, a cycle, an
//! unknown account) fails before that transaction, so a failed run writes
//! nothing and never holds the lock; the error goes to the commit status.

use std::collections::{BTreeMap, BTreeSet};

use live_ci_core::account::Accounts;
use live_ci_core::deploy::Action;
use live_ci_core::deploy::{NewRun, RunId, RunStatus, TrunkPlace, place_on_trunk};
use live_ci_core::merge_lock::{self, MergeLock};
use live_ci_core::path::RepoPath;
use live_ci_core::port::GitHost;
use live_ci_core::port::ParamStore;
use live_ci_core::port::PortResultExt;
use live_ci_core::port::{
    ArtifactStore, CachedCheckout, FunctionInvoker, RoleAssumer, RunStore, Vcs, run_payload,
};
use live_ci_core::status::{
    Check, CommitStatus, CommitStatusConfig, StatusState, Statuses, context, superseded,
};
use live_ci_core::terraform::new_providers;
use live_ci_engine::change::{
    Affected, AffectedUnit, Reason, detect, graph_at, refuse_changed_stacks_between,
};
use live_ci_engine::executions::{RunContext, executions_from_plan};
use live_ci_engine::plan::{DeploymentPlan, PlanOptions, build_plan};
use live_ci_engine::providers::ProviderIndex;
use live_ci_engine::{Graph, discover};
use live_ci_git::GitCli;

use crate::checkout::{Checkout, Repo};
use crate::config::{Common, CreateDeployStackConfig, ScanType};
use crate::error::{Result, TaskError};
use crate::plans::plan_units;
use crate::sandbox;
use crate::timeline;

/// The ports create-deploy-stack talks to.
#[derive(Debug)]
pub struct DeployPorts<'a, M, P, G, I, R, A> {
    pub metadb: &'a M,
    pub params: &'a P,
    /// Where statuses go ([`NoGitHost`](live_ci_core::status::NoGitHost)
    /// without a GitHub token).
    pub github: &'a G,
    pub invoker: &'a I,
    /// Assumes the accounts' plan roles for the plan scan.
    pub roles: &'a R,
    /// Where the run's packed checkout goes (the plan bucket), for its
    /// terra-runs to unpack instead of fetching the commit.
    pub artifacts: &'a A,
}

/// What create-deploy-stack did.
#[derive(Debug, Clone, PartialEq)]
pub struct DeployReport {
    /// `None` when no unit was affected (no run is created).
    pub run_id: Option<RunId>,
    /// False when a run for this commit already existed (a redelivered merge).
    pub created: bool,
    /// True when the run took the merge lock; false when it queued.
    pub started: bool,
    pub plan: DeploymentPlan,
    pub execution_ids: Vec<String>,
    pub warnings: Vec<String>,
    /// The run that deploys this merge instead (the merge is recorded as
    /// superseded and never applied).
    pub superseded_by: Option<RunId>,
    /// Units the range removes that are not destroyed (`ALLOW_DESTROY` off).
    pub not_destroyed: Vec<RepoPath>,
}

/// The pull request of a run the sweep started (a merge whose webhook was lost).
pub const NO_PULL_REQUEST: u64 = 0;

/// How many of the newest runs a merge is placed against: a merge older than
/// all of them is long deployed or superseded.
const TRUNK_WINDOW: u32 = 50;

/// Reads the commit-status switches (all on without a parameter).
pub async fn status_config<P: ParamStore>(
    config: &Common,
    params: &P,
) -> Result<CommitStatusConfig> {
    match &config.commit_status_config_param {
        None => Ok(CommitStatusConfig::default()),
        Some(name) => {
            let json = params.get(name).await.port("parameter store")?;
            CommitStatusConfig::parse(&json).map_err(TaskError::Params)
        }
    }
}

/// Runs create-deploy-stack and posts its outcome on the merge commit.
pub async fn create_deploy_stack<M, P, G, I, R, A>(
    config: &CreateDeployStackConfig,
    repo: &Repo,
    logs_url: Option<&str>,
    ports: &DeployPorts<'_, M, P, G, I, R, A>,
) -> Result<DeployReport>
where
    M: RunStore,
    P: ParamStore,
    G: GitHost,
    I: FunctionInvoker,
    R: RoleAssumer,
    A: ArtifactStore,
{
    let commit = config.commit.clone();
    let outcome = create(config, repo, ports).await;
    timeline::log_create_deploy_stack(&commit);
    let switches = match status_config(&config.common, ports.params).await {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "reading the commit status config; posting statuses");
            CommitStatusConfig::default()
        }
    };
    let statuses = Statuses::new(ports.github, switches);
    let status = |state, context: &str, description: &str| {
        let mut s = CommitStatus::new(&commit, state, context, description);
        s.target_url = logs_url.map(str::to_string);
        s
    };
    let (state, description) = match &outcome {
        Ok(r) => (StatusState::Success, summary(r)),
        Err(e) => (StatusState::Failure, e.to_string()),
    };
    let created = status(state, context::CREATE_DEPLOY_STACK, &description);
    statuses.post(Check::CreateDeployStack, &created).await;
    if let Ok(DeployReport {
        superseded_by: Some(by),
        ..
    }) = &outcome
    {
        covered_by_an_ended_run(&commit, *by, ports, &statuses).await;
    }
    if let Ok(r) = &outcome
        && !r.not_destroyed.is_empty()
    {
        // Informational (the run itself is fine): which removed units keep
        // their infrastructure until someone destroys them or opts in.
        let description = crate::pr_plan::not_destroyed_text(&r.not_destroyed);
        let destroy = status(StatusState::Success, context::DESTROY, &description);
        statuses.post(Check::Always, &destroy).await;
    }
    outcome
}

/// A merge superseded by a run that has already ended: trigger-sf gave that
/// run's superseded merges their deploy status when it ended, before this one
/// was recorded, so it gets it here. (A run still going gives it when it
/// ends.) Advisory, like every status of this task's outcome.
async fn covered_by_an_ended_run<M: RunStore, P, G: GitHost, I, R, A>(
    commit: &str,
    by: RunId,
    ports: &DeployPorts<'_, M, P, G, I, R, A>,
    statuses: &Statuses<&G>,
) {
    let covering = match ports.metadb.run(by).await {
        Ok(Some(run)) => run,
        Ok(None) => return,
        Err(e) => {
            tracing::warn!(error = %e, run = by, "reading the run that superseded this merge");
            return;
        }
    };
    if matches!(covering.status, RunStatus::Succeeded | RunStatus::Failed) {
        let status = superseded(commit, by, &covering.commit_id, covering.status);
        statuses.post(Check::Always, &status).await;
    }
}

fn summary(r: &DeployReport) -> String {
    if let Some(by) = r.superseded_by {
        return format!("superseded: run #{by} deploys this merge with the newer trunk commits");
    }
    match r.run_id {
        None => "no unit is affected: nothing to deploy".into(),
        Some(id) if r.started => format!("run #{id}: {} unit(s) to deploy", r.plan.units.len()),
        Some(id) => format!(
            "run #{id}: {} unit(s), queued behind the running deploy",
            r.plan.units.len()
        ),
    }
}

async fn create<M, P, G, I, R, A>(
    config: &CreateDeployStackConfig,
    repo: &Repo,
    ports: &DeployPorts<'_, M, P, G, I, R, A>,
) -> Result<DeployReport>
where
    M: RunStore,
    P: ParamStore,
    G: GitHost,
    I: FunctionInvoker,
    R: RoleAssumer,
    A: ArtifactStore,
{
    // trigger_sf's sweep launches a trunk head no webhook announced: it knows
    // no pull request, and the run is recorded under PR 0.
    let pr_id = config.pr_number.unwrap_or(NO_PULL_REQUEST);
    let commit = &config.commit;
    let function = &config.trigger_sf_function;
    let lock_param = &config.merge_lock_param;
    let accounts = Accounts::from_json("ACCOUNT_PARENT_CFG", &config.accounts_json)?;
    let checkout = Checkout::new(repo, commit)?;
    timeline::mark("checkout");
    let commit = checkout.commit.clone();
    // First, before the trunk placement can record anything: a filter that
    // does not parse fails the run with nothing written.
    let filters = crate::filters::load(&checkout.git, &commit, &config.common.deploy_filters)?;
    // Likewise a change to a stack live-ci cannot generate (its units would
    // silently be missing from the run): the merge's own changes are checked
    // here; the whole deployed range again when the units are found.
    let merged_onto = match &config.base_sha {
        Some(b) if checkout.git.is_ancestor(b, &commit)? => checkout.git.resolve(b)?,
        _ => checkout.git.first_parent(&commit)?,
    };
    refuse_changed_stacks_between(&checkout.git, &merged_onto, &commit)?;
    let trunk_seq = checkout.git.first_parent_depth(&commit)?;
    let runs = ports.metadb.trunk_runs(TRUNK_WINDOW).await.port("metadb")?;
    let place = place_on_trunk(&commit, &runs, |a, b| checkout.git.is_ancestor(a, b))?;
    let base = match &place {
        TrunkPlace::Superseded { by, commit: cover } => {
            println!(
                "live-ci create-deploy-stack: PR #{pr_id}, merge commit {commit} is already in \
                 run #{by} (commit {cover}): superseded, not applied"
            );
            return record_superseded(config, ports, pr_id, &commit, trunk_seq, *by).await;
        }
        TrunkPlace::After { commit: from, .. } => from.clone(),
        TrunkPlace::Existing { base, .. } => base.clone(),
        // Nothing deployed yet: the pull request's base when it is on this
        // line of history (it spans every commit of a rebase-merge), else the
        // first parent.
        TrunkPlace::First => match &config.base_sha {
            Some(b) if checkout.git.is_ancestor(b, &commit)? => checkout.git.resolve(b)?,
            _ => checkout.git.first_parent(&commit)?,
        },
    };
    println!(
        "live-ci create-deploy-stack: PR #{pr_id}, merge commit {commit} (trunk position \
         {trunk_seq}), deploying the range from {base}"
    );
    // The run's packed checkout is made while the units are found: a fetch of
    // the one commit from the clone on disk (its objects, not the work tree a
    // plan scan writes into), then the archive.
    let packing = {
        let (clone, commit) = (checkout.dir().to_path_buf(), commit.clone());
        tokio::task::spawn_blocking(move || pack_commit(&clone, &commit))
    };
    let mut warnings = Vec::new();
    let mut not_destroyed = Vec::new();
    let (mut affected, head, base_graph) = match config.common.scan_type {
        ScanType::Graph => {
            let d = detect(
                &checkout.git,
                &base,
                Some(&commit),
                config.common.allow_destroy,
            )?;
            warnings.extend(d.affected.skipped.iter().map(|s| s.reason.clone()));
            not_destroyed.extend(
                d.affected
                    .skipped
                    .iter()
                    .filter(|s| s.action == Action::Destroy)
                    .map(|s| s.path.clone()),
            );
            (d.affected, d.head, d.base)
        }
        ScanType::Plan => {
            refuse_changed_stacks_between(&checkout.git, &base, &commit)?;
            let head = graph_at(&checkout.git, Some(&commit))?;
            let affected = plan_scan(config, &accounts, &checkout, &head, ports.roles).await?;
            (affected, head, None)
        }
    };
    let pending = ports.metadb.pending_units().await.port("metadb")?;
    add_pending(&mut affected, &head, pending.iter().map(|p| &p.cfg_path));
    // The filters narrow everything the run would deploy, pending units too.
    let narrowed = crate::filters::narrow_affected(
        &checkout.git,
        checkout.dir(),
        affected,
        &head,
        base_graph.as_ref(),
        &filters,
    )?;
    let affected = narrowed.affected;
    not_destroyed.retain(|p| affected.skipped.iter().any(|s| &s.path == p));
    warnings.extend(
        narrowed
            .excluded
            .iter()
            .map(|e| format!("{} is left out by {}", e.path, e.describe())),
    );
    // Critical-path priorities weigh each unit by how long it took before.
    let paths: Vec<RepoPath> = affected.units.iter().map(|u| u.path.clone()).collect();
    let durations = ports.metadb.unit_durations(&paths).await.port("metadb")?;
    let plan = build_plan(
        &affected,
        &head,
        base_graph.as_ref(),
        &PlanOptions {
            accounts: Some(&accounts),
            max_parallel: config.common.max_parallel as usize,
            durations: durations.into_iter().collect(),
        },
    )?;
    let providers = unit_new_providers(&checkout, &base, &commit, &head, &plan, &mut warnings)?;
    let executions = executions_from_plan(
        &plan,
        &RunContext {
            pr_id,
            commit_id: &commit,
            accounts: &accounts,
            plan_command: &config.common.plan_command,
            apply_command: &config.common.apply_command,
            new_providers: &providers,
        },
    )?;
    for w in &warnings {
        println!("live-ci: warning: {w}");
    }
    for e in &executions {
        println!(
            "live-ci: {} {} ({}) waits for {:?}, accounts {:?}, new providers {:?}",
            e.execution_id,
            e.cfg_path,
            e.account_name,
            e.wait_for,
            e.wait_accounts,
            e.new_providers
        );
    }
    if executions.is_empty() {
        // Recorded, so the sweep takes this trunk head as known instead of
        // launching create-deploy-stack for it again every period.
        ports
            .metadb
            .record_no_op_merge(&commit)
            .await
            .port("metadb")?;
        return Ok(DeployReport {
            run_id: None,
            created: false,
            started: false,
            plan,
            execution_ids: Vec::new(),
            warnings,
            superseded_by: None,
            not_destroyed,
        });
    }
    timeline::mark("executions");
    // Recorded with the run, so it is there before any execution can start.
    let packed = match store_packed(ports.artifacts, &commit, packing).await {
        Ok(packed) => Some(packed),
        Err(why) => {
            let warning = format!(
                "the run's checkout is not cached ({why}); its tasks fetch {commit} from the repository"
            );
            tracing::warn!(%commit, %why, "the run has no packed checkout");
            println!("live-ci: warning: {warning}");
            warnings.push(warning);
            None
        }
    };
    let run = NewRun {
        pr_id,
        commit_id: commit.clone(),
        base_ref: config
            .base_ref
            .clone()
            .unwrap_or_else(|| config.common.trunk_branch.clone()),
        head_ref: config.head_ref.clone().unwrap_or_default(),
        // The range deployed: terra-run checks a destroy out at its start.
        base_sha: base.clone(),
        head_sha: commit.clone(),
        max_parallel: config.common.max_parallel,
        fail_fast: config.common.fail_fast,
        trunk_seq,
        checkout: packed,
        executions,
    };
    let created = ports.metadb.create_run(&run).await.port("metadb")?;
    println!(
        "live-ci: run #{} {} ({})",
        created.run_id,
        if created.created {
            "created"
        } else {
            "already existed"
        },
        if created.started {
            "holds the merge lock"
        } else {
            "queued"
        }
    );
    if created.created && !created.started {
        // Created, then superseded in the same transaction by a newer merge
        // that started first: nothing of it will run.
        let stored = ports.metadb.run(created.run_id).await.port("metadb")?;
        if let Some(r) = stored.filter(|r| r.status == RunStatus::Superseded) {
            return Ok(DeployReport {
                run_id: Some(created.run_id),
                created: true,
                started: false,
                plan,
                execution_ids: Vec::new(),
                warnings,
                superseded_by: r.superseded_by,
                not_destroyed,
            });
        }
    }
    let scope = config.merge_lock_scope;
    // Under `units` a queued run makes its units busy too: pull requests
    // that touch them must show the lock before they can merge.
    if created.started || (created.created && scope == merge_lock::Scope::Units) {
        // Mirror the row (the truth) for the receiver, then the open PRs' statuses.
        let lock = ports.metadb.merge_lock().await.port("metadb")?.lock();
        let lock = match lock {
            MergeLock::Free if created.started => MergeLock::Held { pr: pr_id },
            other => other,
        };
        if created.started {
            ports
                .params
                .put(lock_param, &lock.to_string())
                .await
                .port("parameter store")?;
        }
        // Advisory, as every status: the parameter already says the truth.
        if let Err(e) = merge_lock::publish_statuses(
            ports.metadb,
            ports.github,
            lock,
            scope,
            &config.common.trunk_branch,
            &config.common.file_pattern,
        )
        .await
        {
            warnings.push(format!("merge lock statuses: {e}"));
        }
    }
    ports
        .invoker
        .invoke(function, &run_payload(created.run_id))
        .await
        .port("lambda")
        .map_err(|source| TaskError::Invoke {
            function: function.clone(),
            run_id: created.run_id,
            source,
        })?;
    Ok(DeployReport {
        run_id: Some(created.run_id),
        created: created.created,
        started: created.started,
        plan,
        execution_ids: run
            .executions
            .iter()
            .map(|e| e.execution_id.clone())
            .collect(),
        warnings,
        superseded_by: None,
        not_destroyed,
    })
}

/// The merge commit's checkout as its terra-runs need it (the commit alone,
/// work tree and `.git`, as `Checkout::commit_only` fetches it), packed from
/// the clone at `clone`, in a scratch directory of its own; and how long that
/// took.
fn pack_commit(
    clone: &std::path::Path,
    commit: &str,
) -> std::result::Result<(Vec<u8>, std::time::Duration), String> {
    let started = std::time::Instant::now();
    let scratch = tempfile::Builder::new()
        .prefix("live-ci-pack-")
        .tempdir()
        .map_err(|e| format!("cannot create a scratch directory: {e}"))?;
    let dir = scratch.path().join("repo");
    GitCli::fetch_commit(&clone.display().to_string(), &dir, commit, None)
        .map_err(|e| e.to_string())?;
    let bytes = crate::checkout_cache::pack(&dir)?;
    Ok((bytes, started.elapsed()))
}

/// Stores the packed checkout in the plan bucket under its content's key. On
/// failure, why: the run still deploys, its terra-runs fetching the commit
/// from the repository.
async fn store_packed<A: ArtifactStore>(
    artifacts: &A,
    commit: &str,
    packing: tokio::task::JoinHandle<std::result::Result<(Vec<u8>, std::time::Duration), String>>,
) -> std::result::Result<CachedCheckout, String> {
    let (bytes, took) = packing
        .await
        .map_err(|e| format!("packing it stopped: {e}"))?
        .map_err(|e| format!("packing it: {e}"))?;
    timeline::mark("checkout_pack");
    let cached = CachedCheckout::of(commit, &bytes);
    let size = bytes.len();
    let uri = artifacts.uri(&cached.key);
    artifacts
        .put(&cached.key, bytes)
        .await
        .map_err(|e| format!("storing {uri}: {e}"))?;
    timeline::mark("checkout_upload");
    println!(
        "live-ci: checkout of {commit} packed in {} ms to {uri} ({size} bytes, sha-256 {})",
        took.as_millis(),
        cached.sha256
    );
    Ok(cached)
}

/// Records a merge a queued or started run covers; nothing is applied.
async fn record_superseded<M, P, G, I, R, A>(
    config: &CreateDeployStackConfig,
    ports: &DeployPorts<'_, M, P, G, I, R, A>,
    pr_id: u64,
    commit: &str,
    trunk_seq: u64,
    by: RunId,
) -> Result<DeployReport>
where
    M: RunStore,
    P: ParamStore,
    G: GitHost,
    I: FunctionInvoker,
    R: RoleAssumer,
{
    let run = NewRun {
        pr_id,
        commit_id: commit.to_string(),
        base_ref: config
            .base_ref
            .clone()
            .unwrap_or_else(|| config.common.trunk_branch.clone()),
        head_ref: config.head_ref.clone().unwrap_or_default(),
        base_sha: commit.to_string(),
        head_sha: commit.to_string(),
        max_parallel: config.common.max_parallel,
        fail_fast: config.common.fail_fast,
        trunk_seq,
        checkout: None,
        executions: Vec::new(),
    };
    let run_id = ports
        .metadb
        .record_superseded(&run, by)
        .await
        .port("metadb")?;
    Ok(DeployReport {
        run_id,
        created: run_id.is_some(),
        started: false,
        plan: DeploymentPlan {
            max_parallel: config.common.max_parallel as usize,
            account_caps: Default::default(),
            units: Vec::new(),
            makespan: 0.0,
        },
        execution_ids: Vec::new(),
        warnings: Vec::new(),
        superseded_by: Some(by),
        not_destroyed: Vec::new(),
    })
}

/// Adds the units whose last deployment failed (and that still exist) to the
/// affected set: a failure leaves them pending until a run applies them.
fn add_pending<'a>(
    affected: &mut Affected,
    head: &Graph,
    pending: impl Iterator<Item = &'a RepoPath>,
) {
    let mut added = false;
    for path in pending {
        if head.index_of(path).is_none() {
            continue;
        }
        match affected.units.iter_mut().find(|u| &u.path == path) {
            Some(u) if u.action == Action::Apply => {
                if !u.reasons.contains(&Reason::Pending) {
                    u.reasons.push(Reason::Pending);
                }
            }
            Some(_) => {}
            None => {
                affected.units.push(AffectedUnit {
                    path: path.clone(),
                    action: Action::Apply,
                    reasons: vec![Reason::Pending],
                });
                added = true;
            }
        }
    }
    if added {
        affected.units.sort_by(|a, b| a.path.cmp(&b.path));
    }
}

/// The plan scan: every unit planned with `-detailed-exitcode`; those with
/// changes and their dependents are affected. A failed plan fails the scan.
async fn plan_scan<R: RoleAssumer>(
    config: &CreateDeployStackConfig,
    accounts: &Accounts,
    checkout: &Checkout,
    head: &Graph,
    roles: &R,
) -> Result<Affected> {
    let units: Vec<RepoPath> = head.units().iter().map(|u| u.path.clone()).collect();
    // The plans write their files here, as the child user.
    let scratch = checkout.scratch_file("scan");
    sandbox::child_dirs(&[&scratch])?;
    let mut env = vec![(
        "LIVE_CI_REPO_DIR".to_string(),
        checkout.dir().display().to_string(),
    )];
    // A home, temporary directory and plugin cache of the plans' own, not
    // the task's (which the child user cannot reach).
    env.extend(sandbox::private_dirs(&checkout.scratch_file("env"))?);
    // Merged code: the deploy key, through an agent the plans may sign
    // with, never read. Kept until the plans end: dropping it stops the agent.
    let ssh = crate::git_ssh::child_env(
        config.common.git_ssh_key.as_ref(),
        &config.common.ssh_known_hosts,
        &checkout.scratch_file("ssh"),
        crate::git_ssh::KeyUse::Allowed,
    )
    .await?;
    env.extend(ssh.env().iter().cloned());
    let role_of = |p: &RepoPath| accounts.account_of(p).map(|a| a.plan_role_arn.clone());
    // Plan roles only: create-deploy-stack may not assume an apply role.
    let credentials = sandbox::assume_each(
        roles,
        units.iter().filter_map(role_of).collect(),
        &format!(
            "scan-{}",
            checkout
                .commit
                .get(..12)
                .unwrap_or(checkout.commit.as_str())
        ),
    )
    .await?;
    let results = plan_units(
        checkout.dir(),
        &scratch,
        &units,
        |p| config.common.plan_command.for_unit(p),
        |p| config.common.show_command.for_unit(p),
        |p| role_of(p).and_then(|r| credentials.get(&r).cloned()),
        &env,
        config.common.max_parallel as usize,
        false,
        // The deploy stack's scan only selects units; terra-run judges each plan.
        None,
    )
    .await?;
    let mut changed = BTreeSet::new();
    for r in results {
        match r.outcome {
            Ok(o) if o.has_changes => {
                changed.insert(r.path);
            }
            Ok(_) => {}
            Err(message) => {
                return Err(TaskError::Unit {
                    unit: r.path.to_string(),
                    message,
                });
            }
        }
    }
    let seeds: Vec<usize> = changed.iter().filter_map(|p| head.index_of(p)).collect();
    let mut units: Vec<AffectedUnit> = head
        .dependents_closure(seeds, None)
        .into_iter()
        .map(|i| {
            let path = head.path(i).clone();
            let reason = if changed.contains(&path) {
                Reason::Changed
            } else {
                Reason::DependencyAffected
            };
            AffectedUnit {
                path,
                action: Action::Apply,
                reasons: vec![reason],
            }
        })
        .collect();
    units.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Affected {
        units,
        skipped: Vec::new(),
    })
}

/// Providers each planned apply uses at the merge commit and did not at the
/// first parent. A `.tf` that does not parse at head fails the run; at base it
/// only costs the comparison (nothing is called new, so a rollback never
/// destroys what it cannot prove this change added).
fn unit_new_providers(
    checkout: &Checkout,
    base: &str,
    commit: &str,
    head: &Graph,
    plan: &DeploymentPlan,
    warnings: &mut Vec<String>,
) -> Result<BTreeMap<RepoPath, Vec<String>>> {
    let head_tree = checkout.git.tree_at(Some(commit))?;
    let base_tree = checkout.git.tree_at(Some(base))?;
    let head_index = ProviderIndex::new(&*head_tree)?;
    let base_index = ProviderIndex::new(&*base_tree)?;
    let (base_graph, _) = discover(&*base_tree).into_graph();
    let mut out = BTreeMap::new();
    for u in plan.units.iter().filter(|u| u.action == Action::Apply) {
        let Some(i) = head.index_of(&u.path) else {
            continue;
        };
        let at_head = head_index.providers(head.unit(i))?;
        let at_base = match base_graph.index_of(&u.path) {
            None => None,
            Some(b) => match base_index.providers(base_graph.unit(b)) {
                Ok(p) => Some(p),
                Err(e) => {
                    warnings.push(format!("providers at the first parent: {e}"));
                    Some(at_head.clone())
                }
            },
        };
        let new = new_providers(&at_head, at_base.as_ref());
        if !new.is_empty() {
            out.insert(u.path.clone(), new);
        }
    }
    Ok(out)
}
