//! The sweep: repairs missed events (lost starts, missed ends, a lost finish),
//! reconciles the merge lock parameter through the lock's owner, launches
//! create-deploy-stack for a trunk head no run knows, and the drift check.

use super::{Report, TriggerError, TriggerSf, TrunkLaunch};
use crate::ports::TriggerPorts;
use live_ci_core::port::TaskLauncher;
use live_ci_core::port::{
    BranchHead, PortError, PortResultExt, RunStore, SweepStore, WorkflowEngine, merge_that_produced,
};
use live_ci_core::status::{Check, CommitStatus, StatusState, context};
use live_ci_core::task::create_deploy_stack_spec;
use live_ci_stepfunctions::outcome::Outcome as Ended;

/// The sweep's trunk check: the trunk head from the git host, and the
/// launcher that starts create-deploy-stack for a head the metadb does not
/// know, at most once per `cooldown_secs` per head (a slow create-deploy-stack
/// is not launched twice). Only a head a merged pull request produced is
/// deployed, with that pull request's number, unless `deploy_direct_pushes`.
#[derive(Debug)]
pub struct TrunkSweep<H, L> {
    /// Where the trunk points, and which merged pull request produced it.
    pub head: H,
    /// Starts create-deploy-stack, and the drift task on the schedule's
    /// `{"drift": true}`.
    pub launcher: L,
    /// `TRUNK_SWEEP_COOLDOWN_SECONDS`: longer than create-deploy-stack takes.
    pub cooldown_secs: u32,
    /// Deploy a trunk head pushed directly (no merged pull request), as
    /// run PR 0 (the module's `deploy_direct_pushes`, off by default).
    pub deploy_direct_pushes: bool,
}

impl<H, L> TrunkSweep<H, L> {
    /// The same settings with the head and launcher borrowed, as
    /// [`TriggerPorts::trunk`](crate::TriggerPorts::trunk) hands them out.
    pub fn borrowed(&self) -> TrunkSweep<&H, &L> {
        TrunkSweep {
            head: &self.head,
            launcher: &self.launcher,
            cooldown_secs: self.cooldown_secs,
            deploy_direct_pushes: self.deploy_direct_pushes,
        }
    }
}

/// The failure status of a trunk head that is not deployed because no merged
/// pull request produced it.
pub(super) fn direct_push_description(branch: &str) -> String {
    format!(
        "not deployed: pushed to {branch} directly, not merged from a pull request \
         (deploy_direct_pushes is off)"
    )
}

/// The type of a handler without the trunk check (it has no value).
#[derive(Debug)]
pub enum NoTrunkSweep {}

impl BranchHead for NoTrunkSweep {
    type Error = std::convert::Infallible;

    async fn branch_head(&self, _branch: &str) -> Result<String, Self::Error> {
        match *self {}
    }

    async fn commit_pull_requests(
        &self,
        _sha: &str,
    ) -> Result<Vec<live_ci_core::port::CommitPullRequest>, Self::Error> {
        match *self {}
    }
}

impl TaskLauncher for NoTrunkSweep {
    type Error = std::convert::Infallible;

    async fn start(
        &self,
        _spec: &live_ci_core::task::TaskSpec,
    ) -> Result<live_ci_core::task::StartedTask, Self::Error> {
        match *self {}
    }
}

/// The invocation's minute since the Unix epoch: a drift tick when the rule
/// passes no event time (two deliveries within one minute start one task).
fn this_minute() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("m{}", secs / 60)
}

impl<Ports: TriggerPorts> TriggerSf<Ports> {
    /// Repairs missed events: claims whose start was lost are started again
    /// (the start is idempotent) and running executions whose Step Functions
    /// execution has ended are recorded.
    pub(super) async fn sweep(&self, report: &mut Report) -> Result<(), TriggerError> {
        let mut runs = Vec::new();
        let stale = self
            .ports
            .metadb()
            .stale_claims(self.config.stale_claim_secs)
            .await
            .port("metadb")?;
        self.start_claimed(&stale, report).await?;
        runs.extend(stale.iter().map(|e| e.run_id));
        let running = self
            .ports
            .metadb()
            .running_with_arn(self.config.sweep_limit)
            .await
            .port("metadb")?;
        for execution in running {
            let Some(arn) = &execution.sfn_execution_arn else {
                continue;
            };
            let described = match self.ports.engine().describe_execution(arn).await {
                Ok(d) => d,
                Err(e) => {
                    report.warnings.push(format!("describing {arn:?}: {e}"));
                    continue;
                }
            };
            if let Some(ended) = Ended::classify(
                &described.status,
                described.error.as_deref(),
                described.cause.as_deref(),
            ) {
                self.record(&execution, &ended, described.output.as_deref(), report)
                    .await?;
                runs.push(execution.run_id);
            }
        }
        // The run holding the lock is advanced too: an invocation lost between
        // recording its last execution and finishing the run would otherwise
        // keep the lock forever.
        if let Some(run_id) = self
            .ports
            .metadb()
            .merge_lock()
            .await
            .port("metadb")?
            .run_id
        {
            runs.push(run_id);
        }
        runs.sort_unstable();
        runs.dedup();
        for run_id in runs {
            self.advance(run_id, None, report).await?;
        }
        let reconciled = self.lock().reconcile().await.map_err(PortError::from)?;
        report.lock_repaired = reconciled.repaired.map(|lock| lock.to_string());
        report.warnings.extend(reconciled.warning);
        self.sweep_trunk(report).await
    }

