-- A vote in one round trip (issue 17): approval_response's POST read the
-- execution, the approval request, cast the vote, tallied, decided, tallied
-- again, claimed the hand-over and read the request again (eight Data API
-- calls, 20–50 ms each in AWS) before SendTaskSuccess, on every unit's path.
-- Now `live_ci_vote` does all of it in one call, and the page a link opens is
-- one read (`live_ci_vote_view`). The decision, the hand-over claim and the
-- tally are functions the single-purpose statements call too, so each move
-- has one implementation.

-- The votes cast so far and the thresholds, as the port's `Tally`.
CREATE FUNCTION live_ci_tally_json(e executions) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT jsonb_build_object(
        'approval_voters', coalesce((SELECT jsonb_agg(v.voter ORDER BY v.voter) FROM votes v
                                     WHERE v.execution = e.id AND v.vote = 'approve'), '[]'),
        'rejection_voters', coalesce((SELECT jsonb_agg(v.voter ORDER BY v.voter) FROM votes v
                                      WHERE v.execution = e.id AND v.vote = 'reject'), '[]'),
        'min_approval_count', e.min_approval_count,
        'min_rejection_count', e.min_rejection_count,
        'decision', e.decision)
    $$;

-- What a vote link's page shows and is checked against: the execution, its
-- approval request (null when none) and the tally, from one snapshot.
CREATE FUNCTION live_ci_vote_view(e executions) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT jsonb_build_object(
        'execution', live_ci_execution_json(e)::jsonb,
        'approval', (SELECT live_ci_approval_json(a)::jsonb FROM approval_requests a
                     WHERE a.execution_id = e.execution_id),
        'tally', live_ci_tally_json(e))
    $$;

-- The one-time decision: the decision for the one caller whose update flips
-- it from NULL, NULL for everyone else. Rejection wins when both thresholds
-- are met.
CREATE FUNCTION live_ci_decide(p_execution_id text) RETURNS text
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

-- The hand-over of a decided execution's task token: the execution id for
-- exactly one caller while no delivery is recorded and no other claim is
-- younger than the lease, NULL otherwise. Concurrent callers queue on the
-- request's row lock and re-check the WHERE clause against the winner's update.
CREATE FUNCTION live_ci_claim_delivery(p_execution_id text, p_lease_secs double precision)
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

-- One voter's POST: NULL for an unknown execution; otherwise {"view" (as
-- live_ci_vote_view, read under the lock, before the vote), "cast"}. "cast"
-- is absent when the view refuses the vote as approval_response does (not a
-- voter, no request, a link of another task token, voting closed: undecided
-- and undeliverable or no longer running); then nothing changes. Otherwise
-- {"recorded" (false: the execution was decided or ended first), "status",
-- "decision" (the execution's, after this vote's decide), "tally" (after it),
-- "claimed" (this caller holds the hand-over and sends the token), "approval"
-- (the request after the claim: the token to send, or the delivery so far)}.
--
-- The execution's row lock is taken first, in its own statement: the votes of
-- one execution queue on it, and each statement below takes a fresh snapshot
-- once it is held, so the decide counts every vote committed before it and
-- exactly one caller flips the decision and takes the claim. A vote whose
-- execution just changed (decided, ended) is still answered from the row as
-- locked.
CREATE FUNCTION live_ci_vote(p_execution_id text, p_voter text, p_vote text, p_token_hash text,
                             p_lease_secs double precision) RETURNS text
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    v_e executions;
    v_a approval_requests;
    v_view jsonb;
    v_recorded boolean := false;
    v_claimed boolean := false;
BEGIN
    SELECT * INTO v_e FROM executions WHERE execution_id = p_execution_id FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    SELECT * INTO v_a FROM approval_requests WHERE execution_id = p_execution_id;
    v_view := live_ci_vote_view(v_e);
    IF NOT (v_e.voters ? p_voter) OR v_a.execution_id IS NULL
       OR v_a.task_token_hash <> p_token_hash
       OR (v_e.decision IS NULL AND v_a.decision_sent_at IS NULL
           AND (v_a.task_token_ciphertext IS NULL OR v_e.status <> 'running')) THEN
        RETURN jsonb_build_object('view', v_view)::text;
    END IF;
    IF v_e.status = 'running' AND v_e.decision IS NULL THEN
        INSERT INTO votes (execution, voter, vote) VALUES (v_e.id, p_voter, p_vote)
        ON CONFLICT (execution, voter)
            DO UPDATE SET vote = excluded.vote, updated_at = clock_timestamp();
        v_recorded := true;
        PERFORM live_ci_decide(p_execution_id);
    END IF;
    SELECT * INTO v_e FROM executions WHERE id = v_e.id;
    IF v_e.decision IS NOT NULL THEN
        v_claimed := live_ci_claim_delivery(p_execution_id, p_lease_secs) IS NOT NULL;
    END IF;
    RETURN jsonb_build_object('view', v_view, 'cast', jsonb_build_object(
        'recorded', v_recorded,
        'status', v_e.status,
        'decision', v_e.decision,
        'tally', live_ci_tally_json(v_e),
        'claimed', v_claimed,
        'approval', (SELECT live_ci_approval_json(a)::jsonb FROM approval_requests a
                     WHERE a.execution_id = p_execution_id)))::text;
END
$$;
