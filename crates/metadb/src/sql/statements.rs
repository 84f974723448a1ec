//! Every statement the metadb runs, in the shared dialect (`:name` parameters;
//! arrays and records arrive as JSON text and are cast in SQL). A statement that
//! returns rows returns exactly one text column, a JSON document per row.

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

pub const INSERT_RUN_ACCOUNTS: &str = "\
INSERT INTO run_accounts (run_id, account_name, action, remaining)
SELECT run_id, account_name, action, count(*)
FROM executions WHERE run_id = :run_id
GROUP BY run_id, account_name, action";

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

pub const SET_PENDING_ACCOUNTS: &str = "\
UPDATE executions e SET pending_accounts = w.n
FROM (SELECT w.execution, count(*) AS n
      FROM execution_account_waits w JOIN run_accounts ra ON ra.id = w.run_account
      WHERE ra.run_id = :run_id AND ra.remaining > 0
      GROUP BY w.execution) w
WHERE e.id = w.execution";

/// When no run is running: every queued run but the newest on the trunk is
/// superseded (by it, whose range — from the last started run — covers
/// theirs), and so is a queued run no newer than the last started run (a
/// merge whose create-deploy-stack lost the race to a newer one). An operator's
/// retry sits at its run's own trunk position and is not superseded by it. Runs under
/// `LOCK_MERGE_LOCK`, right before `START_NEXT_RUN`.
pub const SUPERSEDE_QUEUED: &str = "\
WITH idle AS (
    SELECT NOT EXISTS (SELECT 1 FROM runs WHERE status = 'running') AS yes
), last_started AS (
    SELECT run_id, trunk_seq FROM runs WHERE status IN ('succeeded', 'failed')
    ORDER BY trunk_seq DESC, run_id DESC LIMIT 1
), next AS (
    SELECT q.run_id FROM runs q, idle
    WHERE idle.yes AND q.status = 'queued'
      AND (q.trunk_seq > coalesce((SELECT trunk_seq FROM last_started), -1)
           OR (q.retry_of IS NOT NULL
               AND q.trunk_seq >= coalesce((SELECT trunk_seq FROM last_started), -1)))
    ORDER BY q.trunk_seq DESC, q.run_id DESC LIMIT 1
)
UPDATE runs r
SET status = 'superseded', finished_at = clock_timestamp(),
    superseded_by = coalesce((SELECT run_id FROM next), (SELECT run_id FROM last_started))
FROM idle
WHERE idle.yes AND r.status = 'queued'
  AND r.run_id <> coalesce((SELECT run_id FROM next), -1)
RETURNING r.run_id::text";

/// The executions of a superseded run never start.
pub const ABORT_SUPERSEDED_EXECUTIONS: &str = "\
UPDATE executions e
SET status = 'aborted', status_reason = 'superseded by run #' || coalesce(r.superseded_by::text, '?'),
    finished_at = clock_timestamp(), updated_at = clock_timestamp()
FROM runs r
WHERE r.run_id = :run_id AND r.status = 'superseded' AND e.run_id = r.run_id
  AND e.status = 'waiting'";

/// Starts the queued run newest on the trunk when none is running (after
/// `SUPERSEDE_QUEUED` it is the only one), and gives it the merge lock. Runs
/// under `LOCK_MERGE_LOCK`.
pub const START_NEXT_RUN: &str = "\
WITH next AS (
    SELECT run_id FROM runs
    WHERE status = 'queued' AND NOT EXISTS (SELECT 1 FROM runs WHERE status = 'running')
    ORDER BY trunk_seq DESC, run_id DESC LIMIT 1
), started AS (
    UPDATE runs r SET status = 'running', started_at = clock_timestamp()
    FROM next WHERE r.run_id = next.run_id
    RETURNING r.run_id
), locked AS (
    UPDATE merge_lock m SET run_id = started.run_id, locked_at = clock_timestamp()
    FROM started WHERE m.singleton
    RETURNING m.run_id
)
SELECT run_id::text FROM locked";

