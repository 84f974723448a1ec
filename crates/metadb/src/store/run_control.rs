//! The operator's controls ([`RunControl`]), bounded starts and duration
//! history over any [`Sql`] connection: one transaction per control, taken
//! under the merge lock row like run creation and hand-over.

use std::collections::BTreeSet;

use serde::Deserialize;

use live_ci_core::deploy::{ExecutionRecord, Outcome, RunId, RunRecord, RunStatus};
use live_ci_core::operate::{
    AbortMarked, LoggedAction, OperatorAction, Refusal, RetryCreated, RunSummary, StartFailure,
    Unlocked, retry_executions, retry_run, start_failure_reason,
};
use live_ci_core::path::RepoPath;
use live_ci_core::port::RunControl;

use crate::error::{MetadbError, Result};
use crate::sql::operator_statements as o;
use crate::sql::statements as q;
use crate::sql::{Param, Sql, SqlTx};
use crate::store::{
    Store, checkout_param, decode, decode_all, decode_first, finish_tx, in_tx,
    insert_run_executions_tx, int, json, parse_id,
};

#[derive(Deserialize)]
struct Counted {
    attempts: u32,
    released: bool,
}

pub(crate) async fn start_failure_tx<T: SqlTx>(
    tx: &mut T,
    execution_id: &str,
    error: &str,
    max_attempts: u32,
) -> Result<StartFailure> {
    let rows = tx
        .query(
            o::COUNT_START_FAILURE,
            &[
                ("execution_id", Param::text(execution_id)),
                ("error", Param::text(error)),
                ("max_attempts", Param::Int(i64::from(max_attempts.max(1)))),
            ],
        )
        .await?;
    let Some(counted) = decode_first::<Counted>(o::COUNT_START_FAILURE, &rows)? else {
        return Ok(StartFailure::Unchanged);
    };
    if counted.released {
        return Ok(StartFailure::Released {
            attempts: counted.attempts,
        });
    }
    let reason = start_failure_reason(counted.attempts, error);
    let aborted = match finish_tx(tx, execution_id, Outcome::Failed, Some(&reason)).await? {
        live_ci_core::deploy::FinishOutcome::Recorded { aborted } => aborted,
        live_ci_core::deploy::FinishOutcome::Unchanged { .. } => Vec::new(),
    };
    Ok(StartFailure::Failed {
        attempts: counted.attempts,
        reason,
        aborted,
    })
}

#[derive(Deserialize)]
struct Duration {
    cfg_path: RepoPath,
    seconds: f64,
}

pub(crate) async fn unit_durations<S: Sql>(
    sql: &S,
    paths: &[RepoPath],
) -> Result<Vec<(RepoPath, f64)>> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let rows = sql
        .query(o::UNIT_DURATIONS, &[("paths", json(paths)?)])
        .await?;
    Ok(decode_all::<Duration>(o::UNIT_DURATIONS, &rows)?
        .into_iter()
        .map(|d| (d.cfg_path, d.seconds))
        .collect())
}

#[derive(Deserialize)]
struct LockedRun {
    status: RunStatus,
}

async fn lock_run<T: SqlTx>(tx: &mut T, run_id: RunId) -> Result<Option<LockedRun>> {
    let rows = tx
        .query(o::LOCK_RUN, &[("run_id", Param::Int(run_id))])
        .await?;
    decode_first(o::LOCK_RUN, &rows)
}

async fn mark_aborted_tx<T: SqlTx>(
    tx: &mut T,
    run_id: RunId,
    reason: &str,
) -> Result<std::result::Result<AbortMarked, Refusal>> {
    tx.query(q::LOCK_MERGE_LOCK, &[]).await?;
    let Some(run) = lock_run(tx, run_id).await? else {
        return Ok(Err(Refusal::NoSuchRun(run_id)));
    };
    if !matches!(run.status, RunStatus::Queued | RunStatus::Running) {
        return Ok(Err(Refusal::NotAbortable {
            run: run_id,
            status: run.status.as_str().into(),
        }));
    }
    let params = [
        ("run_id", Param::Int(run_id)),
        ("reason", Param::text(reason)),
    ];
    let aborted = tx.query(o::ABORT_OPEN, &params).await?;
    if run.status == RunStatus::Queued {
        tx.query(o::FAIL_QUEUED_RUN, &[("run_id", Param::Int(run_id))])
            .await?;
    }
    let to_stop = tx.query(o::OPERATOR_ABORTED_ARNS, &params).await?;
    Ok(Ok(AbortMarked { aborted, to_stop }))
}

