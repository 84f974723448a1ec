//! The handler: every step is a guarded metadb update, so a repeated or
//! out-of-order event, or two invocations at once, change nothing twice.

use live_ci_core::deploy::{
    AbortedUnit, Claimed, ExecutionRecord, FinishOutcome, Outcome, RunEnd, RunId, RunStatus,
    Settled, StatusChange, plan_rollbacks,
};
use live_ci_core::merge_lock::{Advisory, Publisher};
use live_ci_core::operate::StartFailure;
use live_ci_core::port::GitHost;
use live_ci_core::port::ParamStore;
use live_ci_core::port::TaskLauncher;
use live_ci_core::port::{
    ApprovalStore, DeployCommentStore, ErrorKind, ExecutionStore, PortError, PortResultExt,
    RunStore, SweepStore, WorkflowEngine,
};
use live_ci_core::port::{BranchHead, NoNotifications, Notifications, merge_that_produced};
use live_ci_core::status::{
    Check, CommitStatus, CommitStatusConfig, StatusState, Statuses, advisory, context, superseded,
    target,
};
use live_ci_core::task::create_deploy_stack_spec;
use live_ci_workflow::outcome::{
    FailedStep, NO_CHANGES_REASON, Outcome as Ended, ended_without_changes,
};
use serde::Serialize;

use crate::config::HandlerConfig;
use crate::event::{Input, StatusChangeDetail};

#[derive(Debug, thiserror::Error)]
pub enum TriggerError {
    #[error("invalid input: {0}")]
    Input(String),
    /// A port failed; its kind decides the name AWS sees.
    #[error(transparent)]
    Port(#[from] PortError),
    /// Runs kept finishing into the next one more often than any queue holds:
    /// a metadb that keeps reporting a next run would otherwise loop forever.
    #[error("more than {0} runs finished in one invocation")]
    TooManyRuns(usize),
}

impl TriggerError {
    /// Retryable only when a port says so: bad input or a runaway hand-over
    /// fails the same way again.
    pub fn kind(&self) -> ErrorKind {
        match self {
            TriggerError::Port(e) => e.kind(),
            TriggerError::Input(_) | TriggerError::TooManyRuns(_) => ErrorKind::Permanent,
        }
    }
}

/// The name CloudWatch and the DLQ see: [`ErrorKind::name`].
impl From<TriggerError> for lambda_runtime::Diagnostic {
    fn from(e: TriggerError) -> Self {
        lambda_runtime::Diagnostic {
            error_type: e.kind().name().into(),
            error_message: e.to_string(),
        }
    }
}

/// What one invocation did, returned to the caller and logged.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    /// Executions this invocation recorded as ended (a repeat records none).
    pub recorded: Vec<String>,
    /// Executions aborted because an ancestor failed.
    pub aborted: Vec<String>,
    /// Executions started (ARN attached).
    pub started: Vec<String>,
    /// Rollback executions added to failed runs (started like any other).
    pub rollbacks: Vec<String>,
    /// Claims put back to waiting because their start failed; the sweep or the
    /// next event retries them.
    pub released: Vec<String>,
    /// Claims whose start failed for the last allowed time: failed with the
    /// error as their reason instead of being retried forever.
    pub start_failed: Vec<String>,
    /// Runs this invocation finished, with their status.
    pub finished: Vec<(RunId, RunStatus)>,
    /// The value the sweep rewrote the merge lock parameter to, when it did
    /// not match the metadb (a lost or failed write).
    pub lock_repaired: Option<String>,
    /// create-deploy-stack launched by the sweep for a trunk head the metadb
    /// did not know (a merge whose webhook was lost).
    pub trunk_launch: Option<TrunkLaunch>,
    /// The drift task the schedule's `{"drift": true}` launched (its ARN).
    pub drift_launch: Option<String>,
    /// A trunk head no merged pull request produced (a direct push), not
    /// deployed: its commit got a failure status saying why.
    pub direct_push: Option<String>,
    /// Problems that did not stop the invocation (commit statuses).
    pub warnings: Vec<String>,
    /// Runs this invocation advanced, whose deploy comments are written once
    /// its work is done (`deploy_comment.rs`).
    #[serde(skip)]
    pub(crate) touched_runs: Vec<RunId>,
    /// The runs this invocation finished (the metadb's transition, so a
    /// repeated event finishes none): announced once its work is done
    /// (`notify.rs`).
    #[serde(skip)]
    pub(crate) ended_runs: Vec<RunEnd>,
    /// Commit statuses to post once the invocation's metadb and Step Functions
    /// work is done: a status is advisory, and a GitHub round trip (100–300 ms
    /// in AWS) must not delay the start of the next unit.
    #[serde(skip)]
    pub(crate) queued_statuses: Vec<CommitStatus>,
}