/// Serializes the claimers of one run, so the running count each one reads is
/// current: the claim runs as the next statement, with a fresh snapshot.
pub const LOCK_RUN_FOR_CLAIM: &str = "\
SELECT run_id::text FROM runs WHERE run_id = :run_id AND status = 'running' FOR NO KEY UPDATE";

/// The claim: ready executions of a running run, highest priority first, up to
/// the run's free slots. The counters select candidates through
/// `executions_ready`; the NOT EXISTS clauses re-check the edges of those few.
/// The record JSON is built inline, as `live_ci_execution_json` builds it (a
/// test compares the two): calling the function per row tripled the claim's
/// time on 10,000 units (6.8 ms against 2.8 ms median for 50 rows).
pub const CLAIM: &str = "\
WITH slots AS (
    SELECT greatest(r.max_parallel - (SELECT count(*) FROM executions x
                                      WHERE x.run_id = r.run_id AND x.status = 'running'), 0) AS n
    FROM runs r WHERE r.run_id = :run_id AND r.status = 'running'
), ready AS (
    SELECT e.id FROM executions e
    WHERE e.run_id = :run_id AND e.status = 'waiting'
      AND e.pending_deps = 0 AND e.pending_accounts = 0
      AND NOT EXISTS (SELECT 1 FROM execution_deps d JOIN executions p ON p.id = d.depends_on
                      WHERE d.execution = e.id AND p.status <> 'succeeded')
      AND NOT EXISTS (SELECT 1 FROM execution_account_waits w
                      JOIN run_accounts ra ON ra.id = w.run_account
                      WHERE w.execution = e.id AND ra.remaining > 0)
    ORDER BY e.priority DESC, e.seq
    LIMIT least(coalesce((SELECT n FROM slots), 0), :limit)
    FOR UPDATE OF e SKIP LOCKED
), claimed AS (
    UPDATE executions e
    SET status = 'running', claimed_at = clock_timestamp(), updated_at = clock_timestamp()
    FROM ready WHERE e.id = ready.id AND e.status = 'waiting'
    RETURNING e.*
)
SELECT (to_jsonb(c) || jsonb_build_object(
    'pr_id', r.pr_id, 'commit_id', r.commit_id, 'base_ref', r.base_ref, 'head_ref', r.head_ref,
    'approval_voters', coalesce((SELECT jsonb_agg(v.voter ORDER BY v.voter) FROM votes v
                                 WHERE v.execution = c.id AND v.vote = 'approve'), '[]'),
    'rejection_voters', coalesce((SELECT jsonb_agg(v.voter ORDER BY v.voter) FROM votes v
                                  WHERE v.execution = c.id AND v.vote = 'reject'), '[]'),
    'created_at', live_ci_ms(c.created_at), 'claimed_at', live_ci_ms(c.claimed_at),
    'finished_at', live_ci_ms(c.finished_at), 'updated_at', live_ci_ms(c.updated_at)))::text
FROM claimed c JOIN runs r ON r.run_id = c.run_id";

pub const ATTACH_ARN: &str = "\
UPDATE executions SET sfn_execution_arn = :arn, updated_at = clock_timestamp()
WHERE execution_id = :execution_id AND status = 'running'
  AND (sfn_execution_arn IS NULL OR sfn_execution_arn = :arn)
RETURNING execution_id";

pub const RELEASE_CLAIM: &str = "\
UPDATE executions SET status = 'waiting', claimed_at = NULL, updated_at = clock_timestamp()
WHERE execution_id = :execution_id AND status = 'running' AND sfn_execution_arn IS NULL
RETURNING execution_id";

/// The guarded transition out of `running`; returns what the follow-up
/// statements need.
pub const FINISH_EXECUTION: &str = "\
UPDATE executions
SET status = :status, status_reason = CAST(:reason AS text),
    finished_at = clock_timestamp(), updated_at = clock_timestamp()
WHERE execution_id = :execution_id AND status = 'running'
RETURNING json_build_object('id', id, 'run_id', run_id, 'account_name', account_name,
                            'action', action, 'is_rollback', is_rollback)::text";

