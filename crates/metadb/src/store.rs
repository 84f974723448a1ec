//! The metadb ports over any [`Sql`] connection: the transactions and guarded
//! statements both adapters share, so the Data API and PostgreSQL paths cannot
//! drift apart.

use serde::Deserialize;
use serde::de::DeserializeOwned;

use live_ci_core::account::Account;
use live_ci_core::deploy::{
    AbortedUnit, Claimed, CreatedRun, ExecutionRecord, ExecutionStatus, FinishOutcome,
    MergeLockRow, NewExecution, NewRollback, NewRun, Outcome, PendingUnit, RunEnd, RunFinish,
    RunId, RunProgress, RunRecord, RunStatus, Settled, StatusChange,
};
use live_ci_core::operate::StartFailure;
use live_ci_core::path::RepoPath;
use live_ci_core::port::{
    CachedCheckout, DELIVERY_HORIZON, DeliveryClaim, DeliveryLog, ExecutionStore, RunStore,
    STALE_CLAIM, SavedPlan, SweepStore,
};

use crate::error::{MetadbError, Result};
use crate::migrate::migrate;
use crate::sql::statements as q;
use crate::sql::{Param, Params, Sql, SqlTx};

/// Executions inserted per statement: keeps each Data API request well under its
/// size limit while a 10,000-unit run still takes only 20 statements.
const INSERT_CHUNK: usize = 500;

/// Executions read per page: about 300 KB of JSON for typical rows, well under
/// the Data API's 1 MiB response limit; a page refused anyway (long voter
/// lists, many new resources) is read again in halves.
const EXECUTIONS_PAGE: i64 = 200;

/// Attempts of a transaction that hit a deadlock or serialization failure.
pub(crate) const MAX_ATTEMPTS: u32 = 4;

/// The metadb over one connection kind.
#[derive(Debug, Clone)]
pub struct Store<S> {
    sql: S,
}

/// Runs `$body` (an expression using the transaction `$tx`, evaluating to a
/// future) in a transaction, retrying deadlocks and serialization failures.
macro_rules! in_tx {
    ($sql:expr, |$tx:ident| $body:expr) => {{
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut $tx = $sql.begin().await?;
            let result = $body.await;
            match result {
                Ok(value) => match $tx.commit().await {
                    Ok(()) => break Ok(value),
                    Err(e) if e.is_retryable() && attempt < MAX_ATTEMPTS => continue,
                    Err(e) => break Err(e),
                },
                Err(e) => {
                    let _ = $tx.rollback().await;
                    if e.is_retryable() && attempt < MAX_ATTEMPTS {
                        continue;
                    }
                    break Err(e);
                }
            }
        }
    }};
}
pub(crate) use in_tx;

impl<S: Sql> Store<S> {
    pub fn new(sql: S) -> Self {
        Store { sql }
    }

    /// The connection, for statements the port does not cover (tests, tools).
    pub fn sql(&self) -> &S {
        &self.sql
    }

    /// Applies missing migrations; returns the versions applied.
    pub async fn migrate(&self) -> Result<Vec<u32>> {
        migrate(&self.sql).await
    }

    /// One statement that is a whole transaction of its own (a call of one of
    /// migration 0010's functions), run again after a deadlock or
    /// serialization failure, which rolled all of it back.
    async fn query_retrying(&self, sql: &str, params: Params<'_>) -> Result<Vec<String>> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.sql.query(sql, params).await {
                Err(e) if e.is_retryable() && attempt < MAX_ATTEMPTS => continue,
                done => return done,
            }
        }
    }

    /// The one row of a statement that always returns one.
    async fn query_one(&self, sql: &str, params: Params<'_>) -> Result<String> {
        let rows = self.query_retrying(sql, params).await?;
        rows.into_iter().next().ok_or_else(|| no_row(sql))
    }
}

pub(crate) fn decode<T: DeserializeOwned>(statement: &str, row: &str) -> Result<T> {
    serde_json::from_str(row).map_err(|e| MetadbError::Decode {
        statement: statement.lines().next().unwrap_or_default().to_string(),
        message: format!("{e} in {row:?}"),
    })
}

