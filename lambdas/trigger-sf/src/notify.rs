//! The run's end announced where the team talks (issue 29 item 4): "run
//! finished" for a run whose units all deployed, "run failed" (the failed
//! units and their errors) otherwise, with the read-only run page and the
//! pull request.
//!
//! Exactly once per run: an announcement follows the metadb's own transition
//! (`end_run` answering `finished` for this call only, [`Report::ended_runs`]),
//! never the incoming event, so an event delivered twice, the sweep and two
//! concurrent invocations announce a run's end once between them. Advisory: a
//! failed publish is a warning, and it comes after the deploy's own work.

use live_ci_core::deploy::{ExecutionRecord, ExecutionStatus, RunEnd, RunStatus};
use live_ci_core::notification::{Event, PullRequest, UnitError};
use live_ci_core::port::{ExecutionStore, PortError, announce};

use crate::config::HandlerConfig;
use crate::handler::{Report, TriggerSf};
use crate::ports::TriggerPorts;

impl<Ports: TriggerPorts> TriggerSf<Ports> {
    /// Announces each run this invocation finished.
    pub(crate) async fn announce_ended_runs(&self, report: &mut Report) {
        for end in std::mem::take(&mut report.ended_runs) {
            let Some(run) = &end.run else { continue };
            // A failed run lists its failed units: read once, only then.
            let failed = if end.finish.finished == Some(RunStatus::Succeeded) {
                Vec::new()
            } else {
                match self.ports.metadb().executions(run.run_id).await {
                    Ok(executions) => failed_units(&executions),
                    Err(e) => {
                        let e = PortError::new("metadb", e);
                        tracing::warn!(run_id = run.run_id, error = %e, "reading the failed units");
                        report.warnings.push(format!(
                            "failed units of run {} for its notification: {e}",
                            run.run_id
                        ));
                        Vec::new()
                    }
                }
            };
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or_default();
            let page = self
                .config()
                .run_pages
                .as_ref()
                .and_then(|pages| pages.url(run.run_id, now));
            let Some(event) = run_end_event(self.config(), &end, failed, page) else {
                continue;
            };
            if let Some(warning) = announce(self.ports.notifications(), event).await {
                report.warnings.push(warning);
            }
        }
    }
}

/// The failed executions with their reasons (rollbacks named as such), in
/// the metadb's order.
fn failed_units(executions: &[ExecutionRecord]) -> Vec<UnitError> {
    executions
        .iter()
        .filter(|e| e.status == ExecutionStatus::Failed)
        .map(|e| UnitError {
            unit: if e.is_rollback {
                format!("{} (rollback)", e.cfg_path.as_str())
            } else {
                e.cfg_path.as_str().to_string()
            },
            error: e.status_reason.clone().unwrap_or_else(|| "failed".into()),
        })
        .collect()
}

/// The announcement of a run's end; `None` for an end that is not one
/// (only succeeded and failed runs are announced).
pub fn run_end_event(
    config: &HandlerConfig,
    end: &RunEnd,
    failed: Vec<UnitError>,
    page_url: Option<String>,
) -> Option<Event> {
    let run = end.run.as_ref()?;
    let pull_request = (run.pr_id > 0).then(|| PullRequest {
        number: run.pr_id,
        url: config
            .github_web_url
            .as_ref()
            .filter(|_| !config.repository.is_empty())
            .map(|web| format!("{web}/{}/pull/{}", config.repository, run.pr_id))
            .unwrap_or_default(),
    });
    let repository = config.repository.clone();
    let run_id = run.run_id.to_string();
    match end.finish.finished? {
        RunStatus::Succeeded => Some(Event::RunFinished {
            repository,
            run_id,
            pull_request,
            units: u32::try_from(end.progress.succeeded).unwrap_or(u32::MAX),
            page_url,
        }),
        RunStatus::Failed => Some(Event::RunFailed {
            repository,
            run_id,
            pull_request,
            failed,
            page_url,
        }),
        RunStatus::Queued | RunStatus::Running | RunStatus::Superseded => None,
    }
}
