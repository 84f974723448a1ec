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

use live_ci_core::deploy::{RunId, RunStatus};
use live_ci_core::path::RepoPath;
use live_ci_core::port::GitHost;
use live_ci_core::port::ParamStore;
use live_ci_core::port::PortResultExt;
use live_ci_core::port::{ArtifactStore, FunctionInvoker, RoleAssumer, RunStore};
use live_ci_core::status::{
    Check, CommitStatus, CommitStatusConfig, StatusState, Statuses, context, superseded,
};
use live_ci_terragrunt::plan::DeploymentPlan;

use crate::checkout::Repo;
use crate::config::{Common, CreateDeployStackConfig};
use crate::error::{Result, TaskError};
use crate::timeline;

mod place;
mod record;
mod units;

/// The ports create-deploy-stack talks to, as one bundle: the steps are
/// generic over this trait alone, so adding a port changes it and
/// [`Wiring`] (and what builds a `Wiring`), not every step's signature.
pub trait DeployPorts: Sync {
    /// See [`DeployPorts::metadb`].
    type Metadb: RunStore;
    /// See [`DeployPorts::params`].
    type Params: ParamStore;
    /// See [`DeployPorts::github`].
    type GitHub: GitHost;
    /// See [`DeployPorts::invoker`].
    type Invoker: FunctionInvoker;
    /// See [`DeployPorts::roles`].
    type Roles: RoleAssumer;
    /// See [`DeployPorts::artifacts`].
    type Artifacts: ArtifactStore;

    /// Runs, executions and the merge lock.
    fn metadb(&self) -> &Self::Metadb;
    /// The merge lock's mirror and the commit-status switches.
    fn params(&self) -> &Self::Params;
    /// Where statuses go ([`NoGitHost`](live_ci_core::status::NoGitHost)
    /// without a GitHub token).
    fn github(&self) -> &Self::GitHub;
    /// Hands the new run to trigger-sf.
    fn invoker(&self) -> &Self::Invoker;
    /// Assumes the accounts' plan roles for the plan scan.
    fn roles(&self) -> &Self::Roles;
    /// Where the run's packed checkout goes (the plan bucket), for its
    /// terra-runs to unpack instead of fetching the commit.
    fn artifacts(&self) -> &Self::Artifacts;
}

/// The ports, borrowed from whoever owns them (`main.rs`'s clients, a test's
/// fakes, which the test keeps and inspects).
#[derive(Debug)]
pub struct Wiring<'a, M, P, G, I, R, A> {
    /// Runs, executions and the merge lock.
    pub metadb: &'a M,
    /// SSM parameters: the commit-status switches and the merge lock's mirror.
    pub params: &'a P,
    /// Commit statuses.
    pub github: &'a G,
    /// Hands the run to trigger_sf.
    pub invoker: &'a I,
    /// Assumes the accounts' plan roles (`SCAN_TYPE=plan`).
    pub roles: &'a R,
    /// Stores the run's packed checkout.
    pub artifacts: &'a A,
}

impl<M, P, G, I, R, A> DeployPorts for Wiring<'_, M, P, G, I, R, A>
where
    M: RunStore,
    P: ParamStore,
    G: GitHost,
    I: FunctionInvoker,
    R: RoleAssumer,
    A: ArtifactStore,
{
    type Metadb = M;
    type Params = P;
    type GitHub = G;
    type Invoker = I;
    type Roles = R;
    type Artifacts = A;

    fn metadb(&self) -> &M {
        self.metadb
    }

    fn params(&self) -> &P {
        self.params
    }

    fn github(&self) -> &G {
        self.github
    }

    fn invoker(&self) -> &I {
        self.invoker
    }

    fn roles(&self) -> &R {
        self.roles
    }

    fn artifacts(&self) -> &A {
        self.artifacts
    }
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
    /// The affected units in deployment order, with their accounts.
    pub plan: DeploymentPlan,
    /// The run's executions, one per unit.
    pub execution_ids: Vec<String>,
    /// Advisory problems (a checkout not packed, a unit's warning): the run goes on.
    pub warnings: Vec<String>,
    /// The run that deploys this merge instead (the merge is recorded as
    /// superseded and never applied).
    pub superseded_by: Option<RunId>,
    /// Units the range removes that are not destroyed (`ALLOW_DESTROY` off).
    pub not_destroyed: Vec<RepoPath>,
}

