-- Votes from the pull request (issue 29 item 6): an account's GitHub voters
-- vote with `/live-ci approve|reject <unit>` on the merged pull request, in
-- the same tally as mailed votes. Each vote records its channel; a GitHub
-- voter's identity is `github:<login>` (lowercase), which no e-mail address
-- can equal, so the two never collide and one person voting both ways is two
-- voters (said in infra/README.md).
--
-- Who may vote from GitHub is decided by approval_response (a listed login,
-- or an active member of a listed team: only the GitHub API knows), not
-- here. A counted GitHub vote admits its voter into the execution's
-- `github_voters`, under the same row lock and in the same statement as the
-- vote, so the apply's check (`ExecutionRecord::apply_refusal`, which counts
-- only votes of the execution's own voters) counts it, and the mailed
-- `voters` (whom approval_request mails) stay e-mail addresses.
--
-- Roles (0015): live_ci_terra_run reads executions (all columns, so the new
-- one too: its apply check needs it) and votes' (execution, voter, vote);
-- it gets no UPDATE of github_voters and nothing on votes' channel. No other
-- role is granted anything: the votes are cast by approval_response's login.

ALTER TABLE votes ADD COLUMN channel text NOT NULL DEFAULT 'mail'
    CHECK (channel IN ('mail', 'github'));
-- A login has no '@', an address always one: the two identities never meet.
ALTER TABLE votes ADD CONSTRAINT votes_github_voter
    CHECK (channel <> 'github' OR voter ~ '^github:[a-z0-9-]+$');
ALTER TABLE executions ADD COLUMN github_voters jsonb NOT NULL DEFAULT '[]';

-- live_ci_vote (0012) with the vote's channel. A 'mail' vote is checked and
-- counted exactly as before. A 'github' vote's voter must be `github:<login>`,
-- lowercase
-- (the caller checked the login); it passes the same checks except the
-- membership of the mailed voters, is recorded (or changed) in the same row
-- with its channel, and goes through the same decide and hand-over. The
-- caller passes the stored request's task token hash it read, so a vote
-- read against a request that a newer one replaced records nothing.
DROP FUNCTION live_ci_vote(text, text, text, text, double precision);
CREATE FUNCTION live_ci_vote(p_execution_id text, p_voter text, p_vote text, p_token_hash text,
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
BEGIN
    IF p_channel NOT IN ('mail', 'github') THEN
        RAISE EXCEPTION 'live-ci: unknown vote channel %', quote_literal(p_channel);
    END IF;
    IF p_channel = 'github' AND p_voter !~ '^github:[a-z0-9-]+$' THEN
        RAISE EXCEPTION 'live-ci: voter % does not match the % channel',
            quote_literal(p_voter), p_channel;
    END IF;
    SELECT * INTO v_e FROM executions WHERE execution_id = p_execution_id FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
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
            DO UPDATE SET vote = excluded.vote, updated_at = clock_timestamp();
        IF p_channel = 'github' AND NOT (v_e.github_voters ? p_voter) THEN
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

-- The execution of `p_unit` awaiting approval in the run of commit
-- `p_commit` (a merged pull request's merge commit), as live_ci_vote_view:
-- the newest running, undecided execution of the unit with a stored approval
-- request not yet answered. NULL when none awaits.
CREATE FUNCTION live_ci_awaiting_vote(p_commit text, p_unit text) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT live_ci_vote_view(e)::text
    FROM executions e
    JOIN runs r ON r.run_id = e.run_id
    JOIN approval_requests a ON a.execution_id = e.execution_id
    WHERE r.commit_id = p_commit AND e.cfg_path = p_unit
      AND e.status = 'running' AND e.decision IS NULL AND a.decision_sent_at IS NULL
    ORDER BY e.id DESC
    LIMIT 1
    $$;
