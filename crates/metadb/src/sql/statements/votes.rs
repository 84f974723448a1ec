//! Votes: the cast, its context, the tally and the decision
//! (`store/approvals.rs`).

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

/// An execution's status, decision and whether `:voter` is among its voters, as JSON.
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
