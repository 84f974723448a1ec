//! The operator's controls over deployment runs: list runs, abort one, retry
//! the failed units of the last one, release a stuck merge lock. The metadb
//! side is the [`RunControl`] port; the orchestration here (stop the Step
//! Functions executions, finish the run, mirror the lock) is generic over the
//! ports, so the CLI only wires clients.

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use crate::deploy::{
    ExecutionRecord, ExecutionStatus, NewExecution, NewRun, RunId, RunProgress, RunRecord,
    UnixMillis, execution_id,
};
use crate::merge_lock::{Advisory, LockError, MergeLock, Publisher};
use crate::port::{ParamStore, PortError, PortResultExt, RunControl, RunStore, WorkflowEngine};
use crate::status::NoGitHost;

/// The reason stored with executions an operator aborted.
pub const ABORTED_BY_OPERATOR: &str = "aborted by the operator";

/// What recording a failed start did ([`crate::port::ExecutionStore::record_start_failure`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum StartFailure {
    /// Put back to waiting; the sweep or the next event starts it again.
    Released {
        /// The failed start attempts so far.
        attempts: u32,
    },
    /// The last allowed attempt failed: the execution failed with the error as
    /// its reason, and `aborted` are the dependents that went with it.
    Failed {
        /// The failed start attempts, the last allowed one included.
        attempts: u32,
        /// The start's error, recorded as the execution's status reason.
        reason: String,
        /// The dependents' execution ids aborted with it.
        aborted: Vec<String>,
    },
    /// Not a claim without an ARN (started meanwhile, or aborted): nothing changed.
    Unchanged,
}

/// The reason a unit gets when its start failed `attempts` times.
pub fn start_failure_reason(attempts: u32, error: &str) -> String {
    format!("start failed {attempts} times: {error}")
}

/// One run as `live-ci runs` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// The run as stored.
    #[serde(flatten)]
    pub run: RunRecord,
    /// The run whose failed units this one retries.
    pub retry_of: Option<RunId>,
    /// Its executions counted by status.
    pub progress: RunProgress,
    /// Whether this run holds the merge lock row.
    pub holds_lock: bool,
}

/// What the metadb side of an abort did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AbortMarked {
    /// Executions this call moved from waiting or running to aborted.
    pub aborted: Vec<String>,
    /// Step Functions executions of the run aborted by an operator (now or by
    /// an earlier abort): each is stopped, which is harmless when it has ended.
    pub to_stop: Vec<String>,
}

/// What `retry_run` created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryCreated {
    /// The new run.
    pub run_id: RunId,
    /// True when it took the merge lock at once; otherwise it is queued.
    pub started: bool,
    /// The new executions (new ids: Step Functions names are single-use).
    pub execution_ids: Vec<String>,
}

/// What `unlock` found and did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unlocked {
    /// The run the metadb row named before (None: it was already free).
    pub released_run: Option<RunId>,
    /// A run still running when forced: it deploys on without the lock.
    pub running_run: Option<RunId>,
}

/// One entry of the operator log: every control is recorded with who ran it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperatorAction {
    /// The control: `abort`, `retry`, `unlock` or `unlock --force`.
    pub action: String,
    /// The run it acted on; `None` for an unlock.
    pub run_id: Option<RunId>,
    /// Who ran it (`--actor`, `LIVE_CI_OPERATOR`, or `$USER`).
    pub actor: String,
    /// What it did, in words.
    pub detail: String,
}

/// A logged action as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggedAction {
    /// What was done, to which run, by whom.
    #[serde(flatten)]
    pub action: OperatorAction,
    /// When it was logged.
    pub at: UnixMillis,
}

