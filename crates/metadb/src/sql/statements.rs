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

pub const RUN_PROGRESS: &str = "SELECT live_ci_progress(CAST(:run_id AS bigint))::text";

pub const MERGE_LOCK: &str = "SELECT live_ci_merge_lock_json()::text";

/// The units of the running and queued runs (`RunStore::busy_units`), one
/// JSON string per row.
pub const BUSY_UNITS: &str = "SELECT to_json(u.cfg_path)::text FROM (
    SELECT DISTINCT e.cfg_path FROM executions e JOIN runs r ON r.run_id = e.run_id
    WHERE r.status IN ('running', 'queued')) u ORDER BY u.cfg_path";

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

pub const RELEASE_CLAIM: &str = "\
UPDATE executions SET status = 'waiting', claimed_at = NULL, updated_at = clock_timestamp()
WHERE execution_id = :execution_id AND status = 'running' AND sfn_execution_arn IS NULL
RETURNING execution_id";

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

pub const SAVED_PLAN: &str = "\
SELECT json_build_object('key', plan_key, 'sha256', plan_sha256,
    'version_id', plan_version_id, 'json_sha256', plan_json_sha256)::text
FROM executions WHERE execution_id = :execution_id AND plan_key IS NOT NULL";

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

/// The votes and thresholds (`live_ci_tally_json`, migration 0012).
pub const TALLY: &str = "\
SELECT live_ci_tally_json(e)::text FROM executions e WHERE e.execution_id = :execution_id";

/// The one-time decision (`live_ci_decide`, migration 0012): only the caller
/// whose update flips `decision` from NULL gets it back (SQL NULL, an empty
/// row, for everyone else). Rejection wins when both thresholds are met.
pub const DECIDE: &str = "SELECT live_ci_decide(CAST(:execution_id AS text))";

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

/// What a start needs to know it has nothing to apply, in one read: the
/// applied migrations' versions, then `functions <revision> <hash>` of the
/// newest function set applied. Fails before migration 0022 (no
/// `schema_functions`): the locked path decides then.
pub const SCHEMA_STATE: &str = "\
SELECT version::text FROM schema_migrations
UNION ALL
(SELECT 'functions ' || revision::text || ' ' || hash FROM schema_functions
 ORDER BY revision DESC LIMIT 1)";

/// The newest function set applied, as `<revision> <hash>`; no row when none.
pub const APPLIED_FUNCTIONS: &str =
    "SELECT revision::text || ' ' || hash FROM schema_functions ORDER BY revision DESC LIMIT 1";

pub const RECORD_FUNCTIONS: &str = "\
INSERT INTO schema_functions (revision, hash, migration) VALUES (:revision, :hash, :migration)";

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

/// A receiver's claim of a GitHub delivery (migration 0013): inserts the id
/// unless a row holds it that is handled, or claimed more recently than
/// `:stale_secs` ago; a row older than the horizon counts as absent. Returns a
/// row only to the one caller that got the claim (a concurrent insert of the
/// same id waits for the first and then finds the conflict). The same
/// statement purges at most 100 other rows older than the horizon, skipping
/// rows another purge holds, so no delivery pays for a backlog.
pub const CLAIM_DELIVERY: &str = "\
WITH purged AS (
    DELETE FROM webhook_deliveries WHERE delivery_id IN (
        SELECT delivery_id FROM webhook_deliveries
        WHERE claimed_at
              < clock_timestamp() - make_interval(secs => CAST(:horizon_secs AS double precision))
          AND delivery_id <> :delivery_id
        ORDER BY claimed_at LIMIT 100 FOR UPDATE SKIP LOCKED))
INSERT INTO webhook_deliveries AS d (delivery_id) VALUES (:delivery_id)
ON CONFLICT (delivery_id) DO UPDATE SET claimed_at = clock_timestamp(), handled_at = NULL
WHERE (d.handled_at IS NULL
       AND d.claimed_at
           < clock_timestamp() - make_interval(secs => CAST(:stale_secs AS double precision)))
   OR d.claimed_at
      < clock_timestamp() - make_interval(secs => CAST(:horizon_secs AS double precision))
RETURNING 'claimed'";

/// A claimed delivery the receiver answered 200: redeliveries are duplicates.
pub const DELIVERY_HANDLED: &str =
    "UPDATE webhook_deliveries SET handled_at = clock_timestamp() WHERE delivery_id = :delivery_id";

/// A claimed delivery that failed: its redelivery is acted on.
pub const RELEASE_DELIVERY: &str =
    "DELETE FROM webhook_deliveries WHERE delivery_id = :delivery_id AND handled_at IS NULL";
