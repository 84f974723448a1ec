-- The guarded end of a run (only a running run with nothing waiting or
-- running; succeeded when every execution succeeded), the release of its
-- merge lock and the hand-over to the next run, under the merge_lock row
-- (which serializes run creation and hand-over: both read "is a run
-- running?" and act on it). Returns {"finished": status or null (not
-- finishable, or finished by another caller), "next_run", and what the run's
-- statuses and the lock's mirror need, read in the same transaction: "run",
-- "progress", "superseded" (the runs it covered, oldest on the trunk first),
-- "merge_lock"}.
CREATE OR REPLACE FUNCTION live_ci_finish_run(p_run_id bigint) RETURNS text
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    v_status text;
    v_next bigint;
    v_run runs;
BEGIN
    PERFORM 1 FROM merge_lock WHERE singleton FOR UPDATE;
    WITH counts AS (
        SELECT count(*) FILTER (WHERE status IN ('waiting', 'running')) AS open,
               count(*) FILTER (WHERE status <> 'succeeded') AS unsuccessful
        FROM executions WHERE run_id = p_run_id
    )
    UPDATE runs r
    SET status = CASE WHEN counts.unsuccessful = 0 THEN 'succeeded' ELSE 'failed' END,
        finished_at = clock_timestamp()
    FROM counts
    WHERE r.run_id = p_run_id AND r.status = 'running' AND counts.open = 0
    RETURNING r.status INTO v_status;
    IF FOUND THEN
        UPDATE merge_lock SET run_id = NULL, locked_at = NULL
        WHERE singleton AND run_id = p_run_id;
        v_next := live_ci_start_next_run();
    END IF;
    SELECT * INTO v_run FROM runs WHERE run_id = p_run_id;
    RETURN jsonb_build_object(
        'finished', v_status,
        'next_run', v_next,
        'run', CASE WHEN FOUND THEN live_ci_run_json(v_run)::jsonb END,
        'progress', live_ci_progress(p_run_id),
        'superseded', coalesce((SELECT jsonb_agg(live_ci_run_json(r)::jsonb
                                                 ORDER BY r.trunk_seq, r.run_id)
                                FROM runs r WHERE r.superseded_by = p_run_id), '[]'),
        'merge_lock', live_ci_merge_lock_json())::text;
END
$$;
