//! The statements of the approval store (`0002_approvals.sql`, the task token
//! encrypted since `0006_token_cipher.sql`, the plan's words since `0007_plan_summary.sql`, a vote in one call since `0012_vote.sql`), in the same
//! dialect as [`super::statements`]: `:name` parameters, one JSON text column.

/// Stores an approval request and says what it did, with what mailing needs,
/// in one round trip: {"stored": `unknown` (no such execution), `stored` (new,
/// or a new task token replacing one whose decision was not handed over),
/// `decided` (hand-over taken: nothing changes) or `repeated` (the same token
/// again), "expires_at" (the stored request's, in Unix ms: the new one when
/// stored, the earlier one when repeated), "mailed" (the voters already mailed
/// for this task token), "run_id" (the execution's run; null when unknown)}.
/// `prev` and the mails are read as they were before
/// the upsert (one snapshot for the whole statement).
pub const STORE_APPROVAL_REQUEST: &str = "\
WITH e AS (
    SELECT execution_id, run_id FROM executions WHERE execution_id = :execution_id
), prev AS (
    SELECT decision_sent_at IS NOT NULL OR delivery_claimed_at IS NOT NULL AS decided,
           live_ci_ms(expires_at) AS expires_at
    FROM approval_requests WHERE execution_id = :execution_id
), up AS (
    INSERT INTO approval_requests (execution_id, sfn_execution_arn, task_token_ciphertext,
        task_token_hash,
        to_add, to_change, to_destroy, plan_summary, logs_url, expires_at)
    SELECT e.execution_id, :sfn_execution_arn, :task_token_ciphertext, :task_token_hash,
        :to_add, :to_change, :to_destroy, :plan_summary, :logs_url,
        to_timestamp(CAST(:expires_at AS double precision) / 1000)
    FROM e
    ON CONFLICT (execution_id) DO UPDATE SET
        sfn_execution_arn = excluded.sfn_execution_arn,
        task_token_ciphertext = excluded.task_token_ciphertext,
        task_token_hash = excluded.task_token_hash, to_add = excluded.to_add,
        to_change = excluded.to_change, to_destroy = excluded.to_destroy,
        plan_summary = excluded.plan_summary, logs_url = excluded.logs_url, expires_at = excluded.expires_at,
        requested_at = clock_timestamp()
    WHERE approval_requests.task_token_hash <> excluded.task_token_hash
      AND approval_requests.decision_sent_at IS NULL
      AND approval_requests.delivery_claimed_at IS NULL
    RETURNING execution_id, live_ci_ms(expires_at) AS expires_at
)
SELECT json_build_object(
    'stored', CASE WHEN NOT EXISTS (SELECT 1 FROM e) THEN 'unknown'
                   WHEN EXISTS (SELECT 1 FROM up) THEN 'stored'
                   WHEN coalesce((SELECT decided FROM prev), false) THEN 'decided'
                   ELSE 'repeated' END,
    'expires_at', coalesce((SELECT expires_at FROM up), (SELECT expires_at FROM prev)),
    'run_id', (SELECT run_id FROM e),
    'mailed', coalesce((SELECT json_agg(m.voter ORDER BY m.voter) FROM approval_mails m
                        WHERE m.execution_id = :execution_id
                          AND m.task_token_hash = :task_token_hash), '[]'))::text";

/// An execution's approval request as JSON (`live_ci_approval_json`).
pub const APPROVAL_REQUEST: &str = "\
SELECT live_ci_approval_json(a) FROM approval_requests a WHERE a.execution_id = :execution_id";

/// The voters already mailed for an execution's task token, sorted.
pub const MAILED_VOTERS: &str = "\
SELECT voter FROM approval_mails
WHERE execution_id = :execution_id AND task_token_hash = :task_token_hash ORDER BY voter";

/// Records one voter mailed for a task token; returns the voter only when new.
pub const RECORD_MAILED: &str = "\
INSERT INTO approval_mails (execution_id, task_token_hash, voter, message_id)
VALUES (:execution_id, :task_token_hash, :voter, :message_id)
ON CONFLICT DO NOTHING
RETURNING voter";