/// Why an operator control refused to act.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// No run has the id given.
    #[error("the metadb has no run {0}")]
    NoSuchRun(RunId),
    /// An abort of a run that has already finished.
    #[error("run {run} is {status}: only a queued or running run can be aborted")]
    NotAbortable {
        /// The run the abort named.
        run: RunId,
        /// Its status as the metadb spells it (succeeded, failed, superseded).
        status: String,
    },
    /// A retry of a run that has not finished.
    #[error("run {run} is {status}: only a finished run can be retried")]
    NotFinished {
        /// The run the retry named.
        run: RunId,
        /// Its status as the metadb spells it (queued or running).
        status: String,
    },
    /// A retry of a run that a later run follows.
    #[error(
        "run {run} is not the last run: run {later} came after it and deploys a newer trunk (retry that one)"
    )]
    NotLast {
        /// The run the retry named.
        run: RunId,
        /// A run created after it.
        later: RunId,
    },
    /// A retry of a run with no failed or aborted unit.
    #[error("run {0} has no failed or aborted units to retry")]
    NothingToRetry(RunId),
    /// An unforced unlock while a run holds the lock and runs.
    #[error("run {run} (PR #{pr}) is running: abort it first, or pass --force to unlock anyway")]
    RunRunning {
        /// The run holding the lock.
        run: RunId,
        /// The pull request that run deploys.
        pr: u64,
    },
}

/// The executions a retry of `run` deploys: every failed or aborted unit (not
/// rollbacks), under new ids not in `taken`, waiting only for each other.
pub fn retry_executions(
    run: &RunRecord,
    executions: &[ExecutionRecord],
    taken: &BTreeSet<String>,
) -> Vec<NewExecution> {
    let retried: Vec<&ExecutionRecord> = executions
        .iter()
        .filter(|e| {
            !e.is_rollback && matches!(e.status, ExecutionStatus::Failed | ExecutionStatus::Aborted)
        })
        .collect();
    let mut taken = taken.clone();
    let mut new_id: HashMap<&str, String> = HashMap::new();
    for e in &retried {
        // The nonce continues from the old id's, so ids stay recognisable and
        // each retry of a unit takes the next free one.
        let mut nonce = e
            .execution_id
            .rsplit('-')
            .next()
            .and_then(|n| n.parse::<u16>().ok())
            .unwrap_or(0);
        let id = loop {
            nonce = (nonce + 1) % 1000;
            let id = execution_id(
                run.pr_id,
                &run.commit_id,
                &e.account_name,
                &e.cfg_path,
                nonce,
            );
            if taken.insert(id.clone()) {
                break id;
            }
        };
        new_id.insert(&e.execution_id, id);
    }
    retried
        .iter()
        .map(|e| NewExecution {
            execution_id: new_id[e.execution_id.as_str()].clone(),
            is_rollback: false,
            cfg_path: e.cfg_path.clone(),
            cfg_deps: e.cfg_deps.clone(),
            action: e.action,
            plan_command: e.plan_command.clone(),
            apply_command: e.apply_command.clone(),
            new_providers: e.new_providers.clone(),
            account_name: e.account_name.clone(),
            account_path: e.account_path.clone(),
            account_deps: e.account_deps.clone(),
            voters: e.voters.clone(),
            min_approval_count: e.min_approval_count,
            min_rejection_count: e.min_rejection_count,
            plan_role_arn: e.plan_role_arn.clone(),
            apply_role_arn: e.apply_role_arn.clone(),
            priority: e.priority,
            wait_for: e
                .wait_for
                .iter()
                .filter_map(|w| new_id.get(w.as_str()).cloned())
                .collect(),
            wait_accounts: e.wait_accounts.clone(),
            // The store copies the retried run's account caps.
            account_max_parallel: None,
        })
        .collect()
}

/// The run a retry creates: `run`'s commit and settings with `executions`.
pub fn retry_run(run: &RunRecord, executions: Vec<NewExecution>) -> NewRun {
    NewRun {
        pr_id: run.pr_id,
        commit_id: run.commit_id.clone(),
        base_ref: run.base_ref.clone(),
        head_ref: run.head_ref.clone(),
        base_sha: run.base_sha.clone(),
        head_sha: run.head_sha.clone(),
        max_parallel: run.max_parallel,
        fail_fast: run.fail_fast,
        // A retry keeps its run's place on the trunk, and its commit's
        // packed checkout.
        trunk_seq: run.trunk_seq,
        checkout: run.checkout.clone(),
        executions,
    }
}

