-- Aborts the waiting transitive dependents of a failed execution, following
-- directory edges and account waits (a failed member keeps its account from
-- ever completing); with fail-fast, every waiting execution of the run.
-- Account nodes are negative ids so one recursive term walks both kinds.
-- Returns {"aborted": [execution ids], "units": [what a commit status needs
-- of the first 1000, in id order]}: the ids of a 10,000-unit fail-fast stay
-- well under the Data API's 1 MiB response, the details of all would not.
CREATE OR REPLACE FUNCTION live_ci_abort_dependents(p_execution_id text) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    v_result jsonb;
BEGIN
    WITH RECURSIVE failed AS (
        SELECT e.id, e.run_id, r.fail_fast FROM executions e JOIN runs r ON r.run_id = e.run_id
        WHERE e.execution_id = p_execution_id AND e.status = 'failed'
    ), edges(src, dst) AS MATERIALIZED (
        SELECT d.depends_on, d.execution
        FROM execution_deps d JOIN executions e ON e.id = d.execution JOIN failed f ON e.run_id = f.run_id
        UNION ALL
        SELECT e.id, -ra.id
        FROM executions e JOIN failed f ON e.run_id = f.run_id
        JOIN run_accounts ra
          ON ra.run_id = e.run_id AND ra.account_name = e.account_name AND ra.action = e.action
        UNION ALL
        SELECT -w.run_account, w.execution
        FROM execution_account_waits w JOIN run_accounts ra ON ra.id = w.run_account
        JOIN failed f ON ra.run_id = f.run_id
    ), doomed(node) AS (
        SELECT id FROM failed
        UNION
        SELECT edges.dst FROM doomed JOIN edges ON edges.src = doomed.node
    ), targets AS (
        SELECT e.id, e.id IN (SELECT node FROM doomed) AS dependent
        FROM executions e JOIN failed f ON e.run_id = f.run_id
        WHERE e.status = 'waiting' AND (f.fail_fast OR e.id IN (SELECT node FROM doomed))
        ORDER BY e.id
        FOR NO KEY UPDATE OF e
    ), aborted AS (
        UPDATE executions e
        SET status = 'aborted',
            status_reason = CASE WHEN targets.dependent THEN 'ancestor failed' ELSE 'fail-fast' END,
            finished_at = clock_timestamp(), updated_at = clock_timestamp()
        FROM targets WHERE e.id = targets.id AND e.status = 'waiting'
        RETURNING e.id, e.execution_id, e.cfg_path, e.is_rollback, e.status_reason
    )
    SELECT jsonb_build_object(
        'aborted', coalesce((SELECT jsonb_agg(a.execution_id ORDER BY a.id) FROM aborted a), '[]'),
        'units', coalesce((SELECT jsonb_agg(jsonb_build_object(
                               'execution_id', u.execution_id, 'cfg_path', u.cfg_path,
                               'is_rollback', u.is_rollback, 'status_reason', u.status_reason)
                               ORDER BY u.id)
                           FROM (SELECT * FROM aborted ORDER BY id LIMIT 1000) u), '[]'))
    INTO v_result;
    RETURN v_result;
END
$$;
