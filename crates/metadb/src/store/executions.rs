//! [`ExecutionStore`] over any [`Sql`] connection: reads in pages, the claim,
//! settling a status change, a finish, and what terra-run records of a plan.

use live_ci_core::deploy::{
    AbortedUnit, Claimed, ExecutionRecord, ExecutionStatus, FinishOutcome, Outcome, RunId,
    RunProgress, Settled, StatusChange,
};
use live_ci_core::operate::StartFailure;
use live_ci_core::port::{ExecutionStore, SavedPlan};
use serde::Deserialize;

use super::{Store, decode, decode_all, decode_first, in_tx, json, no_row};
use crate::error::{MetadbError, Result};
use crate::sql::statements as q;
use crate::sql::{Param, Sql, SqlTx};

/// Executions read per page: about 300 KB of JSON for typical rows, well under
/// the Data API's 1 MiB response limit; a page refused anyway (long voter
/// lists, many new resources) is read again in halves.
const EXECUTIONS_PAGE: i64 = 200;

/// Where the next page of a run's executions starts.
#[derive(Debug, Clone, Copy, Deserialize)]
struct PageKey {
    priority: f64,
    seq: i64,
}

/// One started execution as `ATTACH_ARNS` reads it.
#[derive(serde::Serialize)]
struct ArnRow<'a> {
    execution_id: &'a str,
    arn: &'a str,
}

/// `live_ci_finish`'s answer (migration 0010).
#[derive(Deserialize)]
struct FinishRow {
    recorded: bool,
    #[serde(default)]
    status: Option<ExecutionStatus>,
    #[serde(default)]
    aborted: Vec<String>,
    #[serde(default)]
    units: Vec<AbortedUnit>,
}

impl FinishRow {
    fn outcome(self) -> (FinishOutcome, Vec<AbortedUnit>) {
        if self.recorded {
            (
                FinishOutcome::Recorded {
                    aborted: self.aborted,
                },
                self.units,
            )
        } else {
            (
                FinishOutcome::Unchanged {
                    status: self.status,
                },
                Vec::new(),
            )
        }
    }
}

/// `live_ci_settle`'s answer: `finish`, `claimed` and `progress` are absent
/// for a foreign execution.
#[derive(Deserialize)]
struct SettleRow {
    execution: ExecutionRecord,
    #[serde(default)]
    foreign: bool,
    #[serde(default)]
    finish: Option<FinishRow>,
    #[serde(default)]
    claimed: Vec<ExecutionRecord>,
    #[serde(default)]
    progress: RunProgress,
}