/// Why an orchestrated control failed.
#[derive(Debug, thiserror::Error)]
pub enum OperateError {
    /// The control refused to act; nothing changed.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// A metadb call failed (the port's error says which).
    #[error(transparent)]
    Port(#[from] PortError),
    /// Mirroring the merge lock into the parameter failed.
    #[error("writing the merge lock {param:?}: {source}")]
    Params {
        /// The parameter's name.
        param: String,
        /// The parameter store's error.
        #[source]
        source: PortError,
    },
    /// The run is aborted in the metadb, but these executions may still run.
    #[error("could not stop {}: {}", .0.iter().map(|(a, _)| a.as_str()).collect::<Vec<_>>().join(", "), .0.iter().map(|(_, e)| e.as_str()).collect::<Vec<_>>().join("; "))]
    NotStopped(Vec<(String, String)>),
}

/// What an abort did, for the operator's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbortReport {
    /// The run aborted.
    pub run_id: RunId,
    /// The executions this abort moved to aborted.
    pub aborted: Vec<String>,
    /// The Step Functions executions stopped.
    pub stopped: Vec<String>,
    /// The queued run that took the merge lock (the sweep starts its units).
    pub next_run: Option<RunId>,
    /// The merge lock as mirrored into the parameter store afterwards.
    pub merge_lock: String,
}

/// The operator's publisher of the merge lock: the parameter only, no
/// status on open pull requests. Intended: the controls run from the CLI,
/// which holds AWS and metadb credentials but no GitHub client, and the
/// lock's protection is the parameter (the receiver answers every
/// pull-request event from it, confirmed against the row). Open pull
/// requests keep the status they show until their next event
/// ([`Advisory::NotPosted`]); `a_control_posts_no_status_and_the_sweep_leaves_them`
/// in trigger-sf's tests holds this.
pub fn lock_publisher<'a, M, P>(
    metadb: &'a M,
    params: &'a P,
    param: &'a str,
) -> Publisher<'a, M, P, NoGitHost> {
    Publisher {
        metadb,
        params,
        param,
        advisory: Advisory::NotPosted,
    }
}

/// Writes the metadb's merge lock (the truth) into the parameter store.
pub async fn mirror_lock<M: RunStore, P: ParamStore>(
    metadb: &M,
    params: &P,
    param: &str,
) -> Result<MergeLock, OperateError> {
    Ok(lock_publisher(metadb, params, param)
        .publish_row()
        .await?
        .lock)
}

/// A lock the operator could not publish: the row unread is a metadb
/// failure, the parameter unwritten names the parameter.
impl From<LockError> for OperateError {
    fn from(e: LockError) -> Self {
        match e {
            LockError::Write { param, source } => OperateError::Params { param, source },
            LockError::Read(e) => OperateError::Port(e),
        }
    }
}

/// Aborts a run: its units are marked aborted first (so no event or sweep
/// starts or records them any more), then their Step Functions executions are
/// stopped, the run is finished (no rollbacks: the operator stopped it), the
/// lock passes to the next queued run and the parameter store mirrors it.
/// Logged. A stop that fails is reported after everything else was done.
pub async fn abort<M, W, P>(
    metadb: &M,
    engine: &W,
    params: &P,
    lock_param: &str,
    run_id: RunId,
    actor: &str,
) -> Result<AbortReport, OperateError>
where
    M: RunStore + RunControl,
    W: WorkflowEngine,
    P: ParamStore,
{
    let marked = RunControl::mark_aborted(metadb, run_id, ABORTED_BY_OPERATOR)
        .await
        .port("metadb")??;
    let mut stopped = Vec::new();
    let mut failed = Vec::new();
    for arn in &marked.to_stop {
        match engine
            .stop_execution(arn, "LiveCiAborted", ABORTED_BY_OPERATOR)
            .await
        {
            Ok(()) => stopped.push(arn.clone()),
            Err(e) => failed.push((arn.clone(), e.to_string())),
        }
    }
    let finish = metadb.finish_run(run_id).await.port("metadb")?;
    let lock = mirror_lock(metadb, params, lock_param).await?;
    RunControl::log_action(
        metadb,
        &OperatorAction {
            action: "abort".into(),
            run_id: Some(run_id),
            actor: actor.to_string(),
            detail: format!(
                "aborted {} execution(s), stopped {}, could not stop {}; merge lock {lock}",
                marked.aborted.len(),
                stopped.len(),
                failed.len()
            ),
        },
    )
    .await
    .port("metadb")?;
    if !failed.is_empty() {
        return Err(OperateError::NotStopped(failed));
    }
    Ok(AbortReport {
        run_id,
        aborted: marked.aborted,
        stopped,
        next_run: finish.next_run,
        merge_lock: lock.to_string(),
    })
}

