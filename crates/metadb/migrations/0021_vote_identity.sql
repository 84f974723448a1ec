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
-- * a GitHub vote under an address names the login that cast it
--   (p_github_login, kept in votes.github_login for the record); a vote
--   that login cast as `github:<login>` on the same execution before the map
--   named it (the map set while the vote was open) is the same person's
--   older vote: it is removed in the same statement, so the person still
--   counts once. The reverse (a map entry removed while open) cannot be
--   seen here: without the map nothing ties the two.
--
-- Roles (0015): no grant changes. live_ci_terra_run still reads votes'
-- (execution, voter, vote) only; the function is called by approval_response's
-- login.

ALTER TABLE votes DROP CONSTRAINT votes_github_voter;
-- Who cast a GitHub vote recorded under an address; NULL for every other vote.
ALTER TABLE votes ADD COLUMN github_login text
    CHECK (github_login IS NULL OR (channel = 'github' AND strpos(voter, '@') > 1
                                    AND github_login ~ '^[a-z0-9-]+$'));
-- A GitHub vote is a login's (`github:…`) or a person's address; which
-- address is the function's check below (the row alone cannot see voters).
ALTER TABLE votes ADD CONSTRAINT votes_github_voter
    CHECK (channel <> 'github' OR voter ~ '^github:[a-z0-9-]+$' OR strpos(voter, '@') > 1);

-- live_ci_vote_reasoned (0019) calls live_ci_vote: both are replaced, each
-- with one more parameter (the old signatures dropped, so no call can reach
-- an overload that skips the checks below).
DROP FUNCTION live_ci_vote_reasoned(text, text, text, text, double precision, text, text);
DROP FUNCTION live_ci_vote(text, text, text, text, double precision, text);
CREATE FUNCTION live_ci_vote(p_execution_id text, p_voter text, p_vote text, p_token_hash text,
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

-- 0019's function with the login passed through; otherwise unchanged.
CREATE FUNCTION live_ci_vote_reasoned(p_execution_id text, p_voter text, p_vote text,
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
