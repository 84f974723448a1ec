-- One person, one vote across mail and GitHub (issue 29 item 6). The module
-- variable `voter_github_logins` maps a mail voter's address to their GitHub
-- login (parsed once: live_ci_core::voter_identity). approval_response
-- resolves a comment's author through that map, from its configuration only,
-- and casts the vote of a mapped login whose address is one of the
-- execution's mail `voters` under that address, with channel 'github': the
-- same (execution, voter) row as the person's mailed vote, so voting both
-- ways is one vote, changeable until the decision.
--
-- What this admits, and nothing wider:
-- * a 'github' vote is `github:<login>` (as 0018: admitted into the
--   execution's github_voters with the vote), or an address that is one of
--   the execution's mail `voters`: an address outside them raises, before
--   anything is recorded. Which login stands for which address is the map's,
--   which the database does not hold: the caller resolved it.
-- * a 'mail' vote is unchanged (0012/0018: one of the mailed voters).
-- * a changed vote records the channel it was last cast through.
--
-- Roles (0015): no grant changes. live_ci_terra_run still reads votes'
-- (execution, voter, vote) only; the function is called by approval_response's
-- login.

ALTER TABLE votes DROP CONSTRAINT votes_github_voter;
-- A GitHub vote is a login's (`github:…`) or a person's address; which
-- address is the function's check below (the row alone cannot see voters).
ALTER TABLE votes ADD CONSTRAINT votes_github_voter
    CHECK (channel <> 'github' OR voter ~ '^github:[a-z0-9-]+$' OR strpos(voter, '@') > 1);

CREATE OR REPLACE FUNCTION live_ci_vote(p_execution_id text, p_voter text, p_vote text, p_token_hash text,
                                        p_lease_secs double precision, p_channel text DEFAULT 'mail')
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
        INSERT INTO votes (execution, voter, vote, channel) VALUES (v_e.id, p_voter, p_vote, p_channel)
        ON CONFLICT (execution, voter)
            DO UPDATE SET vote = excluded.vote, channel = excluded.channel,
                          updated_at = clock_timestamp();
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
