-- Counts of a run's executions by status.
CREATE OR REPLACE FUNCTION live_ci_progress(p_run_id bigint) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT jsonb_build_object(
        'waiting', count(*) FILTER (WHERE status = 'waiting'),
        'running', count(*) FILTER (WHERE status = 'running'),
        'succeeded', count(*) FILTER (WHERE status = 'succeeded'),
        'failed', count(*) FILTER (WHERE status = 'failed'),
        'aborted', count(*) FILTER (WHERE status = 'aborted'))
    FROM executions WHERE run_id = p_run_id
    $$;
