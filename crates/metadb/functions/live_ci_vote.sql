-- One voter's vote: NULL for an unknown execution; otherwise {"view" (as
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
--
-- Channels (migration 0018): a 'mail' vote is one of the mailed `voters`. A
-- 'github' vote is `github:<login>`, lowercase (the caller checked the login;
-- admitted into the execution's github_voters with the vote), or, one person
-- one vote (migration 0021), an address that is one of the execution's mail
-- `voters`, cast by the login the operator's map names for it (p_github_login,
-- kept in votes.github_login; an address outside them raises before anything
-- is recorded). Such a vote is the same (execution, voter) row as the
-- person's mailed vote, and an older `github:<login>` vote of that login on
-- the execution is removed in the same statement, so the person counts once.
-- A changed vote records the channel it was last cast through. The caller
-- passes the stored request's task token hash it read, so a vote read
-- against a request that a newer one replaced records nothing.
CREATE OR REPLACE FUNCTION live_ci_vote(p_execution_id text, p_voter text, p_vote text, p_token_hash text,
                             p_lease_secs double precision, p_channel text DEFAULT 'mail',
                             p_github_login text DEFAULT NULL)
    RETURNS text
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    v_e executions;
    v_a approval_requests;
    v_view jsonb;
    v_recorded boolean := false;
    v_claimed boolean := false;
    v_is_voter boolean;
    v_login boolean := p_voter ~ '^github:[a-z0-9-]+$';
BEGIN
    IF p_channel NOT IN ('mail', 'github') THEN
        RAISE EXCEPTION 'live-ci: unknown vote channel %', quote_literal(p_channel);
    END IF;
    IF p_channel = 'github' AND NOT v_login AND strpos(p_voter, '@') <= 1 THEN
        RAISE EXCEPTION 'live-ci: voter % does not match the % channel',
            quote_literal(p_voter), p_channel;
    END IF;
    -- The login goes with, and only with, a GitHub vote under an address.
    IF (p_github_login IS NOT NULL) <> (p_channel = 'github' AND NOT v_login)
       OR p_github_login !~ '^[a-z0-9-]+$' THEN
        RAISE EXCEPTION 'live-ci: a GitHub vote under an address names its login, no other vote does (voter %, login %)',
            quote_literal(p_voter), quote_literal(coalesce(p_github_login, 'null'));
    END IF;
    SELECT * INTO v_e FROM executions WHERE execution_id = p_execution_id FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    -- A GitHub vote under an address: only one of this execution's mail
    -- voters (the person the operator's map names), never anyone else.
    IF p_channel = 'github' AND NOT v_login AND NOT (v_e.voters ? p_voter) THEN
        RAISE EXCEPTION 'live-ci: voter % is not a mail voter of execution %: a GitHub vote is recorded under an address only for one',
            quote_literal(p_voter), quote_literal(p_execution_id);
    END IF;
    SELECT * INTO v_a FROM approval_requests WHERE execution_id = p_execution_id;
    v_view := live_ci_vote_view(v_e);
    v_is_voter := CASE WHEN p_channel = 'mail' THEN v_e.voters ? p_voter ELSE true END;
    IF NOT v_is_voter OR v_a.execution_id IS NULL
       OR v_a.task_token_hash <> p_token_hash
       OR (v_e.decision IS NULL AND v_a.decision_sent_at IS NULL
           AND (v_a.task_token_ciphertext IS NULL OR v_e.status <> 'running')) THEN
        RETURN jsonb_build_object('view', v_view)::text;
    END IF;
    IF v_e.status = 'running' AND v_e.decision IS NULL THEN
        INSERT INTO votes (execution, voter, vote, channel, github_login)
        VALUES (v_e.id, p_voter, p_vote, p_channel, p_github_login)
        ON CONFLICT (execution, voter)
            DO UPDATE SET vote = excluded.vote, channel = excluded.channel,
                          github_login = excluded.github_login, updated_at = clock_timestamp();
        IF p_github_login IS NOT NULL THEN
            -- The same person's vote as `github:<login>`, cast before the
            -- map named them (its reason goes with it: ON DELETE CASCADE).
            DELETE FROM votes WHERE execution = v_e.id AND voter = 'github:' || p_github_login;
        END IF;
        IF v_login AND NOT (v_e.github_voters ? p_voter) THEN
            UPDATE executions SET github_voters = github_voters || to_jsonb(p_voter)
            WHERE id = v_e.id;
        END IF;
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
