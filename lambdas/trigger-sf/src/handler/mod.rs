//! The handler: every step is a guarded metadb update, so a repeated or
//! out-of-order event, or two invocations at once, change nothing twice.

mod advance;
pub(crate) mod error;
mod record;
mod report;
mod statuses;
mod sweep;

pub use error::TriggerError;
pub use record::failure_reason;
pub use report::{Report, TrunkLaunch};
pub use sweep::{NoTrunkSweep, TrunkSweep};

use live_ci_core::merge_lock::{Advisory, Publisher};
use live_ci_core::port::GitHost;
use live_ci_core::port::ParamStore;
use live_ci_core::port::TaskLauncher;
use live_ci_core::port::{
    ApprovalStore, DeployCommentStore, ExecutionStore, RunStore, SweepStore, WorkflowEngine,
};
use live_ci_core::port::{BranchHead, NoNotifications, Notifications};
use live_ci_core::status::CommitStatusConfig;

use crate::config::HandlerConfig;
use crate::event::Input;

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
pub(crate) const STATUS_CONFIG_TTL: std::time::Duration = std::time::Duration::from_secs(60);

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
}
