-- The one-time decision: the decision for the one caller whose update flips
-- it from NULL, NULL for everyone else. Rejection wins when both thresholds
-- are met.
CREATE OR REPLACE FUNCTION live_ci_decide(p_execution_id text) RETURNS text
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    v_decision text;
BEGIN
    WITH t AS (
        SELECT e.id,
               (SELECT count(*) FROM votes v WHERE v.execution = e.id AND v.vote = 'approve') AS approvals,
               (SELECT count(*) FROM votes v WHERE v.execution = e.id AND v.vote = 'reject') AS rejections
        FROM executions e WHERE e.execution_id = p_execution_id
    )
    UPDATE executions e
    SET decision = CASE WHEN t.rejections >= e.min_rejection_count THEN 'reject' ELSE 'approve' END,
        updated_at = clock_timestamp()
    FROM t
    WHERE e.id = t.id AND e.decision IS NULL AND e.status = 'running'
      AND (t.rejections >= e.min_rejection_count OR t.approvals >= e.min_approval_count)
    RETURNING e.decision INTO v_decision;
    RETURN v_decision;
END
$$;
