//! [`RunStore`] over any [`Sql`] connection: run creation (under the merge
//! lock row), the trunk order, supersession, rollbacks and a run's end.

use live_ci_core::account::Account;
use live_ci_core::deploy::{
    CreatedRun, MergeLockRow, NewExecution, NewRollback, NewRun, PendingUnit, RunEnd, RunFinish,
    RunId, RunProgress, RunRecord, RunStatus,
};
use live_ci_core::path::RepoPath;
use live_ci_core::port::{CachedCheckout, RunStore};
use serde::Deserialize;

use super::{Store, decode, decode_all, decode_first, in_tx, int, json, parse_id};
use crate::error::{MetadbError, Result};
use crate::sql::statements as q;
use crate::sql::{Param, Sql, SqlTx};

/// Executions inserted per statement: keeps each Data API request well under its
/// size limit while a 10,000-unit run still takes only 20 statements.
const INSERT_CHUNK: usize = 500;

/// One execution as `INSERT_EXECUTIONS` reads it.
#[derive(serde::Serialize)]
struct ExecutionRow<'a> {
    seq: usize,
    #[serde(flatten)]
    execution: &'a NewExecution,
}

async fn create_run_tx<T: SqlTx>(tx: &mut T, run: &NewRun) -> Result<CreatedRun> {
    tx.query(q::LOCK_MERGE_LOCK, &[]).await?;
    let inserted = tx
        .query(
            q::INSERT_RUN,
            &[
                ("pr_id", int(run.pr_id, "pr_id")?),
                ("commit_id", Param::text(&run.commit_id)),
                ("base_ref", Param::text(&run.base_ref)),
                ("head_ref", Param::text(&run.head_ref)),
                ("base_sha", Param::text(&run.base_sha)),
                ("head_sha", Param::text(&run.head_sha)),
                ("max_parallel", Param::Int(i64::from(run.max_parallel))),
                ("fail_fast", Param::Bool(run.fail_fast)),
                ("trunk_seq", int(run.trunk_seq, "trunk_seq")?),
                checkout_param("checkout_key", run, |c| &c.key),
                checkout_param("checkout_sha256", run, |c| &c.sha256),
            ],
        )
        .await?;
    let Some(row) = inserted.first() else {
        // A repeated merge event: the run exists, leave it as it is.
        let rows = tx
            .query(
                q::RUN_BY_COMMIT,
                &[("commit_id", Param::text(&run.commit_id))],
            )
            .await?;
        let existing: RunRecord = decode_first(q::RUN_BY_COMMIT, &rows)?.ok_or_else(|| {
            MetadbError::Inconsistent(format!(
                "run for commit {:?} neither inserted nor found",
                run.commit_id
            ))
        })?;
        return Ok(CreatedRun {
            run_id: existing.run_id,
            created: false,
            started: existing.status == RunStatus::Running,
        });
    };
    let run_id = parse_id(q::INSERT_RUN, row)?;
    let started = insert_run_executions_tx(tx, run_id, run).await?;
    Ok(CreatedRun {
        run_id,
        created: true,
        started,
    })
}

/// One field of a run's packed checkout as a parameter (NULL without one).
pub(crate) fn checkout_param<'a>(
    name: &'a str,
    run: &NewRun,
    field: impl Fn(&CachedCheckout) -> &String,
) -> (&'a str, Param) {
    (
        name,
        Param::opt_text(run.checkout.as_ref().map(|c| field(c).as_str())),
    )
}

/// Writes a new run's executions, edges and account counters, then starts the
/// next run if none is running; true when that is this run. Shared by merges
/// and operator retries.
pub(crate) async fn insert_run_executions_tx<T: SqlTx>(
    tx: &mut T,
    run_id: RunId,
    run: &NewRun,
) -> Result<bool> {
    let id = || ("run_id", Param::Int(run_id));
    for (c, chunk) in run.executions.chunks(INSERT_CHUNK).enumerate() {
        let rows: Vec<ExecutionRow<'_>> = chunk
            .iter()
            .enumerate()
            .map(|(i, execution)| ExecutionRow {
                seq: c * INSERT_CHUNK + i,
                execution,
            })
            .collect();
        tx.execute(q::INSERT_EXECUTIONS, &[id(), ("executions", json(&rows)?)])
            .await?;
    }
    let edges = tx.execute(q::INSERT_DEPS, &[id()]).await?;
    let expected: usize = run.executions.iter().map(|e| e.wait_for.len()).sum();
    if edges != expected as u64 {
        return Err(MetadbError::Inconsistent(format!(
            "run for commit {:?}: stored {edges} dependency edges of {expected}; nothing was written",
            run.commit_id
        )));
    }
    tx.execute(q::INSERT_RUN_ACCOUNTS, &[id()]).await?;
    let caps = account_caps(run);
    if !caps.is_empty() {
        tx.execute(q::SET_ACCOUNT_CAPS, &[id(), ("caps", json(&caps)?)])
            .await?;
    }
    tx.execute(q::INSERT_ACCOUNT_WAITS, &[id()]).await?;
    tx.execute(q::SET_PENDING_ACCOUNTS, &[id()]).await?;
    let started = start_next_run(tx).await?;
    Ok(started == Some(run_id))
}