/// [`RECORD_MAILED`] for several voters at once: `:mails` is a JSON array of
/// {"voter", "message_id"}; returns the voters not recorded before.
pub const RECORD_MAILS: &str = "\
INSERT INTO approval_mails (execution_id, task_token_hash, voter, message_id)
SELECT :execution_id, :task_token_hash, m.voter, m.message_id
FROM jsonb_to_recordset(CAST(:mails AS jsonb)) AS m(voter text, message_id text)
ON CONFLICT DO NOTHING
RETURNING voter";

/// The hand-over of a decided execution's task token
/// (`live_ci_claim_delivery`, migration 0012): a row for exactly one caller; a
/// claim older than the lease (its caller died mid-send) may be taken again.
pub const CLAIM_DECISION_DELIVERY: &str = "\
SELECT c FROM live_ci_claim_delivery(CAST(:execution_id AS text),
                                     CAST(:lease_secs AS double precision)) AS c
WHERE c IS NOT NULL";

/// What a vote link's page shows, in one read (`live_ci_vote_view`, 0012).
/// With the policy denials of the recorded plan (`live_ci_policy_denials`,
/// 0019) beside it.
pub const VOTE_VIEW: &str = "\
SELECT (live_ci_vote_view(e) || jsonb_build_object('policy_denials', live_ci_policy_denials(e)))::text
FROM executions e WHERE e.execution_id = :execution_id";

/// A voter's POST (or pull request comment: `channel`, migration 0018) in one
/// round trip (`live_ci_vote`, migration 0012): checks,
/// records the vote, decides, tallies and claims the hand-over of a decision,
/// under the execution's row lock; through `live_ci_vote_reasoned` (0019),
/// which refuses an approve of a plan the policies denied without a reason
/// and stores the reason with the vote.
pub const VOTE: &str = "\
SELECT live_ci_vote_reasoned(CAST(:execution_id AS text), CAST(:voter AS text), CAST(:vote AS text),
                             CAST(:task_token_hash AS text), CAST(:lease_secs AS double precision),
                             CAST(:reason AS text), CAST(:channel AS text),
                             CAST(:github_login AS text))";

/// The execution of a unit awaiting approval in the run of a merge commit
/// (`live_ci_awaiting_vote`, migration 0018), as [`VOTE_VIEW`] reads it.
pub const AWAITING_VOTE: &str = "\
SELECT live_ci_awaiting_vote(CAST(:commit AS text), CAST(:unit AS text))";

/// Records how the decision was handed to Step Functions, once: returns the
/// execution id only for the first delivery.
pub const RECORD_DECISION_DELIVERY: &str = "\
UPDATE approval_requests
SET decision_sent_at = clock_timestamp(), delivery = :delivery, delivery_reason = :delivery_reason
WHERE execution_id = :execution_id AND decision_sent_at IS NULL
RETURNING execution_id";

/// The run page's units (`live_ci_core::run_view::UnitView`), in the run's
/// priority order, at most `:limit` (a Data API answer stops at 1 MiB): each
/// execution, whether a plan was saved, what its approval request recorded
/// of the plan (never the task token nor its hash) and the votes with their
/// time. The run itself is `RUN_BY_ID`.
pub const RUN_VIEW_UNITS: &str = "\
SELECT jsonb_build_object(
    'execution', live_ci_execution_json(e)::jsonb,
    'planned', e.plan_sha256 IS NOT NULL,
    'plan', (SELECT jsonb_build_object('to_add', a.to_add, 'to_change', a.to_change,
                                       'to_destroy', a.to_destroy, 'plan_summary', a.plan_summary,
                                       'logs_url', a.logs_url,
                                       'requested_at', live_ci_ms(a.requested_at))
             FROM approval_requests a WHERE a.execution_id = e.execution_id),
    'votes', coalesce((SELECT jsonb_agg(jsonb_build_object('voter', v.voter, 'vote', v.vote,
                                                           'at', live_ci_ms(v.updated_at),
                                                           'reason', r.reason,
                                                           'channel', v.channel)
                                        ORDER BY v.updated_at, v.voter)
                       FROM votes v LEFT JOIN vote_reasons r
                            ON r.execution = v.execution AND r.voter = v.voter
                       WHERE v.execution = e.id), '[]'),
    'policy_denials', live_ci_policy_denials(e))::text
FROM executions e WHERE e.run_id = :run_id
ORDER BY e.priority DESC, e.seq
LIMIT :limit";
