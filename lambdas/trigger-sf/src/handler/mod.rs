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
use live_ci_core::status::CommitStatusConfig;

use crate::config::HandlerConfig;
use crate::event::Input;
use crate::ports::TriggerPorts;

/// The handler with its ports ([`TriggerPorts`]); built once per cold start.
#[derive(Debug)]
pub struct TriggerSf<Ports> {
    config: HandlerConfig,
    /// Read by the step files beside this one and by `deploy_comment.rs`
    /// and `notify.rs`.
    pub(crate) ports: Ports,
    /// The commit status config as last read, and when: it is editable without
    /// a deploy, so a warm container re-reads it after [`STATUS_CONFIG_TTL`].
    status_config: std::sync::Mutex<Option<(std::time::Instant, CommitStatusConfig)>>,
}

/// How long a warm container trusts the commit status config it read.
pub(crate) const STATUS_CONFIG_TTL: std::time::Duration = std::time::Duration::from_secs(60);

impl<Ports: TriggerPorts> TriggerSf<Ports> {
    /// The handler on `ports`; the status config is read at the first status.
    pub fn new(config: HandlerConfig, ports: Ports) -> Self {
        TriggerSf {
            config,
            ports,
            status_config: std::sync::Mutex::new(None),
        }
    }

    /// The settings, for the steps outside this module (`deploy_comment.rs`,
    /// `notify.rs`).
    pub(crate) fn config(&self) -> &HandlerConfig {
        &self.config
    }

    /// Serves one invocation; what it recorded or started before an error is
    /// kept (every step is a guarded metadb update), and its statuses,
    /// deploy comments and notifications still go out.
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
    fn lock(&self) -> Publisher<'_, Ports::Metadb, Ports::Params, Ports::GitHub> {
        Publisher {
            metadb: self.ports.metadb(),
            params: self.ports.params(),
            param: &self.config.merge_lock_param,
            advisory: Advisory::Refresh {
                host: self.ports.github(),
                scope: self.config.merge_lock_scope,
                trunk: &self.config.trunk_branch,
                pattern: &self.config.file_pattern,
            },
        }
    }
}