/// The pull request of a run the sweep started (a merge whose webhook was lost).
pub(crate) const NO_PULL_REQUEST: u64 = 0;

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
pub async fn create_deploy_stack<Ports: DeployPorts>(
    config: &CreateDeployStackConfig,
    repo: &Repo,
    logs_url: Option<&str>,
    ports: &Ports,
) -> Result<DeployReport> {
    let commit = config.commit.clone();
    let outcome = create(config, repo, ports).await;
    timeline::log_create_deploy_stack(&commit);
    let switches = match status_config(&config.common, ports.params()).await {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "reading the commit status config; posting statuses");
            CommitStatusConfig::default()
        }
    };
    let statuses = Statuses::new(ports.github(), switches);
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
async fn covered_by_an_ended_run<Ports: DeployPorts>(
    commit: &str,
    by: RunId,
    ports: &Ports,
    statuses: &Statuses<&Ports::GitHub>,
) {
    let covering = match ports.metadb().run(by).await {
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
/// The steps of a merge becoming a run: placed on the trunk, its units found,
/// the plan built, the run recorded, the lock published, trigger-sf invoked.
async fn create<Ports: DeployPorts>(
    config: &CreateDeployStackConfig,
    repo: &Repo,
    ports: &Ports,
) -> Result<DeployReport> {
    let placed = match place::place(config, repo, ports).await? {
        place::Placement::Superseded(report) => return Ok(report),
        place::Placement::Deploy(placed) => placed,
    };
    // The run's packed checkout is made while the units are found: a fetch of
    // the one commit from the clone on disk (its objects, not the work tree a
    // plan scan writes into), then the archive.
    let packing = {
        let (clone, commit) = (placed.checkout.dir().to_path_buf(), placed.commit.clone());
        tokio::task::spawn_blocking(move || record::pack_commit(&clone, &commit))
    };
    let mut found = units::find(config, ports, &placed).await?;
    let (plan, executions) = units::build(config, ports, &placed, &mut found).await?;
    if executions.is_empty() {
        // Recorded, so the sweep takes this trunk head as known instead of
        // launching create-deploy-stack for it again every period.
        ports
            .metadb()
            .record_no_op_merge(&placed.commit)
            .await
            .port("metadb")?;
        return Ok(DeployReport {
            run_id: None,
            created: false,
            started: false,
            plan,
            execution_ids: Vec::new(),
            warnings: found.warnings,
            superseded_by: None,
            not_destroyed: found.not_destroyed,
        });
    }
    timeline::mark("executions");
    let packed = record::packed(
        ports.artifacts(),
        &placed.commit,
        packing,
        &mut found.warnings,
    )
    .await;
    let run = record::new_run(config, &placed, packed, executions);
    let created = ports.metadb().create_run(&run).await.port("metadb")?;
    let mut report = DeployReport {
        run_id: Some(created.run_id),
        created: created.created,
        started: created.started,
        plan,
        execution_ids: Vec::new(),
        warnings: found.warnings,
        superseded_by: None,
        not_destroyed: found.not_destroyed,
    };
    if let Some(by) = record::superseded_at_once(ports, &created).await? {
        report.superseded_by = by;
        return Ok(report);
    }
    record::publish_lock(config, ports, &created, placed.pr_id, &mut report.warnings).await?;
    record::hand_over(config, ports, created.run_id).await?;
    report.execution_ids = run
        .executions
        .iter()
        .map(|e| e.execution_id.clone())
        .collect();
    Ok(report)
}
