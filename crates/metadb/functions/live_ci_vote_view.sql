-- What a vote link's page shows and is checked against: the execution, its
-- approval request (null when none) and the tally, from one snapshot.
CREATE OR REPLACE FUNCTION live_ci_vote_view(e executions) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT jsonb_build_object(
        'execution', live_ci_execution_json(e)::jsonb,
        'approval', (SELECT live_ci_approval_json(a)::jsonb FROM approval_requests a
                     WHERE a.execution_id = e.execution_id),
        'tally', live_ci_tally_json(e))
    $$;