pub(crate) fn decode_all<T: DeserializeOwned>(statement: &str, rows: &[String]) -> Result<Vec<T>> {
    rows.iter().map(|r| decode(statement, r)).collect()
}

pub(crate) fn decode_first<T: DeserializeOwned>(
    statement: &str,
    rows: &[String],
) -> Result<Option<T>> {
    rows.first().map(|r| decode(statement, r)).transpose()
}

pub(crate) fn parse_id(statement: &str, row: &str) -> Result<i64> {
    row.parse().map_err(|_| MetadbError::Decode {
        statement: statement.lines().next().unwrap_or_default().to_string(),
        message: format!("{row:?} is not an id"),
    })
}

pub(crate) fn json<T: serde::Serialize + ?Sized>(value: &T) -> Result<Param> {
    serde_json::to_string(value)
        .map(Param::Json)
        .map_err(|e| MetadbError::Inconsistent(format!("cannot encode parameter: {e}")))
}

pub(crate) fn int(n: u64, field: &str) -> Result<Param> {
    i64::try_from(n).map(Param::Int).map_err(|_| {
        MetadbError::Invalid(live_ci_core::CoreError::InvalidRun {
            field: field.to_string(),
            message: format!("{n} is too large"),
        })
    })
}

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

fn no_row(statement: &str) -> MetadbError {
    MetadbError::Decode {
        statement: statement.lines().next().unwrap_or_default().to_string(),
        message: "no row".into(),
    }
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
        crate::operator::unit_durations(&self.sql, paths).await
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
        in_tx!(self.sql, |tx| crate::operator::start_failure_tx(
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

impl<S: Sql> SweepStore for Store<S> {
    type Error = MetadbError;

    async fn claim_trunk_launch(&self, commit_id: &str, cooldown_secs: u32) -> Result<Option<u32>> {
        let rows = self
            .sql
            .query(
                q::CLAIM_TRUNK_LAUNCH,
                &[
                    ("commit_id", Param::text(commit_id)),
                    ("cooldown_secs", Param::Int(i64::from(cooldown_secs))),
                ],
            )
            .await?;
        rows.first()
            .map(|n| {
                n.parse().map_err(|_| MetadbError::Decode {
                    statement: q::CLAIM_TRUNK_LAUNCH
                        .lines()
                        .next()
                        .unwrap_or_default()
                        .into(),
                    message: format!("{n:?} is not a launch count"),
                })
            })
            .transpose()
    }

    async fn stale_claims(&self, older_than_secs: u32) -> Result<Vec<ExecutionRecord>> {
        let rows = self
            .sql
            .query(
                q::STALE_CLAIMS,
                &[("older_than_secs", Param::Int(i64::from(older_than_secs)))],
            )
            .await?;
        decode_all(q::STALE_CLAIMS, &rows)
    }

    async fn running_with_arn(&self, limit: u32) -> Result<Vec<ExecutionRecord>> {
        let rows = self
            .sql
            .query(
                q::RUNNING_WITH_ARN,
                &[("limit", Param::Int(i64::from(limit)))],
            )
            .await?;
        decode_all(q::RUNNING_WITH_ARN, &rows)
    }
}

impl<S: Sql> DeliveryLog for Store<S> {
    type Error = MetadbError;

    async fn claim_delivery(&self, delivery_id: &str) -> Result<DeliveryClaim> {
        let secs =
            |d: std::time::Duration| Param::Int(i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let rows = self
            .query_retrying(
                q::CLAIM_DELIVERY,
                &[
                    ("delivery_id", Param::text(delivery_id)),
                    ("horizon_secs", secs(DELIVERY_HORIZON)),
                    ("stale_secs", secs(STALE_CLAIM)),
                ],
            )
            .await?;
        Ok(if rows.is_empty() {
            DeliveryClaim::Duplicate
        } else {
            DeliveryClaim::Claimed
        })
    }

    async fn finish_delivery(&self, delivery_id: &str, handled: bool) -> Result<()> {
        let statement = if handled {
            q::DELIVERY_HANDLED
        } else {
            q::RELEASE_DELIVERY
        };
        self.sql
            .execute(statement, &[("delivery_id", Param::text(delivery_id))])
            .await?;
        Ok(())
    }
}