/// Each capped account's cap: the smallest its executions carry (one
/// account's executions carry the same one, from its configuration).
fn account_caps(run: &NewRun) -> std::collections::BTreeMap<&str, u32> {
    let mut caps = std::collections::BTreeMap::new();
    for e in &run.executions {
        if let Some(cap) = e.account_max_parallel {
            caps.entry(e.account_name.as_str())
                .and_modify(|c: &mut u32| *c = (*c).min(cap))
                .or_insert(cap);
        }
    }
    caps
}

/// Hands a free merge lock to the queued run newest on the trunk, superseding
/// the other queued runs first (their executions are aborted, never started).
/// Runs under `LOCK_MERGE_LOCK`.
async fn start_next_run<T: SqlTx>(tx: &mut T) -> Result<Option<RunId>> {
    let next = tx.query(q::START_NEXT_RUN, &[]).await?;
    next.first()
        .filter(|id| !id.is_empty())
        .map(|id| parse_id(q::START_NEXT_RUN, id))
        .transpose()
}

async fn record_superseded_tx<T: SqlTx>(
    tx: &mut T,
    run: &NewRun,
    by: RunId,
) -> Result<Option<RunId>> {
    let rows = tx
        .query(
            q::INSERT_SUPERSEDED_RUN,
            &[
                ("pr_id", int(run.pr_id, "pr_id")?),
                ("commit_id", Param::text(&run.commit_id)),
                ("base_ref", Param::text(&run.base_ref)),
                ("head_ref", Param::text(&run.head_ref)),
                ("base_sha", Param::text(&run.base_sha)),
                ("head_sha", Param::text(&run.head_sha)),
                (
                    "max_parallel",
                    Param::Int(i64::from(run.max_parallel.max(1))),
                ),
                ("fail_fast", Param::Bool(run.fail_fast)),
                ("trunk_seq", int(run.trunk_seq, "trunk_seq")?),
                ("by", Param::Int(by)),
            ],
        )
        .await?;
    rows.first()
        .map(|id| parse_id(q::INSERT_SUPERSEDED_RUN, id))
        .transpose()
}

/// One rollback as `INSERT_EXECUTIONS` reads it.
#[derive(serde::Serialize)]
struct RollbackRow<'a> {
    seq: i64,
    #[serde(flatten)]
    execution: &'a NewExecution,
    new_resources: &'a [String],
}

#[derive(Deserialize)]
struct RollbackGuard {
    open: i64,
    rollbacks: i64,
    next_seq: i64,
}

async fn add_rollbacks_tx<T: SqlTx>(
    tx: &mut T,
    run_id: RunId,
    rollbacks: &[NewRollback],
) -> Result<Vec<String>> {
    let id = || ("run_id", Param::Int(run_id));
    if tx
        .query(q::LOCK_RUN_FOR_ROLLBACK, &[id()])
        .await?
        .is_empty()
    {
        return Ok(Vec::new());
    }
    let rows = tx.query(q::ROLLBACK_GUARD, &[id()]).await?;
    let guard: RollbackGuard = decode_first(q::ROLLBACK_GUARD, &rows)?.ok_or_else(|| {
        MetadbError::Inconsistent(format!("run {run_id}: no counts of its executions"))
    })?;
    // Rollbacks follow a run that has otherwise ended, and are added once.
    if guard.open > 0 || guard.rollbacks > 0 {
        return Ok(Vec::new());
    }
    let rows: Vec<RollbackRow<'_>> = rollbacks
        .iter()
        .zip(guard.next_seq..)
        .map(|(r, seq)| RollbackRow {
            seq,
            execution: &r.execution,
            new_resources: &r.resources,
        })
        .collect();
    tx.execute(q::INSERT_EXECUTIONS, &[id(), ("executions", json(&rows)?)])
        .await?;
    let edges = tx.execute(q::INSERT_ROLLBACK_DEPS, &[id()]).await?;
    let expected: usize = rollbacks.iter().map(|r| r.execution.wait_for.len()).sum();
    if edges != expected as u64 {
        return Err(MetadbError::Inconsistent(format!(
            "rollbacks of run {run_id}: stored {edges} dependency edges of {expected}; nothing was written"
        )));
    }
    Ok(rollbacks
        .iter()
        .map(|r| r.execution.execution_id.clone())
        .collect())
}

