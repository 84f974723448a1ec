//! Recording how an execution ended: its outcome and reason in the metadb,
//! its unit status, then the run advanced.

use super::{Report, TriggerError, TriggerSf};
use crate::event::StatusChangeDetail;
use crate::ports::TriggerPorts;
use live_ci_core::deploy::{
    AbortedUnit, Claimed, ExecutionRecord, FinishOutcome, Outcome, RunId, Settled, StatusChange,
};
use live_ci_core::port::{ExecutionStore, PortResultExt};
use live_ci_core::status::StatusState;
use live_ci_stepfunctions::outcome::{
    FailedStep, NO_CHANGES_REASON, Outcome as Ended, ended_without_changes,
};

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

impl<Ports: TriggerPorts> TriggerSf<Ports> {
    /// Records an ended execution and claims what its run can start, in one
    /// metadb call; returns the run to advance with that claim (none for an
    /// execution that is not ours).
    pub(super) async fn on_status_change(
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
            .ports
            .metadb()
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
    pub(super) async fn record(
        &self,
        execution: &ExecutionRecord,
        ended: &Ended,
        output: Option<&str>,
        report: &mut Report,
    ) -> Result<(), TriggerError> {
        let end = End::of(ended, output);
        let result = self
            .ports
            .metadb()
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
                None => match self.ports.metadb().execution(id).await.port("metadb")? {
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
}
