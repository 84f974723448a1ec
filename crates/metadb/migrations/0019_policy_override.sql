-- Policy override (issue 32 item 3): with the module variable
-- `policy_override` on, a plan the policies deny still goes to the vote, with
-- the denials recorded here; an approve vote on such a plan needs a reason,
-- recorded beside the vote. Own tables only: `votes` and `live_ci_vote` are
-- left as they are (another change adds a column to votes), and the vote with
-- a reason is a function that calls `live_ci_vote` in the same transaction.

-- The denials of one execution's plan, keyed by the plan's hash: a re-plan
-- that passes records a new plan hash, and the old denials stop applying
-- without anything being deleted (terra-run may not delete).
CREATE TABLE policy_denials (
    execution bigint PRIMARY KEY REFERENCES executions (id),
    plan_sha256 text NOT NULL,
    denials jsonb NOT NULL CHECK (jsonb_typeof(denials) = 'array' AND jsonb_array_length(denials) > 0),
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- A voter's reason, kept with (and only with) the vote it explains.
CREATE TABLE vote_reasons (
    execution bigint NOT NULL,
    voter text NOT NULL,
    reason text NOT NULL CHECK (btrim(reason) <> ''),
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (execution, voter),
    FOREIGN KEY (execution, voter) REFERENCES votes (execution, voter) ON DELETE CASCADE
);

-- The denials that apply to the execution's recorded plan: an empty array
-- when none (no denial, or they judged an earlier plan).
CREATE FUNCTION live_ci_policy_denials(e executions) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT coalesce((SELECT d.denials FROM policy_denials d
                     WHERE d.execution = e.id AND d.plan_sha256 = e.plan_sha256), '[]')
    $$;

-- A voter's POST (or pull request comment: p_channel, 0018) with its
-- reason. An approve of a plan with denials and no
-- reason is refused before anything changes: {"view", "reason_required":
-- true}. Otherwise `live_ci_vote`'s answer, and when its vote was recorded
-- the reason is stored with it (an empty reason removes an older one: it
-- explained another vote).
CREATE FUNCTION live_ci_vote_reasoned(p_execution_id text, p_voter text, p_vote text,
                                      p_token_hash text, p_lease_secs double precision,
                                      p_reason text, p_channel text DEFAULT 'mail') RETURNS text
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    v_e executions;
    v_reason text := nullif(btrim(coalesce(p_reason, '')), '');
    v_answer text;
BEGIN
    -- The same row lock live_ci_vote takes: the denials read here are the
    -- ones in force when the vote is cast.
    SELECT * INTO v_e FROM executions WHERE execution_id = p_execution_id FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF p_vote = 'approve' AND v_reason IS NULL
       AND jsonb_array_length(live_ci_policy_denials(v_e)) > 0 THEN
        RETURN jsonb_build_object('view', live_ci_vote_view(v_e), 'reason_required', true)::text;
    END IF;
    v_answer := live_ci_vote(p_execution_id, p_voter, p_vote, p_token_hash, p_lease_secs, p_channel);
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

-- terra-run records the denials of the plan it judged (issue 27's role: its
-- own statements only). It may not delete them, nor touch the reasons.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'live_ci_terra_run') THEN
        GRANT SELECT, INSERT, UPDATE (plan_sha256, denials, recorded_at) ON policy_denials TO live_ci_terra_run;
    END IF;
END
$$;
