-- An execution as the Step Function input plus tracking fields: every column
-- (to_jsonb keeps this in step with the table; decoders ignore the internal ones),
-- the run's fields, the voters by vote, and times in ms.
CREATE OR REPLACE FUNCTION live_ci_execution_json(e executions) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT (to_jsonb(e) || jsonb_build_object(
        'pr_id', r.pr_id, 'commit_id', r.commit_id, 'base_ref', r.base_ref, 'head_ref', r.head_ref,
        'approval_voters', coalesce((SELECT jsonb_agg(v.voter ORDER BY v.voter) FROM votes v
                                     WHERE v.execution = e.id AND v.vote = 'approve'), '[]'),
        'rejection_voters', coalesce((SELECT jsonb_agg(v.voter ORDER BY v.voter) FROM votes v
                                      WHERE v.execution = e.id AND v.vote = 'reject'), '[]'),
        'created_at', live_ci_ms(e.created_at), 'claimed_at', live_ci_ms(e.claimed_at),
        'finished_at', live_ci_ms(e.finished_at), 'updated_at', live_ci_ms(e.updated_at)))::text
    FROM runs r WHERE r.run_id = e.run_id
    $$;
