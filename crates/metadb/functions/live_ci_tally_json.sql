-- The votes cast so far and the thresholds, as the port's `Tally`.
CREATE OR REPLACE FUNCTION live_ci_tally_json(e executions) RETURNS jsonb
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
