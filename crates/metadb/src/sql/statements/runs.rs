//! Runs: creation under the merge lock row, the trunk order, supersession,
//! rollbacks, accounts and a run's end (`store/runs.rs`; the operator's retry
//! uses some).

/// Serializes run creation and run hand-over: both read "is a run running?" and
/// act on it.
pub const LOCK_MERGE_LOCK: &str =
    "SELECT coalesce(run_id::text, '') FROM merge_lock WHERE singleton FOR UPDATE";

/// The run's packed checkout goes in with it (before any execution can start).
pub const INSERT_RUN: &str = "\
INSERT INTO runs (pr_id, commit_id, base_ref, head_ref, base_sha, head_sha, max_parallel, fail_fast,
                  trunk_seq, checkout_key, checkout_sha256)
VALUES (:pr_id, :commit_id, :base_ref, :head_ref, :base_sha, :head_sha, :max_parallel, :fail_fast,
        :trunk_seq, :checkout_key, :checkout_sha256)
ON CONFLICT (commit_id) WHERE retry_of IS NULL DO NOTHING
RETURNING run_id::text";

/// A merge another run covers: recorded (its PR's statuses name the run that
/// deploys it), never applied.
pub const INSERT_SUPERSEDED_RUN: &str = "\
INSERT INTO runs (pr_id, commit_id, base_ref, head_ref, base_sha, head_sha, max_parallel, fail_fast,
                  trunk_seq, status, superseded_by, finished_at)
VALUES (:pr_id, :commit_id, :base_ref, :head_ref, :base_sha, :head_sha, :max_parallel, :fail_fast,
        :trunk_seq, 'superseded', :by, clock_timestamp())
ON CONFLICT (commit_id) WHERE retry_of IS NULL DO NOTHING
RETURNING run_id::text";

/// What a new merge is placed against: runs newest on the trunk first.
pub const TRUNK_RUNS: &str = "\
SELECT live_ci_run_json(r) FROM runs r WHERE r.status <> 'superseded'
ORDER BY r.trunk_seq DESC, r.run_id DESC LIMIT :limit";

/// Units whose latest deployment in a finished run failed or was aborted.
pub const PENDING_UNITS: &str = "\
SELECT json_build_object('cfg_path', cfg_path, 'last_status', last_status,
                         'applied_commit', applied_commit)::text
FROM unit_deployments
WHERE last_status IN ('failed', 'aborted') AND run_status IN ('succeeded', 'failed')
ORDER BY cfg_path";

/// The merge's own run, not an operator's retry of it.
pub const RUN_BY_COMMIT: &str =
    "SELECT live_ci_run_json(r) FROM runs r WHERE r.commit_id = :commit_id AND r.retry_of IS NULL";

/// One run as JSON (`live_ci_run_json`).
pub const RUN_BY_ID: &str = "SELECT live_ci_run_json(r) FROM runs r WHERE r.run_id = :run_id";

/// The runs a run superseded, oldest on the trunk first.
pub const SUPERSEDED_RUNS: &str = "\
SELECT live_ci_run_json(r) FROM runs r WHERE r.superseded_by = :run_id
ORDER BY r.trunk_seq, r.run_id";

/// One chunk of a run's executions, as a JSON array of records. Each takes a
/// copy of the run's packed checkout, so every record JSON built from the row
/// (reads and claims alike) carries it.
pub const INSERT_EXECUTIONS: &str = "\
INSERT INTO executions (run_id, execution_id, seq, is_rollback, cfg_path, cfg_deps, action,
    plan_command, apply_command, new_providers, account_name, account_path, account_deps,
    voters, min_approval_count, min_rejection_count, plan_role_arn, apply_role_arn,
    priority, wait_for, wait_accounts, pending_deps, new_resources, checkout)
