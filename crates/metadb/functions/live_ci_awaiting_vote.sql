-- The execution of `p_unit` awaiting approval in the run of commit
-- `p_commit` (a merged pull request's merge commit), as live_ci_vote_view:
-- the newest running, undecided execution of the unit with a stored approval
-- request not yet answered. NULL when none awaits.
CREATE OR REPLACE FUNCTION live_ci_awaiting_vote(p_commit text, p_unit text) RETURNS text
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
