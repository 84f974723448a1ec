//! The commit statuses an invocation posts: unit statuses behind the status
//! switches, the run's result, queued until the metadb and Step Functions work
//! is done (a status is advisory).

use super::{Report, STATUS_CONFIG_TTL, TriggerSf};
use crate::ports::TriggerPorts;
use live_ci_core::deploy::{ExecutionRecord, RunEnd, RunId, RunStatus};
use live_ci_core::port::ParamStore;
use live_ci_core::status::{
    Check, CommitStatus, CommitStatusConfig, StatusState, Statuses, advisory, context, superseded,
    target,
};

impl<Ports: TriggerPorts> TriggerSf<Ports> {
    /// Posts the invocation's queued statuses at once, the last per commit and
    /// context (GitHub shows only the newest anyway).
    pub(super) async fn post_queued_statuses(&self, report: &mut Report) {
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
            futures_util::future::join_all(last.iter().map(|s| advisory(self.ports.github(), s)))
                .await;
        report.warnings.extend(posted.into_iter().flatten());
    }

    /// Whether per-unit statuses are on (`Apply` of the commit status config).
    /// An unreadable config is a warning and counts as on: a status too many
    /// beats a deployment nobody can follow.
    pub(super) async fn unit_statuses_enabled(&self, report: &mut Report) -> bool {
        let Some(param) = &self.config.commit_status_config_param else {
            return true;
        };
        let cached = self.status_config.lock().ok().and_then(|c| *c);
        if let Some((read_at, config)) = cached
            && read_at.elapsed() < STATUS_CONFIG_TTL
        {
            return config.apply;
        }
        let read = match self.ports.params().get(param).await {
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
    pub(super) async fn unit_status(
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
    pub(super) async fn statuses(&self, report: &mut Report) -> Statuses<&Ports::GitHub> {
        let apply = self.unit_statuses_enabled(report).await;
        let switches = CommitStatusConfig {
            apply,
            ..CommitStatusConfig::default()
        };
        Statuses::new(self.ports.github(), switches)
    }

    /// Queues a status its switch allows; `handle` posts the queue when the
    /// invocation's work is done.
    pub(super) fn queue(
        statuses: &Statuses<&Ports::GitHub>,
        check: Check,
        status: CommitStatus,
        report: &mut Report,
    ) {
        if statuses.allows(check) {
            report.queued_statuses.push(status);
        }
    }

    /// Posts a finished run's result on its merge commit, from what its end
    /// read.
    pub(super) fn run_status(
        &self,
        run_id: RunId,
        status: RunStatus,
        end: &RunEnd,
        report: &mut Report,
    ) {
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
        let statuses = Statuses::new(self.ports.github(), CommitStatusConfig::default());
        Self::queue(&statuses, Check::Always, commit, report);
        // The merges this run deployed along with its own commit never ran
        // themselves: their commits learn the outcome here, or they would
        // show no deploy status at all.
        for covered in &end.superseded {
            let status = superseded(&covered.commit_id, run_id, &run.commit_id, status);
            Self::queue(&statuses, Check::Always, status, report);
        }
    }
}
