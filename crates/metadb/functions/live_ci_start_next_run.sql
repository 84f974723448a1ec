-- Hands a free merge lock to the queued run newest on the trunk; returns the
-- run it started, if any. The caller holds the merge_lock row (FOR UPDATE), as
-- run creation and a run's finish do.
--
-- When no run is running: every queued run but the newest on the trunk is
-- superseded (by it, whose range, from the last started run, covers theirs),
-- and so is a queued run no newer than the last started run (a merge whose
-- create-deploy-stack lost the race to a newer one). An operator's retry sits
-- at its run's own trunk position and is not superseded by it. The executions
-- of a superseded run never start.
CREATE OR REPLACE FUNCTION live_ci_start_next_run() RETURNS bigint
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    v_superseded bigint[];
    v_next bigint;
BEGIN
    WITH idle AS (
        SELECT NOT EXISTS (SELECT 1 FROM runs WHERE status = 'running') AS yes
    ), last_started AS (
        SELECT run_id, trunk_seq FROM runs WHERE status IN ('succeeded', 'failed')
        ORDER BY trunk_seq DESC, run_id DESC LIMIT 1
    ), next AS (
        SELECT q.run_id FROM runs q, idle
        WHERE idle.yes AND q.status = 'queued'
          AND (q.trunk_seq > coalesce((SELECT trunk_seq FROM last_started), -1)
               OR (q.retry_of IS NOT NULL
                   AND q.trunk_seq >= coalesce((SELECT trunk_seq FROM last_started), -1)))
        ORDER BY q.trunk_seq DESC, q.run_id DESC LIMIT 1
    ), superseded AS (
        UPDATE runs r
        SET status = 'superseded', finished_at = clock_timestamp(),
            superseded_by = coalesce((SELECT run_id FROM next), (SELECT run_id FROM last_started))
        FROM idle
        WHERE idle.yes AND r.status = 'queued'
          AND r.run_id <> coalesce((SELECT run_id FROM next), -1)
        RETURNING r.run_id
    )
    SELECT coalesce(array_agg(run_id), '{}') INTO v_superseded FROM superseded;
    UPDATE executions e
    SET status = 'aborted',
        status_reason = 'superseded by run #' || coalesce(r.superseded_by::text, '?'),
        finished_at = clock_timestamp(), updated_at = clock_timestamp()
    FROM runs r
    WHERE r.run_id = ANY (v_superseded) AND r.status = 'superseded' AND e.run_id = r.run_id
      AND e.status = 'waiting';
    -- After the supersession the newest queued run is the only one.
    WITH next AS (
        SELECT run_id FROM runs
        WHERE status = 'queued' AND NOT EXISTS (SELECT 1 FROM runs WHERE status = 'running')
        ORDER BY trunk_seq DESC, run_id DESC LIMIT 1
    ), started AS (
        UPDATE runs r SET status = 'running', started_at = clock_timestamp()
        FROM next WHERE r.run_id = next.run_id
        RETURNING r.run_id
    ), locked AS (
        UPDATE merge_lock m SET run_id = started.run_id, locked_at = clock_timestamp()
        FROM started WHERE m.singleton
        RETURNING m.run_id
    )
    SELECT run_id INTO v_next FROM locked;
    RETURN v_next;
END
$$;