/// One launch of create-deploy-stack by the sweep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrunkLaunch {
    pub commit: String,
    /// The merged pull request that produced the head (`None` only for a
    /// direct push deployed under `deploy_direct_pushes`).
    pub pull_request: Option<u64>,
    /// The how-manieth launch for this commit (one per cool-down).
    pub attempt: u32,
    pub task_arn: String,
}

/// The sweep's trunk check: the trunk head from the git host, and the
/// launcher that starts create-deploy-stack for a head the metadb does not
/// know, at most once per `cooldown_secs` per head (a slow create-deploy-stack
/// is not launched twice). Only a head a merged pull request produced is
/// deployed, with that pull request's number, unless `deploy_direct_pushes`.
#[derive(Debug)]
pub struct TrunkSweep<H, L> {
    pub head: H,
    pub launcher: L,
    pub cooldown_secs: u32,
    /// Deploy a trunk head pushed directly (no merged pull request), as
    /// run PR 0 (the module's `deploy_direct_pushes`, off by default).
    pub deploy_direct_pushes: bool,
}

/// The failure status of a trunk head that is not deployed because no merged
/// pull request produced it.
pub fn direct_push_description(branch: &str) -> String {
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

/// The reason stored with a failed execution, from how it ended.
pub fn failure_reason(ended: &Ended) -> Option<String> {
    match ended {
        Ended::Succeeded => None,
        Ended::Rejected => Some("rejected by the voters".into()),
        Ended::ApprovalTimedOut => Some("approval timed out".into()),
        Ended::Aborted => Some("execution aborted".into()),
        Ended::TimedOut => Some("execution timed out".into()),
        Ended::Failed { step, error, cause } => {
            let step = match step {
                FailedStep::Plan => "plan",
                FailedStep::Approval => "approval",
                FailedStep::Apply => "apply",
                FailedStep::Unknown => "execution",
            };
            Some(match (error.is_empty(), cause.is_empty()) {
                (true, _) => format!("{step} failed"),
                (false, true) => format!("{step} failed: {error}"),
                (false, false) => format!("{step} failed: {error}: {cause}"),
            })
        }
    }
}

/// How an execution ended, as the metadb stores it and its status shows it.
struct End {
    outcome: Outcome,
    /// Why it failed; `None` for a success.
    reason: Option<String>,
    /// A success whose plan changed nothing (it ended at "No Changes").
    unchanged: bool,
    /// What the metadb stores: the failure's reason, or "no changes".
    stored_reason: Option<String>,
}

impl End {
    fn of(ended: &Ended, output: Option<&str>) -> End {
        let outcome = if ended.is_success() {
            Outcome::Succeeded
        } else {
            Outcome::Failed
        };
        let reason = failure_reason(ended);
        // A plan that changed nothing ended at "No Changes": a success whose
        // reason says so, for the metadb, the status and the operator.
        let unchanged = ended.is_success() && output.is_some_and(ended_without_changes);
        let stored_reason = if unchanged {
            Some(NO_CHANGES_REASON.to_string())
        } else {
            reason.clone()
        };
        End {
            outcome,
            reason,
            unchanged,
            stored_reason,
        }
    }
}

/// The handler with its clients; built once per cold start. Without a GitHub
/// token `github` is [`NoGitHost`](live_ci_core::status::NoGitHost): no
/// statuses, and the merge lock's are left to the receiver.
#[derive(Debug)]
pub struct TriggerSf<M, W, P, G, H = NoTrunkSweep, L = NoTrunkSweep, N = NoNotifications> {
    config: HandlerConfig,
    metadb: M,
    engine: W,
    params: P,
    github: G,
    /// Without it the sweep does not look at the trunk head.
    trunk: Option<TrunkSweep<H, L>>,
    /// The commit status config as last read, and when: it is editable without
    /// a deploy, so a warm container re-reads it after [`STATUS_CONFIG_TTL`].
    status_config: std::sync::Mutex<Option<(std::time::Instant, CommitStatusConfig)>>,
    /// Where "run finished" and "run failed" go (`notify.rs`); off by default.
    notifications: N,
}

/// How long a warm container trusts the commit status config it read.
pub const STATUS_CONFIG_TTL: std::time::Duration = std::time::Duration::from_secs(60);

impl<M, W, P, G> TriggerSf<M, W, P, G>
where
    M: RunStore + ExecutionStore + SweepStore + ApprovalStore + DeployCommentStore,
    W: WorkflowEngine,
    P: ParamStore,
    G: GitHost,
{
    pub fn new(config: HandlerConfig, metadb: M, engine: W, params: P, github: G) -> Self {
        TriggerSf {
            config,
            metadb,
            engine,
            params,
            github,
            trunk: None,
            status_config: std::sync::Mutex::new(None),
            notifications: NoNotifications,
        }
    }

    /// The same handler whose sweep also compares the trunk head with the
    /// metadb and launches create-deploy-stack for a head it does not know.
    pub fn with_trunk_sweep<H, L>(self, trunk: TrunkSweep<H, L>) -> TriggerSf<M, W, P, G, H, L>
    where
        H: BranchHead,
        L: TaskLauncher,
    {
        TriggerSf {
            config: self.config,
            metadb: self.metadb,
            engine: self.engine,
            params: self.params,
            github: self.github,
            trunk: Some(trunk),
            status_config: self.status_config,
            notifications: self.notifications,
        }
    }
}

impl<M, W, P, G, H, L> TriggerSf<M, W, P, G, H, L> {
    /// The same handler announcing the runs it finishes to `notifications`.
    pub fn with_notifications<N: Notifications>(
        self,
        notifications: N,
    ) -> TriggerSf<M, W, P, G, H, L, N> {
        TriggerSf {
            config: self.config,
            metadb: self.metadb,
            engine: self.engine,
            params: self.params,
            github: self.github,
            trunk: self.trunk,
            status_config: self.status_config,
            notifications,
        }
    }
}

impl<M, W, P, G, H, L, N> TriggerSf<M, W, P, G, H, L, N>
where
    M: RunStore + ExecutionStore + SweepStore + ApprovalStore + DeployCommentStore,
    W: WorkflowEngine,
    P: ParamStore,
    G: GitHost,
    H: BranchHead,
    L: TaskLauncher,
    N: Notifications,
{
    /// The trunk check's launcher (tests inspect what was started).
    pub fn launcher(&self) -> Option<&L> {
        self.trunk.as_ref().map(|t| &t.launcher)
    }

    pub fn metadb(&self) -> &M {
        &self.metadb
    }

    pub fn engine(&self) -> &W {
        &self.engine
    }

    pub fn params(&self) -> &P {
        &self.params
    }

    pub fn github(&self) -> &G {
        &self.github
    }

    pub(crate) fn config(&self) -> &HandlerConfig {
        &self.config
    }

    pub fn notifications(&self) -> &N {
        &self.notifications
    }

    pub async fn handle(&self, input: &Input) -> Result<Report, TriggerError> {
        let mut report = Report::default();
        let done = match input {
            Input::StatusChange(detail) => match self.on_status_change(detail, &mut report).await {
                Ok(Some((run_id, claimed))) => {
                    self.advance(run_id, Some(claimed), &mut report).await
                }
                Ok(None) => Ok(()),
                Err(e) => Err(e),
            },
            Input::Run(run_id) => self.advance(*run_id, None, &mut report).await,
            Input::Sweep => self.sweep(&mut report).await,
            Input::Drift { tick } => self.launch_drift(tick.as_deref(), &mut report).await,
        };
        // What was recorded or started before an error is true either way:
        // its statuses are posted too.
        self.post_queued_statuses(&mut report).await;
        self.write_deploy_comments(&mut report).await;
        self.announce_ended_runs(&mut report).await;
        done.map(|()| report)
    }

    /// Posts the invocation's queued statuses at once, the last per commit and
    /// context (GitHub shows only the newest anyway).
    async fn post_queued_statuses(&self, report: &mut Report) {
        let queued = std::mem::take(&mut report.queued_statuses);
        let mut last: Vec<CommitStatus> = Vec::with_capacity(queued.len());
        for status in queued.into_iter().rev() {
            if !last
                .iter()
                .any(|s| s.sha == status.sha && s.context == status.context)
            {
                last.push(status);
            }
        }
        last.reverse();
        // Each under the advisory rule: a refused status is a warning.
        let posted =
            futures_util::future::join_all(last.iter().map(|s| advisory(&self.github, s))).await;
        report.warnings.extend(posted.into_iter().flatten());
    }

    /// Records an ended execution and claims what its run can start, in one
    /// metadb call; returns the run to advance with that claim (none for an
    /// execution that is not ours).
    async fn on_status_change(
        &self,
        detail: &StatusChangeDetail,
        report: &mut Report,
    ) -> Result<Option<(RunId, Claimed)>, TriggerError> {
        let ended = Ended::classify(
            &detail.status,
            detail.error.as_deref(),
            detail.cause.as_deref(),
        );
        let end = ended
            .as_ref()
            .map(|ended| End::of(ended, detail.output.as_deref()));
        let change = StatusChange {
            execution_id: &detail.name,
            execution_arn: &detail.execution_arn,
            ended: end
                .as_ref()
                .map(|end| (end.outcome, end.stored_reason.as_deref())),
        };
        let settled = self
            .metadb
            .settle(&change, self.config.claim_limit)
            .await
            .port("metadb")?;
        match settled {
            Settled::Unknown => {
                tracing::warn!(name = %detail.name, "status change for an unknown execution");
                Ok(None)
            }
            // Another state machine's execution that happens to share a name.
            Settled::Foreign { execution } => {
                tracing::warn!(name = %detail.name, event_arn = %detail.execution_arn,
                    arn = ?execution.sfn_execution_arn,
                    "status change for a different execution arn");
                Ok(None)
            }
            Settled::Advanced {
                execution,
                finish,
                aborted_units,
                next,
            } => {
                if let (Some(end), Some(FinishOutcome::Recorded { aborted })) = (&end, finish) {
                    self.recorded(&execution, end, aborted, &aborted_units, report)
                        .await?;
                }
                Ok(Some((execution.run_id, next)))
            }
        }
    }

    /// Records an ended execution found by the sweep.
    async fn record(
        &self,
        execution: &ExecutionRecord,
        ended: &Ended,
        output: Option<&str>,
        report: &mut Report,
    ) -> Result<(), TriggerError> {
        let end = End::of(ended, output);
        let result = self
            .metadb
            .record_finished(
                &execution.execution_id,
                end.outcome,
                end.stored_reason.as_deref(),
            )
            .await
            .port("metadb")?;
        if let FinishOutcome::Recorded { aborted } = result {
            self.recorded(execution, &end, aborted, &[], report).await?;
        }
        Ok(())
    }

    /// The statuses of an end this invocation recorded: the execution's, and
    /// each aborted dependent's (from `units` when the metadb sent its details,
    /// else read).
    async fn recorded(
        &self,
        execution: &ExecutionRecord,
        end: &End,
        aborted: Vec<String>,
        units: &[AbortedUnit],
        report: &mut Report,
    ) -> Result<(), TriggerError> {
        report.recorded.push(execution.execution_id.clone());
        let (state, description) = match &end.reason {
            None if end.unchanged => (StatusState::Success, NO_CHANGES_REASON.to_string()),
            None => (StatusState::Success, "deployed".to_string()),
            Some(reason) => (StatusState::Failure, reason.clone()),
        };
        self.unit_status(execution, state, &description, report)
            .await;
        for id in &aborted {
            let dependent = match units.iter().find(|u| &u.execution_id == id) {
                Some(unit) => ExecutionRecord {
                    execution_id: unit.execution_id.clone(),
                    cfg_path: unit.cfg_path.clone(),
                    is_rollback: unit.is_rollback,
                    status_reason: unit.status_reason.clone(),
                    sfn_execution_arn: None,
                    ..execution.clone()
                },
                None => match self.metadb.execution(id).await.port("metadb")? {
                    Some(dependent) => dependent,
                    None => continue,
                },
            };
            let why = dependent
                .status_reason
                .clone()
                .unwrap_or_else(|| "aborted".into());
            self.unit_status(
                &dependent,
                StatusState::Error,
                &format!("aborted: {why}"),
                report,
            )
            .await;
        }
        report.aborted.extend(aborted);
        Ok(())
    }

    /// Whether per-unit statuses are on (`Apply` of the commit status config).
    /// An unreadable config is a warning and counts as on: a status too many
    /// beats a deployment nobody can follow.
    async fn unit_statuses_enabled(&self, report: &mut Report) -> bool {
        let Some(param) = &self.config.commit_status_config_param else {
            return true;
        };
        let cached = self.status_config.lock().ok().and_then(|c| *c);
        if let Some((read_at, config)) = cached
            && read_at.elapsed() < STATUS_CONFIG_TTL
        {
            return config.apply;
        }
        let read = match self.params.get(param).await {
            Ok(json) => CommitStatusConfig::parse(&json),
            Err(e) => Err(format!("reading {param:?}: {e}")),
        };
        match read {
            Ok(config) => {
                if let Ok(mut cache) = self.status_config.lock() {
                    *cache = Some((std::time::Instant::now(), config));
                }
                config.apply
            }
            Err(e) => {
                tracing::warn!(error = %e, "commit status config");
                report.warnings.push(e);
                true
            }
        }
    }

    /// Posts one unit's status on its merge commit. Statuses are advisory: a
    /// GitHub outage must not stop the deployment, so failures become warnings.
    async fn unit_status(
        &self,
        execution: &ExecutionRecord,
        state: StatusState,
        description: &str,
        report: &mut Report,
    ) {
        let statuses = self.statuses(report).await;
        let context = if execution.is_rollback {
            context::rollback_unit(execution.cfg_path.as_str())
        } else {
            context::deploy_unit(execution.cfg_path.as_str())
        };
        let mut status = CommitStatus::new(&execution.commit_id, state, &context, description);
        // The read-only run page a reviewer can open (it links the Step
        // Functions execution for operators); without run pages, the unit's
        // Step Functions execution once it has one.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        status.target_url = match &self.config.run_pages {
            Some(pages) => pages.url(execution.run_id, now),
            None => execution
                .sfn_execution_arn
                .as_deref()
                .and_then(target::execution),
        };
        Self::queue(&statuses, Check::Apply, status, report);
    }

    /// The status service with the switches as last read.
    async fn statuses(&self, report: &mut Report) -> Statuses<&G> {
        let apply = self.unit_statuses_enabled(report).await;
        let switches = CommitStatusConfig {
            apply,
            ..CommitStatusConfig::default()
        };
        Statuses::new(&self.github, switches)
    }

    /// Queues a status its switch allows; `handle` posts the queue when the
    /// invocation's work is done.
    fn queue(statuses: &Statuses<&G>, check: Check, status: CommitStatus, report: &mut Report) {
        if statuses.allows(check) {
            report.queued_statuses.push(status);
        }
    }

    /// Starts what is ready in `run_id`; finishes it when nothing is left, then
    /// does the same for the run that took over the merge lock.
    /// `claimed` is a claim of `run_id` already made (with the status change).
    async fn advance(
        &self,
        run_id: RunId,
        claimed: Option<Claimed>,
        report: &mut Report,
    ) -> Result<(), TriggerError> {
        let mut run_id = run_id;
        let mut claimed = claimed;
        for _ in 0..self.config.max_runs_per_invocation {
            report.touched_runs.push(run_id);
            // One claim per call: a released claim is ready again at once, so
            // claiming in a loop would retry a broken start forever.
            let claim = match claimed.take() {
                Some(claim) => claim,
                None => self
                    .metadb
                    .claim_next(run_id, self.config.claim_limit)
                    .await
                    .port("metadb")?,
            };
            let failed_for_good = self.start_claimed(&claim.claimed, report).await?;
            // The counts came with the claim; a claim that failed for good
            // (and aborted its dependents) may have ended the run since.
            let progress = if failed_for_good {
                self.metadb.run_progress(run_id).await.port("metadb")?
            } else {
                claim.progress
            };
            if !progress.is_done() {
                return Ok(());
            }
            if progress.failed > 0 && self.add_rollbacks(run_id, report).await? {
                continue;
            }
            let end = self.metadb.end_run(run_id).await.port("metadb")?;
            let Some(status) = end.finish.finished else {
                // Not running (queued, or finished by someone else): nothing to hand on.
                return Ok(());
            };
            report.finished.push((run_id, status));
            self.run_status(run_id, status, &end, report);
            report.ended_runs.push(end.clone());
            let published = self.lock().publish(end.merge_lock.lock()).await;
            report
                .warnings
                .extend(published.map_err(PortError::from)?.warning);
            match end.finish.next_run {
                Some(next) => run_id = next,
                None => return Ok(()),
            }
        }
        Err(TriggerError::TooManyRuns(
            self.config.max_runs_per_invocation,
        ))
    }

    /// A failed run whose units created new provider resources gets rollback
    /// executions before it finishes; true when some were added.
    async fn add_rollbacks(
        &self,
        run_id: RunId,
        report: &mut Report,
    ) -> Result<bool, TriggerError> {
        let executions = self.metadb.executions(run_id).await.port("metadb")?;
        let rollbacks = plan_rollbacks(&executions);
        if rollbacks.is_empty() {
            return Ok(false);
        }
        let added = self
            .metadb
            .add_rollbacks(run_id, &rollbacks)
            .await
            .port("metadb")?;
        let commit = executions
            .first()
            .map(|e| e.commit_id.clone())
            .unwrap_or_default();
        let statuses = self.statuses(report).await;
        for rollback in rollbacks
            .iter()
            .filter(|r| added.contains(&r.execution.execution_id))
        {
            let status = CommitStatus::new(
                &commit,
                StatusState::Pending,
                &context::rollback_unit(rollback.execution.cfg_path.as_str()),
                &format!(
                    "waiting to destroy {} new resource(s)",
                    rollback.resources.len()
                ),
            );
            Self::queue(&statuses, Check::Apply, status, report);
        }
        let any = !added.is_empty();
        report.rollbacks.extend(added);
        Ok(any)
    }

    /// Starts claimed executions, all at once (the last of a batch does not
    /// wait for the round trips of the others), and records the starts: every
    /// ARN in one metadb call, each failure against its claim. True when a
    /// start failed for the last allowed time.
    async fn start_claimed(
        &self,
        claimed: &[ExecutionRecord],
        report: &mut Report,
    ) -> Result<bool, TriggerError> {
        let started = futures_util::future::join_all(
            claimed
                .iter()
                .map(|execution| self.start_execution(execution)),
        )
        .await;
        let mut arns = Vec::new();
        let mut failures = Vec::new();
        let mut first_error = None;
        for (execution, result) in claimed.iter().zip(started) {
            match result {
                Ok(Ok(arn)) => arns.push((execution, arn)),
                Ok(Err(err)) => failures.push((execution, err)),
                // Recorded after the others: their executions did start.
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        self.attach_arns(&arns, report).await?;
        let mut failed_for_good = false;
        for (execution, err) in failures {
            failed_for_good |= self.start_failed(execution, &err, report).await?;
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(failed_for_good),
        }
    }

    /// StartExecution for one claimed execution: its ARN, or the engine's
    /// error (which `start_failed` records against the claim).
    async fn start_execution(
        &self,
        execution: &ExecutionRecord,
    ) -> Result<Result<String, String>, TriggerError> {
        let id = &execution.execution_id;
        let input = serde_json::to_string(&execution.sfn_input())
            .map_err(|e| TriggerError::Input(format!("execution {id:?}: {e}")))?;
        Ok(self
            .engine
            .start_execution(id, &input)
            .await
            .map_err(|e| e.to_string()))
    }

    /// Records started executions' ARNs on their claims, in one call.
    async fn attach_arns(
        &self,
        started: &[(&ExecutionRecord, String)],
        report: &mut Report,
    ) -> Result<(), TriggerError> {
        if started.is_empty() {
            return Ok(());
        }
        let pairs: Vec<(String, String)> = started
            .iter()
            .map(|(execution, arn)| (execution.execution_id.clone(), arn.clone()))
            .collect();
        let attached = self
            .metadb
            .attach_execution_arns(&pairs)
            .await
            .port("metadb")?;
        for (execution, arn) in started {
            let id = &execution.execution_id;
            if !attached.contains(id) {
                tracing::warn!(execution_id = %id, %arn, "claim changed before its arn was attached");
                continue;
            }
            report.started.push(id.clone());
            let started = ExecutionRecord {
                sfn_execution_arn: Some(arn.clone()),
                ..(*execution).clone()
            };
            self.unit_status(&started, StatusState::Pending, "deploying", report)
                .await;
        }
        Ok(())
    }

    /// Records a failed start against its claim, so nothing stays running
    /// without an execution behind it: released for a retry, or failed (with
    /// its dependents aborted) the last allowed time, which returns true.
    async fn start_failed(
        &self,
        execution: &ExecutionRecord,
        err: &str,
        report: &mut Report,
    ) -> Result<bool, TriggerError> {
        let id = &execution.execution_id;
        tracing::error!(execution_id = %id, error = %err, "start failed");
        let failure = self
            .metadb
            .record_start_failure(id, err, self.config.max_start_attempts)
            .await
            .port("metadb")?;
        match failure {
            StartFailure::Released { attempts } => {
                tracing::warn!(execution_id = %id, attempts, "claim released for a retry");
                report.released.push(id.clone());
                Ok(false)
            }
            StartFailure::Failed {
                reason, aborted, ..
            } => {
                report.start_failed.push(id.clone());
                self.unit_status(execution, StatusState::Failure, &reason, report)
                    .await;
                for dependent in &aborted {
                    if let Some(d) = self.metadb.execution(dependent).await.port("metadb")? {
                        self.unit_status(
                            &d,
                            StatusState::Error,
                            "aborted: ancestor failed",
                            report,
                        )
                        .await;
                    }
                }
                report.aborted.extend(aborted);
                Ok(true)
            }
            StartFailure::Unchanged => Ok(false),
        }
    }

    /// Posts a finished run's result on its merge commit, from what its end
    /// read.
    fn run_status(&self, run_id: RunId, status: RunStatus, end: &RunEnd, report: &mut Report) {
        let Some(run) = &end.run else {
            return;
        };
        let progress = &end.progress;
        let (state, description) = match status {
            RunStatus::Succeeded => (
                StatusState::Success,
                format!(
                    "{} of {} units deployed",
                    progress.succeeded,
                    progress.total()
                ),
            ),
            _ => (
                StatusState::Failure,
                format!(
                    "{} failed, {} aborted, {} of {} deployed",
                    progress.failed,
                    progress.aborted,
                    progress.succeeded,
                    progress.total()
                ),
            ),
        };
        let commit = CommitStatus::new(&run.commit_id, state, context::DEPLOY, &description);
        let statuses = Statuses::new(&self.github, CommitStatusConfig::default());
        Self::queue(&statuses, Check::Always, commit, report);
        // The merges this run deployed along with its own commit never ran
        // themselves: their commits learn the outcome here, or they would
        // show no deploy status at all.
        for covered in &end.superseded {
            let status = superseded(&covered.commit_id, run_id, &run.commit_id, status);
            Self::queue(&statuses, Check::Always, status, report);
        }
    }

    /// The lock's owner with this handler's ports: the parameter, and the
    /// statuses of open pull requests (advisory; the receiver posts the lock
    /// on every pull-request event).
    fn lock(&self) -> Publisher<'_, M, P, G> {
        Publisher {
            metadb: &self.metadb,
            params: &self.params,
            param: &self.config.merge_lock_param,
            advisory: Advisory::Refresh {
                host: &self.github,
                scope: self.config.merge_lock_scope,
                trunk: &self.config.trunk_branch,
                pattern: &self.config.file_pattern,
            },
        }
    }

    /// Repairs missed events: claims whose start was lost are started again
    /// (the start is idempotent) and running executions whose Step Functions
    /// execution has ended are recorded.
    async fn sweep(&self, report: &mut Report) -> Result<(), TriggerError> {
        let mut runs = Vec::new();
        let stale = self
            .metadb
            .stale_claims(self.config.stale_claim_secs)
            .await
            .port("metadb")?;
        self.start_claimed(&stale, report).await?;
        runs.extend(stale.iter().map(|e| e.run_id));
        let running = self
            .metadb
            .running_with_arn(self.config.sweep_limit)
            .await
            .port("metadb")?;
        for execution in running {
            let Some(arn) = &execution.sfn_execution_arn else {
                continue;
            };
            let described = match self.engine.describe_execution(arn).await {
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
        if let Some(run_id) = self.metadb.merge_lock().await.port("metadb")?.run_id {
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
    async fn sweep_trunk(&self, report: &mut Report) -> Result<(), TriggerError> {
        let Some(trunk) = &self.trunk else {
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
            .metadb
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
    async fn launch_drift(
        &self,
        tick: Option<&str>,
        report: &mut Report,
    ) -> Result<(), TriggerError> {
        let Some(trunk) = &self.trunk else {
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

/// The invocation's minute since the Unix epoch: a drift tick when the rule
/// passes no event time (two deliveries within one minute start one task).
fn this_minute() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("m{}", secs / 60)
}