SELECT :run_id, x.execution_id, x.seq, x.is_rollback, x.cfg_path, x.cfg_deps, x.action,
    x.plan_command, x.apply_command, x.new_providers, x.account_name, x.account_path,
    x.account_deps, x.voters, x.min_approval_count, x.min_rejection_count, x.plan_role_arn,
    x.apply_role_arn, x.priority, x.wait_for, x.wait_accounts, jsonb_array_length(x.wait_for),
    coalesce(x.new_resources, '[]'),
    (SELECT live_ci_checkout_json(r.checkout_key, r.checkout_sha256) FROM runs r
     WHERE r.run_id = :run_id)
FROM jsonb_to_recordset(CAST(:executions AS jsonb)) AS x(
    execution_id text, seq integer, is_rollback boolean, cfg_path text, cfg_deps jsonb,
    action text, plan_command text, apply_command text, new_providers jsonb,
    account_name text, account_path text, account_deps jsonb, voters jsonb,
    min_approval_count integer, min_rejection_count integer, plan_role_arn text,
    apply_role_arn text, priority double precision, wait_for jsonb, wait_accounts jsonb,
    new_resources jsonb)";

/// Directory edges from each execution's `wait_for` list. An id that names no
/// execution of the run produces no edge: the caller compares the count.
pub const INSERT_DEPS: &str = "\
INSERT INTO execution_deps (execution, depends_on)
SELECT e.id, d.id
FROM executions e
CROSS JOIN LATERAL jsonb_array_elements_text(e.wait_for) AS w(execution_id)
JOIN executions d ON d.execution_id = w.execution_id AND d.run_id = e.run_id
WHERE e.run_id = :run_id";

/// The edges of a run's rollbacks, added after its other executions ended.
pub const INSERT_ROLLBACK_DEPS: &str = "\
INSERT INTO execution_deps (execution, depends_on)
SELECT e.id, d.id
FROM executions e
CROSS JOIN LATERAL jsonb_array_elements_text(e.wait_for) AS w(execution_id)
JOIN executions d ON d.execution_id = w.execution_id AND d.run_id = e.run_id
WHERE e.run_id = :run_id AND e.is_rollback";

/// Rollbacks are added under the run's row lock, so two callers cannot both
/// find the run without rollbacks.
pub const LOCK_RUN_FOR_ROLLBACK: &str = "\
SELECT run_id::text FROM runs WHERE run_id = :run_id AND status = 'running' FOR UPDATE";

/// Read after the run's row lock is held (a fresh snapshot in READ COMMITTED).
pub const ROLLBACK_GUARD: &str = "\
SELECT json_build_object(
    'open', count(*) FILTER (WHERE status IN ('waiting', 'running')),
    'rollbacks', count(*) FILTER (WHERE is_rollback),
    'next_seq', coalesce(max(seq) + 1, 0))::text
FROM executions WHERE run_id = :run_id";

/// Creates a run's per-account counters: how many executions of each account
/// and action remain.
pub const INSERT_RUN_ACCOUNTS: &str = "\
INSERT INTO run_accounts (run_id, account_name, action, remaining)
SELECT run_id, account_name, action, count(*)
FROM executions WHERE run_id = :run_id
GROUP BY run_id, account_name, action";

/// The accounts' caps (`{"account": cap}`, migration 0017), written only for
/// a run that has one: the claim takes its paced path for such a run alone.
pub const SET_ACCOUNT_CAPS: &str = "\
UPDATE run_accounts ra SET max_parallel = c.cap::integer
FROM jsonb_each_text(CAST(:caps AS jsonb)) AS c(account_name, cap)
WHERE ra.run_id = :run_id AND ra.account_name = c.account_name";

/// An operator's retry keeps the caps of the run it retries.
pub const COPY_ACCOUNT_CAPS: &str = "\
UPDATE run_accounts ra SET max_parallel = o.max_parallel
FROM run_accounts o
WHERE o.run_id = :from_run_id AND o.max_parallel IS NOT NULL
  AND ra.run_id = :run_id AND ra.account_name = o.account_name";

