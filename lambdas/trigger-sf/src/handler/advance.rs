//! Advancing a run: claim the units that became ready and start their Step
//! Functions executions, add rollbacks to a failed run, finish the run and hand
//! the merge lock on (published through the lock's owner).

use super::{Report, TriggerError, TriggerSf};
use crate::ports::TriggerPorts;
use live_ci_core::deploy::{Claimed, ExecutionRecord, RunId, plan_rollbacks};
use live_ci_core::operate::StartFailure;
use live_ci_core::port::{ExecutionStore, PortError, PortResultExt, RunStore, WorkflowEngine};
use live_ci_core::status::{Check, CommitStatus, StatusState, context};

impl<Ports: TriggerPorts> TriggerSf<Ports> {
    /// Starts what is ready in `run_id`; finishes it when nothing is left, then
    /// does the same for the run that took over the merge lock.
    /// `claimed` is a claim of `run_id` already made (with the status change).
    pub(super) async fn advance(
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
                    .ports
                    .metadb()
                    .claim_next(run_id, self.config.claim_limit)
                    .await
                    .port("metadb")?,
            };
            let failed_for_good = self.start_claimed(&claim.claimed, report).await?;
            // The counts came with the claim; a claim that failed for good
            // (and aborted its dependents) may have ended the run since.
            let progress = if failed_for_good {
                self.ports
                    .metadb()
                    .run_progress(run_id)
                    .await
                    .port("metadb")?
            } else {
                claim.progress
            };
            if !progress.is_done() {
                return Ok(());
            }
            if progress.failed > 0 && self.add_rollbacks(run_id, report).await? {
                continue;
            }
            let end = self.ports.metadb().end_run(run_id).await.port("metadb")?;
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
    pub(super) async fn add_rollbacks(
        &self,
        run_id: RunId,
        report: &mut Report,
    ) -> Result<bool, TriggerError> {
        let executions = self
            .ports
            .metadb()
            .executions(run_id)
            .await
            .port("metadb")?;
        let rollbacks = plan_rollbacks(&executions);
        if rollbacks.is_empty() {
            return Ok(false);
        }
        let added = self
            .ports
            .metadb()
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
    pub(super) async fn start_claimed(
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
    pub(super) async fn start_execution(
        &self,
        execution: &ExecutionRecord,
    ) -> Result<Result<String, String>, TriggerError> {
        let id = &execution.execution_id;
        let input = serde_json::to_string(&execution.sfn_input())
            .map_err(|e| TriggerError::Input(format!("execution {id:?}: {e}")))?;
        Ok(self
            .ports
            .engine()
            .start_execution(id, &input)
            .await
            .map_err(|e| e.to_string()))
    }

    /// Records started executions' ARNs on their claims, in one call.
    pub(super) async fn attach_arns(
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
            .ports
            .metadb()
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
    pub(super) async fn start_failed(
        &self,
        execution: &ExecutionRecord,
        err: &str,
        report: &mut Report,
    ) -> Result<bool, TriggerError> {
        let id = &execution.execution_id;
        tracing::error!(execution_id = %id, error = %err, "start failed");
        let failure = self
            .ports
            .metadb()
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
                    if let Some(d) = self
                        .ports
                        .metadb()
                        .execution(dependent)
                        .await
                        .port("metadb")?
                    {
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
}
