-- Records how a running execution ended ('succeeded' or 'failed'): the guarded
-- transition out of `running`, then for a success the counters of what waited
-- for it (its dependents' pending_deps; when it was the last of its account
-- and action, the account waiters' pending_accounts), for a failure the abort
-- of its dependents. Returns {"recorded": true, "aborted", "units"} or, when
-- the execution was not running (a repeat), {"recorded": false, "status"}.
CREATE OR REPLACE FUNCTION live_ci_finish(p_execution_id text, p_status text, p_reason text) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    v_id bigint;
    v_run_id bigint;
    v_account text;
    v_action text;
    v_rollback boolean;
    v_completed bigint;
    v_remaining integer;
BEGIN
    IF p_status IS NULL OR p_status NOT IN ('succeeded', 'failed') THEN
        RAISE EXCEPTION 'an execution ends as succeeded or failed, not %', quote_nullable(p_status)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE executions
    SET status = p_status, status_reason = p_reason,
        finished_at = clock_timestamp(), updated_at = clock_timestamp()
    WHERE execution_id = p_execution_id AND status = 'running'
    RETURNING id, run_id, account_name, action, is_rollback
    INTO v_id, v_run_id, v_account, v_action, v_rollback;
    IF NOT FOUND THEN
        RETURN jsonb_build_object('recorded', false, 'status',
            (SELECT status FROM executions WHERE execution_id = p_execution_id));
    END IF;
    IF p_status = 'failed' THEN
        RETURN jsonb_build_object('recorded', true) || live_ci_abort_dependents(p_execution_id);
    END IF;
    -- Rollbacks are outside the run's account counters. The row lock on the
    -- account's counter serializes its finishers, so exactly one sees zero.
    IF NOT v_rollback THEN
        UPDATE run_accounts SET remaining = remaining - 1
        WHERE run_id = v_run_id AND account_name = v_account AND action = v_action
        RETURNING id, remaining INTO v_completed, v_remaining;
        IF v_remaining IS DISTINCT FROM 0 THEN
            v_completed := NULL;
        END IF;
    END IF;
    -- Locks, in id order, every execution whose counters this success changes,
    -- so two finishers sharing dependents cannot deadlock.
    PERFORM 1 FROM executions e
    WHERE e.id IN (SELECT d.execution FROM execution_deps d WHERE d.depends_on = v_id)
       OR e.id IN (SELECT w.execution FROM execution_account_waits w
                   WHERE w.run_account = v_completed)
    ORDER BY e.id FOR NO KEY UPDATE;
    UPDATE executions e SET pending_deps = e.pending_deps - 1
    FROM execution_deps d
    WHERE d.depends_on = v_id AND e.id = d.execution;
    IF v_completed IS NOT NULL THEN
        UPDATE executions e SET pending_accounts = e.pending_accounts - 1
        FROM execution_account_waits w
        WHERE w.run_account = v_completed AND e.id = w.execution;
    END IF;
    RETURN jsonb_build_object('recorded', true, 'aborted', '[]'::jsonb, 'units', '[]'::jsonb);
END
$$;