pub const EXECUTION_STATUS: &str = "\
SELECT json_build_object('id', id, 'run_id', run_id, 'status', status)::text
FROM executions WHERE execution_id = :execution_id";

/// Locks, in id order, every execution whose counters a success will change, so
/// two finishers sharing dependents cannot deadlock.
pub const LOCK_DEPENDENTS: &str = "\
SELECT e.id::text FROM executions e
WHERE e.id IN (SELECT d.execution FROM execution_deps d WHERE d.depends_on = :id)
   OR e.id IN (SELECT w.execution FROM execution_account_waits w
               WHERE w.run_account = CAST(:run_account AS bigint))
ORDER BY e.id FOR NO KEY UPDATE";

pub const DECREMENT_DEPS: &str = "\
UPDATE executions e SET pending_deps = e.pending_deps - 1
FROM execution_deps d
WHERE d.depends_on = :id AND e.id = d.execution";

/// One fewer execution of the account left to succeed; the row lock serializes
/// the finishers of one account, so exactly one of them sees zero.
pub const DECREMENT_ACCOUNT: &str = "\
UPDATE run_accounts SET remaining = remaining - 1
WHERE run_id = :run_id AND account_name = :account_name AND action = :action
RETURNING json_build_object('id', id, 'remaining', remaining)::text";

pub const DECREMENT_ACCOUNT_WAITERS: &str = "\
UPDATE executions e SET pending_accounts = e.pending_accounts - 1
FROM execution_account_waits w
WHERE w.run_account = :run_account AND e.id = w.execution";

/// Aborts the waiting transitive dependents of a failed execution, following
/// directory edges and account waits (a failed member keeps its account from
/// ever completing); with fail-fast, every waiting execution of the run.
/// Account nodes are negative ids so one recursive term walks both kinds.
pub const ABORT_DEPENDENTS: &str = "\
WITH RECURSIVE failed AS (
    SELECT e.id, e.run_id, r.fail_fast FROM executions e JOIN runs r ON r.run_id = e.run_id
    WHERE e.execution_id = :execution_id AND e.status = 'failed'
), edges(src, dst) AS MATERIALIZED (
    SELECT d.depends_on, d.execution
    FROM execution_deps d JOIN executions e ON e.id = d.execution JOIN failed f ON e.run_id = f.run_id
    UNION ALL
    SELECT e.id, -ra.id
    FROM executions e JOIN failed f ON e.run_id = f.run_id
    JOIN run_accounts ra
      ON ra.run_id = e.run_id AND ra.account_name = e.account_name AND ra.action = e.action
    UNION ALL
    SELECT -w.run_account, w.execution
    FROM execution_account_waits w JOIN run_accounts ra ON ra.id = w.run_account
    JOIN failed f ON ra.run_id = f.run_id
), doomed(node) AS (
    SELECT id FROM failed
    UNION
    SELECT edges.dst FROM doomed JOIN edges ON edges.src = doomed.node
), targets AS (
    SELECT e.id, e.id IN (SELECT node FROM doomed) AS dependent
    FROM executions e JOIN failed f ON e.run_id = f.run_id
    WHERE e.status = 'waiting' AND (f.fail_fast OR e.id IN (SELECT node FROM doomed))
    ORDER BY e.id
    FOR NO KEY UPDATE OF e
)
UPDATE executions e
SET status = 'aborted',
    status_reason = CASE WHEN targets.dependent THEN 'ancestor failed' ELSE 'fail-fast' END,
    finished_at = clock_timestamp(), updated_at = clock_timestamp()
FROM targets WHERE e.id = targets.id AND e.status = 'waiting'
RETURNING e.execution_id";

pub const RECORD_NEW_RESOURCES: &str = "\
UPDATE executions SET new_resources = CAST(:resources AS jsonb), updated_at = clock_timestamp()
WHERE execution_id = :execution_id AND status IN ('running', 'succeeded')
RETURNING execution_id";

/// Only while the execution has not ended: an ended one's plan is history.
pub const RECORD_SAVED_PLAN: &str = "\
UPDATE executions SET plan_key = :plan_key, plan_sha256 = :plan_sha256,
    plan_version_id = :plan_version_id, updated_at = clock_timestamp()
