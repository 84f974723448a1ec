//! The statements of the operator's controls, bounded starts and duration
//! history (migration 0005), in the shared dialect.

/// A failed start of a claim without an ARN: counted, and put back to waiting
/// unless it was the last allowed attempt (then the caller fails it).
pub const COUNT_START_FAILURE: &str = "\
UPDATE executions
SET start_attempts = start_attempts + 1, last_start_error = :error,
    status = CASE WHEN start_attempts + 1 >= :max_attempts THEN status ELSE 'waiting' END,
    claimed_at = CASE WHEN start_attempts + 1 >= :max_attempts THEN claimed_at ELSE NULL END,
    updated_at = clock_timestamp()
WHERE execution_id = :execution_id AND status = 'running' AND sfn_execution_arn IS NULL
RETURNING json_build_object('attempts', start_attempts, 'released', status = 'waiting')::text";

/// Median claim-to-end seconds of each unit's earlier successful executions.
pub const UNIT_DURATIONS: &str = "\
SELECT json_build_object('cfg_path', e.cfg_path,
    'seconds', percentile_cont(0.5) WITHIN GROUP (
        ORDER BY extract(epoch FROM e.finished_at - e.claimed_at)))::text
FROM executions e
WHERE e.status = 'succeeded' AND NOT e.is_rollback
  AND e.claimed_at IS NOT NULL AND e.finished_at IS NOT NULL
  AND e.cfg_path IN (SELECT jsonb_array_elements_text(CAST(:paths AS jsonb)))
GROUP BY e.cfg_path
ORDER BY e.cfg_path";

/// The newest `:limit` runs as JSON, newest first, with their progress and
/// whether each holds the merge lock.
pub const RUNS: &str = "\
SELECT (live_ci_run_json(r)::jsonb || jsonb_build_object(
    'retry_of', r.retry_of,
    'holds_lock', coalesce((SELECT m.run_id = r.run_id FROM merge_lock m), false),
    'progress', (SELECT json_build_object(
        'waiting', count(*) FILTER (WHERE status = 'waiting'),
        'running', count(*) FILTER (WHERE status = 'running'),
        'succeeded', count(*) FILTER (WHERE status = 'succeeded'),
        'failed', count(*) FILTER (WHERE status = 'failed'),
        'aborted', count(*) FILTER (WHERE status = 'aborted'))
      FROM executions e WHERE e.run_id = r.run_id)))::text
FROM runs r ORDER BY r.run_id DESC LIMIT :limit";

/// The run, locked against claims, finishes and rollbacks while it is changed.
pub const LOCK_RUN: &str = "\
SELECT json_build_object('status', status)::text
FROM runs WHERE run_id = :run_id FOR UPDATE";

/// Aborts what has not ended; a running claim without an ARN is aborted too,
/// so its start (if it is under way) can no longer attach and is stopped.
pub const ABORT_OPEN: &str = "\
UPDATE executions
SET status = 'aborted', status_reason = :reason,
    finished_at = clock_timestamp(), updated_at = clock_timestamp()
WHERE run_id = :run_id AND status IN ('waiting', 'running')
RETURNING execution_id";

/// A queued run has no lock and nothing running: aborting it ends it.
pub const FAIL_QUEUED_RUN: &str = "\
UPDATE runs SET status = 'failed', finished_at = clock_timestamp()
WHERE run_id = :run_id AND status = 'queued'
RETURNING run_id::text";

/// The Step Functions ARNs of a run's executions the operator aborted (by
/// reason), to stop them.
pub const OPERATOR_ABORTED_ARNS: &str = "\
SELECT sfn_execution_arn FROM executions
WHERE run_id = :run_id AND status = 'aborted' AND status_reason = :reason
  AND sfn_execution_arn IS NOT NULL
ORDER BY id";

/// The first run after `run_id`, if any.
pub const LATER_RUN: &str = "\
SELECT run_id::text FROM runs WHERE run_id > :run_id ORDER BY run_id LIMIT 1";

/// Every execution id already used at a commit, which a retry's ids avoid.
pub const IDS_AT_COMMIT: &str = "\
SELECT e.execution_id FROM executions e JOIN runs r ON r.run_id = e.run_id
WHERE r.commit_id = :commit_id";

/// A retry deploys the same commit: it keeps the run's packed checkout.
pub const INSERT_RETRY_RUN: &str = "\
INSERT INTO runs (pr_id, commit_id, base_ref, head_ref, base_sha, head_sha, max_parallel,
                  fail_fast, retry_of, trunk_seq, checkout_key, checkout_sha256)
VALUES (:pr_id, :commit_id, :base_ref, :head_ref, :base_sha, :head_sha, :max_parallel,
        :fail_fast, :retry_of, :trunk_seq, :checkout_key, :checkout_sha256)
RETURNING run_id::text";

/// The running run, if any, as JSON (`run_id`, `pr_id`).
pub const RUNNING_RUN: &str = "\
SELECT json_build_object('run_id', run_id, 'pr_id', pr_id)::text
FROM runs WHERE status = 'running'";

/// Frees the merge lock row.
pub const CLEAR_MERGE_LOCK: &str = "\
UPDATE merge_lock SET run_id = NULL, locked_at = NULL WHERE singleton";

/// Appends one operator action to the log.
pub const LOG_ACTION: &str = "\
INSERT INTO operator_actions (action, run_id, actor, detail)
VALUES (:action, CAST(:run_id AS bigint), :actor, :detail)";

/// The newest `:limit` operator actions as JSON, newest first.
pub const ACTIONS: &str = "\
SELECT json_build_object('action', action, 'run_id', run_id, 'actor', actor,
                         'detail', detail, 'at', live_ci_ms(at))::text
FROM operator_actions ORDER BY id DESC LIMIT :limit";
