-- A voter's vote (or pull request comment: p_channel, p_github_login as
-- live_ci_vote's) with its reason. An approve of a plan with denials and no
-- reason is refused before anything changes: {"view", "reason_required":
-- true}. Otherwise `live_ci_vote`'s answer, and when its vote was recorded
-- the reason is stored with it (an empty reason removes an older one: it
-- explained another vote).
CREATE OR REPLACE FUNCTION live_ci_vote_reasoned(p_execution_id text, p_voter text, p_vote text,
                                      p_token_hash text, p_lease_secs double precision,
                                      p_reason text, p_channel text DEFAULT 'mail',
                                      p_github_login text DEFAULT NULL) RETURNS text
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    v_e executions;
    v_reason text := nullif(btrim(coalesce(p_reason, '')), '');
    v_answer text;
BEGIN
    SELECT * INTO v_e FROM executions WHERE execution_id = p_execution_id FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF p_vote = 'approve' AND v_reason IS NULL
       AND jsonb_array_length(live_ci_policy_denials(v_e)) > 0 THEN
        RETURN jsonb_build_object('view', live_ci_vote_view(v_e), 'reason_required', true)::text;
    END IF;
    v_answer := live_ci_vote(p_execution_id, p_voter, p_vote, p_token_hash, p_lease_secs, p_channel,
                             p_github_login);
    IF coalesce((CAST(v_answer AS jsonb) -> 'cast' ->> 'recorded') = 'true', false) THEN
        IF v_reason IS NULL THEN
            DELETE FROM vote_reasons WHERE execution = v_e.id AND voter = p_voter;
        ELSE
            INSERT INTO vote_reasons (execution, voter, reason) VALUES (v_e.id, p_voter, v_reason)
            ON CONFLICT (execution, voter)
                DO UPDATE SET reason = excluded.reason, updated_at = clock_timestamp();
        END IF;
    END IF;
    RETURN v_answer;
END
$$;