/// Account waits; an account with no execution of the same action in the run is
/// nothing to wait for and gets no row.
pub const INSERT_ACCOUNT_WAITS: &str = "\
INSERT INTO execution_account_waits (execution, run_account)
SELECT e.id, ra.id
FROM executions e
CROSS JOIN LATERAL jsonb_array_elements_text(e.wait_accounts) AS w(account_name)
JOIN run_accounts ra
  ON ra.run_id = e.run_id AND ra.account_name = w.account_name AND ra.action = e.action
WHERE e.run_id = :run_id";

/// Sets each execution's count of accounts it still waits for.
pub const SET_PENDING_ACCOUNTS: &str = "\
UPDATE executions e SET pending_accounts = w.n
FROM (SELECT w.execution, count(*) AS n
      FROM execution_account_waits w JOIN run_accounts ra ON ra.id = w.run_account
      WHERE ra.run_id = :run_id AND ra.remaining > 0
      GROUP BY w.execution) w
WHERE e.id = w.execution";

/// Hands a free merge lock to the queued run newest on the trunk, superseding
/// the other queued runs (`live_ci_start_next_run`, migration 0010); the run
/// it started, or an empty row. Runs under `LOCK_MERGE_LOCK`.
pub const START_NEXT_RUN: &str = "SELECT live_ci_start_next_run()::text";

/// The end of a run, the hand-over and what the run's statuses need, in one
/// call (`live_ci_finish_run`, migration 0010).
pub const FINISH_RUN: &str = "SELECT live_ci_finish_run(CAST(:run_id AS bigint))";

/// A run's progress as JSON (`live_ci_progress`).
pub const RUN_PROGRESS: &str = "SELECT live_ci_progress(CAST(:run_id AS bigint))::text";

/// The merge lock row as JSON (`live_ci_merge_lock_json`).
pub const MERGE_LOCK: &str = "SELECT live_ci_merge_lock_json()::text";

/// The units of the running and queued runs (`RunStore::busy_units`), one
/// JSON string per row.
pub const BUSY_UNITS: &str = "SELECT to_json(u.cfg_path)::text FROM (
    SELECT DISTINCT e.cfg_path FROM executions e JOIN runs r ON r.run_id = e.run_id
    WHERE r.status IN ('running', 'queued')) u ORDER BY u.cfg_path";

/// Inserts or updates every account of `:accounts` (a JSON array of account
/// configurations), by name.
pub const UPSERT_ACCOUNTS: &str = "\
INSERT INTO accounts (name, path, dependencies, voters, min_approval_count, min_rejection_count,
                      plan_role_arn, apply_role_arn)
SELECT a.name, a.path, a.dependencies, a.voters, a.min_approval_count, a.min_rejection_count,
       a.plan_role_arn, a.apply_role_arn
FROM jsonb_to_recordset(CAST(:accounts AS jsonb)) AS a(
    name text, path text, dependencies jsonb, voters jsonb, min_approval_count integer,
    min_rejection_count integer, plan_role_arn text, apply_role_arn text)
ON CONFLICT (name) DO UPDATE SET
    path = excluded.path, dependencies = excluded.dependencies, voters = excluded.voters,
    min_approval_count = excluded.min_approval_count,
    min_rejection_count = excluded.min_rejection_count,
    plan_role_arn = excluded.plan_role_arn, apply_role_arn = excluded.apply_role_arn,
    updated_at = clock_timestamp()";

/// A trunk commit create-deploy-stack found nothing to deploy for: the sweep
/// takes it as known. Repeats keep the first time.
pub const RECORD_NO_OP_MERGE: &str = "\
INSERT INTO trunk_commits (commit_id, no_op_at) VALUES (:commit_id, clock_timestamp())
ON CONFLICT (commit_id) DO UPDATE
SET no_op_at = coalesce(trunk_commits.no_op_at, EXCLUDED.no_op_at)";