/// What a retry did, for the operator's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryReport {
    /// The run whose units were retried.
    pub retried_run: RunId,
    /// The run the retry created.
    #[serde(flatten)]
    pub created: RetryCreated,
    /// The merge lock as mirrored into the parameter store afterwards.
    pub merge_lock: String,
}

/// Queues the failed and aborted units of the last run again at its commit,
/// mirrors the lock when the new run took it, and logs it.
pub async fn retry<M, P>(
    metadb: &M,
    params: &P,
    lock_param: &str,
    run_id: RunId,
    actor: &str,
) -> Result<RetryReport, OperateError>
where
    M: RunStore + RunControl,
    P: ParamStore,
{
    let created = RunControl::retry_run(metadb, run_id)
        .await
        .port("metadb")??;
    let lock = mirror_lock(metadb, params, lock_param).await?;
    RunControl::log_action(
        metadb,
        &OperatorAction {
            action: "retry".into(),
            run_id: Some(run_id),
            actor: actor.to_string(),
            detail: format!(
                "run {} re-queues {} unit(s){}",
                created.run_id,
                created.execution_ids.len(),
                if created.started { ", started" } else { "" }
            ),
        },
    )
    .await
    .port("metadb")?;
    Ok(RetryReport {
        retried_run: run_id,
        created,
        merge_lock: lock.to_string(),
    })
}

