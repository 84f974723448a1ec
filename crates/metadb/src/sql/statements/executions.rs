//! Executions: reads, the claim, settling, finishing, and what terra-run
//! records of a plan (`store/executions.rs`).

/// A status change in one round trip: `live_ci_settle` (migration 0010) looks
/// the execution up, records its end, claims what is ready in its run and
/// counts the run, in one transaction.
pub const SETTLE: &str = "\
SELECT live_ci_settle(CAST(:execution_id AS text), CAST(:arn AS text), CAST(:status AS text),
                      CAST(:reason AS text), CAST(:limit AS bigint))";

/// The claim and the run's progress after it (`live_ci_claim`, migration
/// 0010): the run's row lock, then the claim with a fresh snapshot.
pub const CLAIM: &str = "\
SELECT live_ci_claim(CAST(:run_id AS bigint), CAST(:limit AS bigint))::text";

/// The guarded transition out of `running` and what follows from it
/// (`live_ci_finish`, migration 0010).
pub const FINISH: &str = "\
SELECT live_ci_finish(CAST(:execution_id AS text), CAST(:status AS text),
                      CAST(:reason AS text))::text";

/// The abort of a failed execution's waiting dependents on its own (the
/// sweep's repair), one execution id per row.
pub const ABORT_DEPENDENTS: &str = "\
SELECT jsonb_array_elements_text(
    live_ci_abort_dependents(CAST(:execution_id AS text)) -> 'aborted')";

/// The ARNs of a batch of started executions, attached in one statement.
pub const ATTACH_ARNS: &str = "\
UPDATE executions e SET sfn_execution_arn = a.arn, updated_at = clock_timestamp()
FROM jsonb_to_recordset(CAST(:started AS jsonb)) AS a(execution_id text, arn text)
WHERE e.execution_id = a.execution_id AND e.status = 'running'
  AND (e.sfn_execution_arn IS NULL OR e.sfn_execution_arn = a.arn)
RETURNING e.execution_id";

/// Puts a claimed execution back to waiting while no Step Functions execution
/// was started for it; returns its id when released.
pub const RELEASE_CLAIM: &str = "\
UPDATE executions SET status = 'waiting', claimed_at = NULL, updated_at = clock_timestamp()
WHERE execution_id = :execution_id AND status = 'running' AND sfn_execution_arn IS NULL
RETURNING execution_id";

/// Records the resources the apply created (`:resources`, a JSON array): what a
/// rollback destroys.
pub const RECORD_NEW_RESOURCES: &str = "\
UPDATE executions SET new_resources = CAST(:resources AS jsonb), updated_at = clock_timestamp()
WHERE execution_id = :execution_id AND status IN ('running', 'succeeded')
RETURNING execution_id";

/// Only while the execution has not ended: an ended one's plan is history.
pub const RECORD_SAVED_PLAN: &str = "\
UPDATE executions SET plan_key = :plan_key, plan_sha256 = :plan_sha256,
    plan_version_id = :plan_version_id, plan_json_sha256 = :plan_json_sha256, updated_at = clock_timestamp()
WHERE execution_id = :execution_id AND status IN ('waiting', 'running')
RETURNING execution_id";

/// The policy denials of one plan (migration 0019), recorded by terra-run
/// before the plan itself: keyed by the plan's hash, so a later plan of the
/// execution is not judged by them. Only while the execution runs.
pub const RECORD_POLICY_DENIALS: &str = "\
INSERT INTO policy_denials (execution, plan_sha256, denials)
SELECT e.id, CAST(:plan_sha256 AS text), CAST(:denials AS jsonb) FROM executions e
WHERE e.execution_id = :execution_id AND e.status IN ('waiting', 'running')
ON CONFLICT (execution) DO UPDATE
    SET plan_sha256 = excluded.plan_sha256, denials = excluded.denials, recorded_at = clock_timestamp()
RETURNING CAST(execution AS text)";

/// The saved plan of an execution as JSON (object key, SHA-256, S3 version,
/// plan JSON SHA-256), once recorded.
pub const SAVED_PLAN: &str = "\
SELECT json_build_object('key', plan_key, 'sha256', plan_sha256,
    'version_id', plan_version_id, 'json_sha256', plan_json_sha256)::text
FROM executions WHERE execution_id = :execution_id AND plan_key IS NOT NULL";

/// One execution as JSON (`live_ci_execution_json`).
pub const EXECUTION: &str = "\
SELECT live_ci_execution_json(e) FROM executions e WHERE e.execution_id = :execution_id";

/// Every execution of a run as JSON, in claim order (priority, then sequence).
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