impl<S: Sql> RunStore for Store<S> {
    type Error = MetadbError;

    async fn upsert_accounts(&self, accounts: &[Account]) -> Result<()> {
        self.sql
            .execute(q::UPSERT_ACCOUNTS, &[("accounts", json(accounts)?)])
            .await?;
        Ok(())
    }

    async fn create_run(&self, run: &NewRun) -> Result<CreatedRun> {
        run.validate()?;
        in_tx!(self.sql, |tx| create_run_tx(&mut tx, run))
    }

    async fn trunk_runs(&self, limit: u32) -> Result<Vec<RunRecord>> {
        let rows = self
            .sql
            .query(q::TRUNK_RUNS, &[("limit", Param::Int(i64::from(limit)))])
            .await?;
        decode_all(q::TRUNK_RUNS, &rows)
    }

    async fn record_superseded(&self, run: &NewRun, by: RunId) -> Result<Option<RunId>> {
        in_tx!(self.sql, |tx| record_superseded_tx(&mut tx, run, by))
    }

    async fn pending_units(&self) -> Result<Vec<PendingUnit>> {
        let rows = self.sql.query(q::PENDING_UNITS, &[]).await?;
        decode_all(q::PENDING_UNITS, &rows)
    }

    async fn run(&self, run_id: RunId) -> Result<Option<RunRecord>> {
        let rows = self
            .sql
            .query(q::RUN_BY_ID, &[("run_id", Param::Int(run_id))])
            .await?;
        decode_first(q::RUN_BY_ID, &rows)
    }

    async fn superseded_runs(&self, by: RunId) -> Result<Vec<RunRecord>> {
        let rows = self
            .sql
            .query(q::SUPERSEDED_RUNS, &[("run_id", Param::Int(by))])
            .await?;
        decode_all(q::SUPERSEDED_RUNS, &rows)
    }

    async fn run_by_commit(&self, commit_id: &str) -> Result<Option<RunRecord>> {
        let rows = self
            .sql
            .query(q::RUN_BY_COMMIT, &[("commit_id", Param::text(commit_id))])
            .await?;
        decode_first(q::RUN_BY_COMMIT, &rows)
    }

    async fn unit_durations(&self, paths: &[RepoPath]) -> Result<Vec<(RepoPath, f64)>> {
        super::run_control::unit_durations(&self.sql, paths).await
    }

    async fn add_rollbacks(&self, run_id: RunId, rollbacks: &[NewRollback]) -> Result<Vec<String>> {
        if rollbacks.is_empty() {
            return Ok(Vec::new());
        }
        let executions: Vec<NewExecution> = rollbacks.iter().map(|r| r.execution.clone()).collect();
        live_ci_core::deploy::validate_executions(&executions)?;
        in_tx!(self.sql, |tx| add_rollbacks_tx(&mut tx, run_id, rollbacks))
    }

    async fn run_progress(&self, run_id: RunId) -> Result<RunProgress> {
        let rows = self
            .sql
            .query(q::RUN_PROGRESS, &[("run_id", Param::Int(run_id))])
            .await?;
        Ok(decode_first(q::RUN_PROGRESS, &rows)?.unwrap_or_default())
    }

    async fn finish_run(&self, run_id: RunId) -> Result<RunFinish> {
        Ok(self.end_run(run_id).await?.finish)
    }

    async fn end_run(&self, run_id: RunId) -> Result<RunEnd> {
        let row = self
            .query_one(q::FINISH_RUN, &[("run_id", Param::Int(run_id))])
            .await?;
        decode(q::FINISH_RUN, &row)
    }

    async fn merge_lock(&self) -> Result<MergeLockRow> {
        let rows = self.sql.query(q::MERGE_LOCK, &[]).await?;
        let row = rows.first().filter(|row| !row.is_empty());
        row.map(|row| decode(q::MERGE_LOCK, row))
            .transpose()?
            .ok_or_else(|| {
                MetadbError::Inconsistent("the merge_lock row is missing (run migrations)".into())
            })
    }

    async fn busy_units(&self) -> Result<Vec<String>> {
        let rows = self.sql.query(q::BUSY_UNITS, &[]).await?;
        decode_all(q::BUSY_UNITS, &rows)
    }

    async fn record_no_op_merge(&self, commit_id: &str) -> Result<()> {
        self.sql
            .execute(
                q::RECORD_NO_OP_MERGE,
                &[("commit_id", Param::text(commit_id))],
            )
            .await?;
        Ok(())
    }
}