    /// Launches create-deploy-stack for a trunk head no run and no no-op merge
    /// has, once per cool-down: a merge whose webhook was lost (or whose
    /// create-deploy-stack never ran) is deployed anyway, and since a run
    /// deploys the range from the newest started run, so is every earlier lost
    /// merge. GitHub or ECS failing is a warning: the next sweep tries again
    /// (after the cool-down when the launch itself failed).
    pub(super) async fn sweep_trunk(&self, report: &mut Report) -> Result<(), TriggerError> {
        let Some(trunk) = self.ports.trunk() else {
            return Ok(());
        };
        let branch = &self.config.trunk_branch;
        let head = match trunk.head.branch_head(branch).await {
            Ok(head) => head,
            Err(e) => {
                tracing::warn!(%branch, error = %e, "reading the trunk head");
                report
                    .warnings
                    .push(format!("trunk head of {branch:?}: {e}"));
                return Ok(());
            }
        };
        let Some(attempt) = self
            .ports
            .metadb()
            .claim_trunk_launch(&head, trunk.cooldown_secs)
            .await
            .port("metadb")?
        else {
            return Ok(());
        };
        // Only merges deploy: the merge is the human gate (reviews, required
        // checks, the merge lock); a push straight to the trunk passed none.
        let merged = match trunk.head.commit_pull_requests(&head).await {
            Ok(pulls) => merge_that_produced(&head, &pulls),
            Err(e) => {
                // The claim stands: asked again after the cool-down.
                tracing::warn!(%head, error = %e, "reading the pull request of the trunk head");
                report
                    .warnings
                    .push(format!("pull requests of trunk head {head}: {e}"));
                return Ok(());
            }
        };
        if merged.is_none() && !trunk.deploy_direct_pushes {
            tracing::warn!(%branch, %head, "trunk head is a direct push; not deployed");
            let statuses = self.statuses(report).await;
            let status = CommitStatus::new(
                &head,
                StatusState::Failure,
                context::DEPLOY,
                &direct_push_description(branch),
            );
            Self::queue(&statuses, Check::Always, status, report);
            report.direct_push = Some(head);
            return Ok(());
        }
        tracing::warn!(%branch, %head, attempt, pull_request = ?merged.as_ref().map(|p| p.number),
            "trunk head unknown to the metadb; launching create-deploy-stack");
        let spec =
            create_deploy_stack_spec(&head, merged.as_ref(), &format!("sweep-{head}-{attempt}"));
        match trunk.launcher.start(&spec).await {
            Ok(started) => {
                report.trunk_launch = Some(TrunkLaunch {
                    commit: head,
                    pull_request: merged.map(|p| p.number),
                    attempt,
                    task_arn: started.task_arn,
                });
            }
            Err(e) => {
                tracing::error!(%head, error = %e, "launching create-deploy-stack for the trunk head");
                report
                    .warnings
                    .push(format!("create-deploy-stack for trunk head {head}: {e}"));
            }
        }
        Ok(())
    }

    /// The drift schedule's launch (issue 32 item 4): the drift task through
    /// the sweep's launcher, and nothing else: no metadb write, no merge
    /// lock, no status. A failed start is the invocation's error, so
    /// EventBridge's asynchronous invoke retries it (the tick's token keeps a
    /// retry from starting a second task).
    pub(super) async fn launch_drift(
        &self,
        tick: Option<&str>,
        report: &mut Report,
    ) -> Result<(), TriggerError> {
        let Some(trunk) = self.ports.trunk() else {
            return Err(TriggerError::Input(
                "{\"drift\": true} needs the task launcher (ECS_CLUSTER_ARN and DRIFT_TASK_DEFINITION_ARN): none is configured".into(),
            ));
        };
        let tick = tick.map_or_else(this_minute, str::to_string);
        let spec = live_ci_core::task::drift_spec(&tick);
        let started = trunk
            .launcher
            .start(&spec)
            .await
            .port("ecs")
            .map_err(TriggerError::Port)?;
        tracing::info!(task = %started.task_arn, %tick, "launched the drift check");
        report.drift_launch = Some(started.task_arn);
        Ok(())
    }
}