async fn retry_tx<T: SqlTx>(
    tx: &mut T,
    run_id: RunId,
) -> Result<std::result::Result<RetryCreated, Refusal>> {
    tx.query(q::LOCK_MERGE_LOCK, &[]).await?;
    let Some(locked) = lock_run(tx, run_id).await? else {
        return Ok(Err(Refusal::NoSuchRun(run_id)));
    };
    if !matches!(locked.status, RunStatus::Succeeded | RunStatus::Failed) {
        return Ok(Err(Refusal::NotFinished {
            run: run_id,
            status: locked.status.as_str().into(),
        }));
    }
    let id = || ("run_id", Param::Int(run_id));
    if let Some(later) = tx.query(o::LATER_RUN, &[id()]).await?.first() {
        return Ok(Err(Refusal::NotLast {
            run: run_id,
            later: parse_id(o::LATER_RUN, later)?,
        }));
    }
    let rows = tx.query(q::RUN_BY_ID, &[id()]).await?;
    let run: RunRecord = decode_first(q::RUN_BY_ID, &rows)?
        .ok_or_else(|| MetadbError::Inconsistent(format!("run {run_id} locked but not read")))?;
    let rows = tx.query(q::EXECUTIONS_OF_RUN, &[id()]).await?;
    let executions: Vec<ExecutionRecord> = decode_all(q::EXECUTIONS_OF_RUN, &rows)?;
    let taken: BTreeSet<String> = tx
        .query(
            o::IDS_AT_COMMIT,
            &[("commit_id", Param::text(&run.commit_id))],
        )
        .await?
        .into_iter()
        .collect();
    let retried = retry_executions(&run, &executions, &taken);
    if retried.is_empty() {
        return Ok(Err(Refusal::NothingToRetry(run_id)));
    }
    let new_run = retry_run(&run, retried);
    new_run.validate()?;
    let rows = tx
        .query(
            o::INSERT_RETRY_RUN,
            &[
                ("pr_id", int(new_run.pr_id, "pr_id")?),
                ("commit_id", Param::text(&new_run.commit_id)),
                ("base_ref", Param::text(&new_run.base_ref)),
                ("head_ref", Param::text(&new_run.head_ref)),
                ("base_sha", Param::text(&new_run.base_sha)),
                ("head_sha", Param::text(&new_run.head_sha)),
                ("max_parallel", Param::Int(i64::from(new_run.max_parallel))),
                ("fail_fast", Param::Bool(new_run.fail_fast)),
                ("retry_of", Param::Int(run_id)),
                ("trunk_seq", int(new_run.trunk_seq, "trunk_seq")?),
                checkout_param("checkout_key", &new_run, |c| &c.key),
                checkout_param("checkout_sha256", &new_run, |c| &c.sha256),
            ],
        )
        .await?;
    let new_id = match rows.first() {
        Some(row) => parse_id(o::INSERT_RETRY_RUN, row)?,
        None => {
            return Err(MetadbError::Inconsistent(format!(
                "the retry of run {run_id} was not inserted"
            )));
        }
    };
    let started = insert_run_executions_tx(tx, new_id, &new_run).await?;
    tx.execute(
        q::COPY_ACCOUNT_CAPS,
        &[("run_id", Param::Int(new_id)), ("from_run_id", id().1)],
    )
    .await?;
    Ok(Ok(RetryCreated {
        run_id: new_id,
        started,
        execution_ids: new_run
            .executions
            .iter()
            .map(|e| e.execution_id.clone())
            .collect(),
    }))
}

#[derive(Deserialize)]
struct RunningRun {
    run_id: RunId,
    pr_id: u64,
}

async fn unlock_tx<T: SqlTx>(
    tx: &mut T,
    force: bool,
) -> Result<std::result::Result<Unlocked, Refusal>> {
    let held = tx.query(q::LOCK_MERGE_LOCK, &[]).await?;
    let released_run = match held.first().map(String::as_str) {
        None | Some("") => None,
        Some(id) => Some(parse_id(q::LOCK_MERGE_LOCK, id)?),
    };
    let rows = tx.query(o::RUNNING_RUN, &[]).await?;
    let running: Option<RunningRun> = decode_first(o::RUNNING_RUN, &rows)?;
    if let Some(r) = &running
        && !force
    {
        return Ok(Err(Refusal::RunRunning {
            run: r.run_id,
            pr: r.pr_id,
        }));
    }
    tx.execute(o::CLEAR_MERGE_LOCK, &[]).await?;
    Ok(Ok(Unlocked {
        released_run,
        running_run: running.map(|r| r.run_id),
    }))
}

impl<S: Sql> RunControl for Store<S> {
    type Error = MetadbError;

    async fn runs(&self, limit: u32) -> Result<Vec<RunSummary>> {
        let rows = self
            .sql()
            .query(o::RUNS, &[("limit", Param::Int(i64::from(limit)))])
            .await?;
        decode_all(o::RUNS, &rows)
    }

    async fn mark_aborted(
        &self,
        run_id: RunId,
        reason: &str,
    ) -> Result<std::result::Result<AbortMarked, Refusal>> {
        in_tx!(self.sql(), |tx| mark_aborted_tx(&mut tx, run_id, reason))
    }

    async fn retry_run(&self, run_id: RunId) -> Result<std::result::Result<RetryCreated, Refusal>> {
        in_tx!(self.sql(), |tx| retry_tx(&mut tx, run_id))
    }

    async fn unlock(&self, force: bool) -> Result<std::result::Result<Unlocked, Refusal>> {
        in_tx!(self.sql(), |tx| unlock_tx(&mut tx, force))
    }

    async fn log_action(&self, action: &OperatorAction) -> Result<()> {
        self.sql()
            .execute(
                o::LOG_ACTION,
                &[
                    ("action", Param::text(&action.action)),
                    ("run_id", Param::opt_int(action.run_id)),
                    ("actor", Param::text(&action.actor)),
                    ("detail", Param::text(&action.detail)),
                ],
            )
            .await?;
        Ok(())
    }

    async fn actions(&self, limit: u32) -> Result<Vec<LoggedAction>> {
        let rows = self
            .sql()
            .query(o::ACTIONS, &[("limit", Param::Int(i64::from(limit)))])
            .await?;
        rows.iter().map(|r| decode(o::ACTIONS, r)).collect()
    }
}