WHERE execution_id = :execution_id AND status IN ('waiting', 'running')
RETURNING execution_id";

pub const SAVED_PLAN: &str = "\
SELECT json_build_object('key', plan_key, 'sha256', plan_sha256,
    'version_id', plan_version_id)::text
FROM executions WHERE execution_id = :execution_id AND plan_key IS NOT NULL";

pub const RUN_PROGRESS: &str = "\
SELECT json_build_object(
    'waiting', count(*) FILTER (WHERE status = 'waiting'),
    'running', count(*) FILTER (WHERE status = 'running'),
    'succeeded', count(*) FILTER (WHERE status = 'succeeded'),
    'failed', count(*) FILTER (WHERE status = 'failed'),
    'aborted', count(*) FILTER (WHERE status = 'aborted'))::text
FROM executions WHERE run_id = :run_id";

/// The guarded end of a run: only a running run with nothing waiting or running.
pub const FINISH_RUN: &str = "\
WITH counts AS (
    SELECT count(*) FILTER (WHERE status IN ('waiting', 'running')) AS open,
           count(*) FILTER (WHERE status <> 'succeeded') AS unsuccessful
    FROM executions WHERE run_id = :run_id
)
UPDATE runs r
SET status = CASE WHEN counts.unsuccessful = 0 THEN 'succeeded' ELSE 'failed' END,
    finished_at = clock_timestamp()
FROM counts
WHERE r.run_id = :run_id AND r.status = 'running' AND counts.open = 0
RETURNING r.status";

pub const RELEASE_MERGE_LOCK: &str = "\
UPDATE merge_lock SET run_id = NULL, locked_at = NULL
WHERE singleton AND run_id = :run_id";

pub const MERGE_LOCK: &str = "\
SELECT json_build_object('run_id', m.run_id, 'pr_id', r.pr_id, 'commit_id', r.commit_id,
                         'locked_at', live_ci_ms(m.locked_at))::text
FROM merge_lock m LEFT JOIN runs r ON r.run_id = m.run_id";

pub const EXECUTION: &str = "\
SELECT live_ci_execution_json(e) FROM executions e WHERE e.execution_id = :execution_id";

pub const EXECUTIONS_OF_RUN: &str = "\
SELECT live_ci_execution_json(e) FROM executions e WHERE e.run_id = :run_id
ORDER BY e.priority DESC, e.seq";

/// One page of a run's executions, in `EXECUTIONS_OF_RUN`'s order, after the
/// (priority, seq) of the previous page's last row: a 10,000-unit run is about
/// 15 MB of JSON, and a Data API response stops at 1 MiB.
pub const EXECUTIONS_OF_RUN_PAGE: &str = "\
SELECT live_ci_execution_json(e) FROM executions e
WHERE e.run_id = :run_id
  AND (:first OR e.priority < :after_priority
       OR (e.priority = :after_priority AND e.seq > :after_seq))
ORDER BY e.priority DESC, e.seq
LIMIT :limit";

pub const STALE_CLAIMS: &str = "\
SELECT live_ci_execution_json(e) FROM executions e
WHERE e.status = 'running' AND e.sfn_execution_arn IS NULL
  AND e.claimed_at < clock_timestamp() - make_interval(secs => CAST(:older_than_secs AS double precision))
ORDER BY e.claimed_at";

pub const RUNNING_WITH_ARN: &str = "\
SELECT live_ci_execution_json(e) FROM executions e
WHERE e.status = 'running' AND e.sfn_execution_arn IS NOT NULL
ORDER BY e.claimed_at LIMIT :limit";

/// Stores or changes a vote while the execution runs undecided and the voter is
/// one of its voters. FOR SHARE makes a concurrent `DECIDE` wait for this vote
/// (or this vote see the decision).
pub const CAST_VOTE: &str = "\
WITH target AS (
    SELECT id FROM executions
    WHERE execution_id = :execution_id AND status = 'running' AND decision IS NULL
      AND voters ? :voter
    FOR SHARE
)
INSERT INTO votes (execution, voter, vote)
SELECT id, :voter, :vote FROM target
ON CONFLICT (execution, voter) DO UPDATE SET vote = excluded.vote, updated_at = clock_timestamp()
RETURNING execution::text";

