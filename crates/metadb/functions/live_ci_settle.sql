-- One Step Functions status change: the execution the event names, then (when
-- the event is an end: p_status 'succeeded' or 'failed') its finish, then the
-- claim of its run and the run's progress, in one transaction. NULL for a name
-- no execution has. An execution with a different ARN recorded is another
-- state machine's that shares the name: {"execution", "foreign": true}, and
-- nothing changes. Otherwise {"execution" (as read before the finish),
-- "finish" (live_ci_finish's answer; absent for a status that is not an end),
-- "claimed", "progress"}.
CREATE OR REPLACE FUNCTION live_ci_settle(p_execution_id text, p_arn text, p_status text, p_reason text,
                               p_limit bigint) RETURNS text
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    v_execution executions;
    v_result jsonb;
BEGIN
    SELECT * INTO v_execution FROM executions WHERE execution_id = p_execution_id;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    v_result := jsonb_build_object('execution', live_ci_execution_json(v_execution)::jsonb);
    IF v_execution.sfn_execution_arn IS NOT NULL AND v_execution.sfn_execution_arn <> p_arn THEN
        RETURN (v_result || jsonb_build_object('foreign', true))::text;
    END IF;
    IF p_status IS NOT NULL THEN
        v_result := v_result
            || jsonb_build_object('finish', live_ci_finish(p_execution_id, p_status, p_reason));
    END IF;
    RETURN (v_result || live_ci_claim(v_execution.run_id, p_limit))::text;
END
$$;
