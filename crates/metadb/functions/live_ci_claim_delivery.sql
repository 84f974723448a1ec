-- The hand-over of a decided execution's task token: the execution id for
-- exactly one caller while no delivery is recorded and no other claim is
-- younger than the lease, NULL otherwise. Concurrent callers queue on the
-- request's row lock and re-check the WHERE clause against the winner's update.
CREATE OR REPLACE FUNCTION live_ci_claim_delivery(p_execution_id text, p_lease_secs double precision)
    RETURNS text
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    v_claimed text;
BEGIN
    UPDATE approval_requests a SET delivery_claimed_at = clock_timestamp()
    FROM executions e
    WHERE a.execution_id = p_execution_id AND e.execution_id = a.execution_id
      AND e.decision IS NOT NULL AND a.decision_sent_at IS NULL
      AND (a.delivery_claimed_at IS NULL
           OR a.delivery_claimed_at < clock_timestamp() - make_interval(secs => p_lease_secs))
    RETURNING a.execution_id INTO v_claimed;
    RETURN v_claimed;
END
$$;