pub const VOTE_CONTEXT: &str = "\
SELECT json_build_object('status', status, 'decision', decision, 'is_voter', voters ? :voter)::text
FROM executions WHERE execution_id = :execution_id";

pub const TALLY: &str = "\
SELECT json_build_object(
    'approval_voters', coalesce((SELECT json_agg(v.voter ORDER BY v.voter) FROM votes v
                                 WHERE v.execution = e.id AND v.vote = 'approve'), '[]'),
    'rejection_voters', coalesce((SELECT json_agg(v.voter ORDER BY v.voter) FROM votes v
                                  WHERE v.execution = e.id AND v.vote = 'reject'), '[]'),
    'min_approval_count', e.min_approval_count,
    'min_rejection_count', e.min_rejection_count,
    'decision', e.decision)::text
FROM executions e WHERE e.execution_id = :execution_id";

/// The one-time decision: only the caller whose update flips `decision` from
/// NULL gets a row back. Rejection wins when both thresholds are met.
pub const DECIDE: &str = "\
WITH t AS (
    SELECT e.id,
           (SELECT count(*) FROM votes v WHERE v.execution = e.id AND v.vote = 'approve') AS approvals,
           (SELECT count(*) FROM votes v WHERE v.execution = e.id AND v.vote = 'reject') AS rejections
    FROM executions e WHERE e.execution_id = :execution_id
)
UPDATE executions e
SET decision = CASE WHEN t.rejections >= e.min_rejection_count THEN 'reject' ELSE 'approve' END,
    updated_at = clock_timestamp()
FROM t
WHERE e.id = t.id AND e.decision IS NULL AND e.status = 'running'
  AND (t.rejections >= e.min_rejection_count OR t.approvals >= e.min_approval_count)
RETURNING e.decision";

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

// Migrations. The advisory lock key is arbitrary but fixed: concurrent migrators
// queue on it, and a transaction-scoped lock works through the Data API, which
// keeps no session between calls.
pub const MIGRATION_LOCK: &str =
    "SELECT 'locked' FROM (SELECT pg_advisory_xact_lock(7263348291)) AS l";

pub const CREATE_SCHEMA_MIGRATIONS: &str = "\
CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
)";

pub const APPLIED_MIGRATIONS: &str = "SELECT version::text FROM schema_migrations ORDER BY version";

pub const RECORD_MIGRATION: &str =
    "INSERT INTO schema_migrations (version, name) VALUES (:version, :name)";

/// A trunk commit create-deploy-stack found nothing to deploy for: the sweep
/// takes it as known. Repeats keep the first time.
pub const RECORD_NO_OP_MERGE: &str = "\
INSERT INTO trunk_commits (commit_id, no_op_at) VALUES (:commit_id, clock_timestamp())
ON CONFLICT (commit_id) DO UPDATE
SET no_op_at = coalesce(trunk_commits.no_op_at, EXCLUDED.no_op_at)";

/// The sweep's claim to launch create-deploy-stack for a trunk head: only for a
/// commit no run has, no no-op merge recorded, and no launch younger than the
/// cool-down. One statement, so of two sweeps at once (the second waits on the
/// row the first wrote) exactly one gets the row back: the launch count.
pub const CLAIM_TRUNK_LAUNCH: &str = "\
INSERT INTO trunk_commits (commit_id, launched_at, launches)
SELECT :commit_id, clock_timestamp(), 1
WHERE NOT EXISTS (SELECT 1 FROM runs WHERE commit_id = :commit_id)
ON CONFLICT (commit_id) DO UPDATE
SET launched_at = clock_timestamp(), launches = trunk_commits.launches + 1
WHERE trunk_commits.no_op_at IS NULL
  AND (trunk_commits.launched_at IS NULL
       OR trunk_commits.launched_at
          < clock_timestamp() - make_interval(secs => CAST(:cooldown_secs AS double precision)))
RETURNING launches::text";