fn finish_params(
    execution_id: &str,
    outcome: Outcome,
    reason: Option<&str>,
) -> [(&'static str, Param); 3] {
    [
        ("execution_id", Param::text(execution_id)),
        ("status", Param::text(outcome.status().as_str())),
        ("reason", Param::opt_text(reason)),
    ]
}

/// Records an execution's end inside the caller's transaction (the operator's
/// failed start); one statement, `live_ci_finish`.
pub(crate) async fn finish_tx<T: SqlTx>(
    tx: &mut T,
    execution_id: &str,
    outcome: Outcome,
    reason: Option<&str>,
) -> Result<FinishOutcome> {
    let rows = tx
        .query(q::FINISH, &finish_params(execution_id, outcome, reason))
        .await?;
    let row = rows.first().ok_or_else(|| no_row(q::FINISH))?;
    Ok(decode::<FinishRow>(q::FINISH, row)?.outcome().0)
}

impl<S: Sql> ExecutionStore for Store<S> {
    type Error = MetadbError;

    async fn execution(&self, execution_id: &str) -> Result<Option<ExecutionRecord>> {
        let rows = self
            .sql
            .query(q::EXECUTION, &[("execution_id", Param::text(execution_id))])
            .await?;
        decode_first(q::EXECUTION, &rows)
    }

    async fn executions(&self, run_id: RunId) -> Result<Vec<ExecutionRecord>> {
        let mut all = Vec::new();
        let mut after: Option<PageKey> = None;
        let mut limit = EXECUTIONS_PAGE;
        loop {
            let page = self
                .sql
                .query(
                    q::EXECUTIONS_OF_RUN_PAGE,
                    &[
                        ("run_id", Param::Int(run_id)),
                        ("first", Param::Bool(after.is_none())),
                        (
                            "after_priority",
                            Param::Float(after.map_or(0.0, |k| k.priority)),
                        ),
                        ("after_seq", Param::Int(after.map_or(0, |k| k.seq))),
                        ("limit", Param::Int(limit)),
                    ],
                )
                .await;
            let rows = match page {
                Ok(rows) => rows,
                Err(e) if e.is_response_too_large() && limit > 1 => {
                    limit = (limit / 2).max(1);
                    continue;
                }
                Err(e) => return Err(e),
            };
            let Some(last) = rows.last() else { break };
            after = Some(decode(q::EXECUTIONS_OF_RUN_PAGE, last)?);
            let full = rows.len() as i64 == limit;
            all.extend(decode_all::<ExecutionRecord>(
                q::EXECUTIONS_OF_RUN_PAGE,
                &rows,
            )?);
            if !full {
                break;
            }
        }
        Ok(all)
    }

    async fn claim_ready(&self, run_id: RunId, limit: u32) -> Result<Vec<ExecutionRecord>> {
        Ok(self.claim_next(run_id, limit).await?.claimed)
    }

    async fn claim_next(&self, run_id: RunId, limit: u32) -> Result<Claimed> {
        let row = self
            .query_one(
                q::CLAIM,
                &[
                    ("run_id", Param::Int(run_id)),
                    ("limit", Param::Int(i64::from(limit))),
                ],
            )
            .await?;
        decode(q::CLAIM, &row)
    }

    async fn settle(&self, change: &StatusChange<'_>, claim_limit: u32) -> Result<Settled> {
        let (status, reason) = match change.ended {
            Some((outcome, reason)) => (
                Param::text(outcome.status().as_str()),
                Param::opt_text(reason),
            ),
            None => (Param::NullText, Param::NullText),
        };
        let row = self
            .query_one(
                q::SETTLE,
                &[
                    ("execution_id", Param::text(change.execution_id)),
                    ("arn", Param::text(change.execution_arn)),
                    ("status", status),
                    ("reason", reason),
                    ("limit", Param::Int(i64::from(claim_limit))),
                ],
            )
            .await?;
        // SQL NULL: no execution has the name.
        if row.is_empty() {
            return Ok(Settled::Unknown);
        }
        let settled: SettleRow = decode(q::SETTLE, &row)?;
        if settled.foreign {
            return Ok(Settled::Foreign {
                execution: settled.execution,
            });
        }
        let (finish, aborted_units) = match settled.finish.map(FinishRow::outcome) {
            Some((finish, units)) => (Some(finish), units),
            None => (None, Vec::new()),
        };
        Ok(Settled::Advanced {
            execution: settled.execution,
            finish,
            aborted_units,
            next: Claimed {
                claimed: settled.claimed,
                progress: settled.progress,
            },
        })
    }

    async fn attach_execution_arn(&self, execution_id: &str, arn: &str) -> Result<bool> {
        let attached = self
            .attach_execution_arns(&[(execution_id.to_string(), arn.to_string())])
            .await?;
        Ok(!attached.is_empty())
    }

    async fn attach_execution_arns(&self, started: &[(String, String)]) -> Result<Vec<String>> {
        if started.is_empty() {
            return Ok(Vec::new());
        }
        let rows: Vec<ArnRow<'_>> = started
            .iter()
            .map(|(execution_id, arn)| ArnRow { execution_id, arn })
            .collect();
        self.sql
            .query(q::ATTACH_ARNS, &[("started", json(&rows)?)])
            .await
    }

    async fn release_claim(&self, execution_id: &str) -> Result<bool> {
        let rows = self
            .sql
            .query(
                q::RELEASE_CLAIM,
                &[("execution_id", Param::text(execution_id))],
            )
            .await?;
        Ok(!rows.is_empty())
    }

    async fn record_start_failure(
        &self,
        execution_id: &str,
        error: &str,
        max_attempts: u32,
    ) -> Result<StartFailure> {
        in_tx!(self.sql, |tx| super::run_control::start_failure_tx(
            &mut tx,
            execution_id,
            error,
            max_attempts
        ))
    }

    async fn record_finished(
        &self,
        execution_id: &str,
        outcome: Outcome,
        reason: Option<&str>,
    ) -> Result<FinishOutcome> {
        let row = self
            .query_one(q::FINISH, &finish_params(execution_id, outcome, reason))
            .await?;
        Ok(decode::<FinishRow>(q::FINISH, &row)?.outcome().0)
    }

    async fn abort_dependents(&self, execution_id: &str) -> Result<Vec<String>> {
        self.sql
            .query(
                q::ABORT_DEPENDENTS,
                &[("execution_id", Param::text(execution_id))],
            )
            .await
    }

    async fn record_new_resources(&self, execution_id: &str, resources: &[String]) -> Result<bool> {
        let rows = self
            .sql
            .query(
                q::RECORD_NEW_RESOURCES,
                &[
                    ("execution_id", Param::text(execution_id)),
                    ("resources", json(resources)?),
                ],
            )
            .await?;
        Ok(!rows.is_empty())
    }

    async fn record_saved_plan(&self, execution_id: &str, plan: &SavedPlan) -> Result<bool> {
        let rows = self
            .sql
            .query(
                q::RECORD_SAVED_PLAN,
                &[
                    ("execution_id", Param::text(execution_id)),
                    ("plan_key", Param::text(&plan.key)),
                    ("plan_sha256", Param::text(&plan.sha256)),
                    (
                        "plan_version_id",
                        plan.version_id
                            .as_deref()
                            .map_or(Param::NullText, Param::text),
                    ),
                    (
                        "plan_json_sha256",
                        plan.json_sha256
                            .as_deref()
                            .map_or(Param::NullText, Param::text),
                    ),
                ],
            )
            .await?;
        Ok(!rows.is_empty())
    }

    async fn record_policy_denials(
        &self,
        execution_id: &str,
        plan_sha256: &str,
        denials: &[String],
    ) -> Result<bool> {
        let denials = serde_json::to_string(denials).map_err(|e| MetadbError::Decode {
            statement: "RECORD_POLICY_DENIALS".into(),
            message: format!("the denials do not encode: {e}"),
        })?;
        let rows = self
            .sql
            .query(
                q::RECORD_POLICY_DENIALS,
                &[
                    ("execution_id", Param::text(execution_id)),
                    ("plan_sha256", Param::text(plan_sha256)),
                    ("denials", Param::text(&denials)),
                ],
            )
            .await?;
        Ok(!rows.is_empty())
    }

    async fn saved_plan(&self, execution_id: &str) -> Result<Option<SavedPlan>> {
        let rows = self
            .sql
            .query(
                q::SAVED_PLAN,
                &[("execution_id", Param::text(execution_id))],
            )
            .await?;
        decode_first(q::SAVED_PLAN, &rows)
    }
}