/// Releases the merge lock (row and parameter) and logs who did it; refused
/// while a run is running unless forced.
pub async fn unlock<M, P>(
    metadb: &M,
    params: &P,
    lock_param: &str,
    force: bool,
    actor: &str,
) -> Result<Unlocked, OperateError>
where
    M: RunStore + RunControl,
    P: ParamStore,
{
    let unlocked = RunControl::unlock(metadb, force).await.port("metadb")??;
    lock_publisher(metadb, params, lock_param)
        .publish(MergeLock::Free)
        .await?;
    RunControl::log_action(
        metadb,
        &OperatorAction {
            action: if force { "unlock --force" } else { "unlock" }.into(),
            run_id: unlocked.released_run.or(unlocked.running_run),
            actor: actor.to_string(),
            detail: match (unlocked.released_run, unlocked.running_run) {
                (_, Some(r)) => format!("forced while run {r} is running"),
                (Some(r), None) => format!("released the lock row of run {r}"),
                (None, None) => "the lock row was free; the parameter is set free".into(),
            },
        },
    )
    .await
    .port("metadb")?;
    Ok(unlocked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deploy::{Action, RunStatus};
    use crate::path::RepoPath;

    fn record(id: &str, status: ExecutionStatus, wait_for: &[&str]) -> ExecutionRecord {
        ExecutionRecord {
            run_id: 3,
            execution_id: id.into(),
            is_rollback: false,
            pr_id: 7,
            commit_id: "c0ffee00".into(),
            base_ref: "main".into(),
            head_ref: "feature".into(),
            // The unit's name is the id's segment before the nonce.
            cfg_path: RepoPath::new(&format!("dev/{}", id.rsplit('-').nth(1).unwrap())).unwrap(),
            cfg_deps: vec![],
            action: Action::Apply,
            status,
            status_reason: None,
            plan_command: "plan".into(),
            apply_command: "apply".into(),
            new_providers: vec![],
            new_resources: vec!["x".into()],
            account_name: "dev".into(),
            account_path: "dev".into(),
            account_deps: vec![],
            voters: vec!["a@example.com".into()],
            github_voters: Vec::new(),
            approval_voters: vec!["a@example.com".into()],
            min_approval_count: 1,
            rejection_voters: vec![],
            min_rejection_count: 1,
            plan_role_arn: "arn:plan".into(),
            apply_role_arn: "arn:apply".into(),
            priority: 2.0,
            wait_for: wait_for.iter().map(|s| s.to_string()).collect(),
            wait_accounts: vec!["shared".into()],
            sfn_execution_arn: Some("arn:x".into()),
            decision: None,
            checkout: None,
            created_at: 0,
            claimed_at: None,
            finished_at: None,
            updated_at: 0,
        }
    }

    fn run() -> RunRecord {
        RunRecord {
            run_id: 3,
            pr_id: 7,
            commit_id: "c0ffee00".into(),
            base_ref: "main".into(),
            head_ref: "feature".into(),
            base_sha: "1".into(),
            head_sha: "2".into(),
            status: RunStatus::Failed,
            max_parallel: 4,
            fail_fast: false,
            trunk_seq: 5,
            superseded_by: None,
            checkout: Some(crate::port::CachedCheckout::of("c0ffee00", b"archive")),
            created_at: 0,
            finished_at: None,
            started_at: None,
        }
    }

    #[test]
    fn a_retry_takes_failed_and_aborted_units_with_new_ids_and_edges_among_them() {
        let a = execution_id(7, "c0ffee00", "dev", &RepoPath::new("dev/a").unwrap(), 5);
        let b = execution_id(7, "c0ffee00", "dev", &RepoPath::new("dev/b").unwrap(), 6);
        let c = execution_id(7, "c0ffee00", "dev", &RepoPath::new("dev/c").unwrap(), 7);
        let ok = execution_id(7, "c0ffee00", "dev", &RepoPath::new("dev/o").unwrap(), 8);
        let mut roll = record("r-rollback", ExecutionStatus::Failed, &[]);
        roll.is_rollback = true;
        let records = vec![
            record(&ok, ExecutionStatus::Succeeded, &[]),
            record(&a, ExecutionStatus::Failed, &[&ok]),
            record(&b, ExecutionStatus::Aborted, &[&a, &ok]),
            record(&c, ExecutionStatus::Aborted, &[]),
            roll,
        ];
        // The next nonce of b's is taken by an earlier retry.
        let taken_b = execution_id(7, "c0ffee00", "dev", &RepoPath::new("dev/b").unwrap(), 7);
        let taken: BTreeSet<String> = records
            .iter()
            .map(|r| r.execution_id.clone())
            .chain([taken_b.clone()])
            .collect();
        let new = retry_executions(&run(), &records, &taken);
        let ids: Vec<&str> = new.iter().map(|e| e.execution_id.as_str()).collect();
        assert_eq!(ids.len(), 3);
        assert!(ids.iter().all(|id| !taken.contains(*id)), "{ids:?}");
        assert_eq!(ids[0], a.replace("-005", "-006"));
        assert_eq!(ids[1], taken_b.replace("-007", "-008"));
        // b waits for a's retry only: `ok` has succeeded already.
        assert_eq!(new[1].wait_for, vec![ids[0].to_string()]);
        assert!(new[0].wait_for.is_empty());
        assert_eq!(new[0].wait_accounts, vec!["shared".to_string()]);
        let run = retry_run(&run(), new);
        assert_eq!(run.commit_id, "c0ffee00");
        // Kept, or the trunk order would supersede the retry at once.
        assert_eq!(run.trunk_seq, 5);
        // The same commit: its terra-runs unpack the same packed checkout.
        assert_eq!(
            run.checkout,
            Some(crate::port::CachedCheckout::of("c0ffee00", b"archive"))
        );
        run.validate().unwrap();
    }
}
