-- The scheduler's moves as server-side functions (issue 17): trigger-sf paid
-- one metadb round trip per statement and per BEGIN/COMMIT, a Data API HTTPS
-- call each (20–50 ms in AWS), about fourteen per status change. Now a status
-- change is one call (`live_ci_settle`: look up, finish, claim, count), and a
-- claim with the run's progress is one call (`live_ci_claim`), and so is the
-- end of a run with everything its statuses need (`live_ci_finish_run`). The
-- store's `record_finished`, `claim_ready`, `abort_dependents`, `finish_run`,
-- `run_progress`, `merge_lock` and run creation call the same functions, so
-- there is one implementation of each move.
--
-- Every function is PL/pgSQL and VOLATILE on purpose: in READ COMMITTED each
-- statement inside takes a fresh snapshot, so the claim, which runs after the
-- statement that takes the run's row lock, counts the run's running executions
-- as they are once the lock is held. One statement (a CTE taking the lock)
-- would count them from a snapshot taken before its lock wait and over-claim.

-- Counts of a run's executions by status.
CREATE FUNCTION live_ci_progress(p_run_id bigint) RETURNS jsonb
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

-- The merge lock row with its run's pull request and commit.
CREATE FUNCTION live_ci_merge_lock_json() RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT jsonb_build_object('run_id', m.run_id, 'pr_id', r.pr_id, 'commit_id', r.commit_id,
                              'locked_at', live_ci_ms(m.locked_at))
    FROM merge_lock m LEFT JOIN runs r ON r.run_id = m.run_id
    $$;

-- Aborts the waiting transitive dependents of a failed execution, following
-- directory edges and account waits (a failed member keeps its account from
-- ever completing); with fail-fast, every waiting execution of the run.
-- Account nodes are negative ids so one recursive term walks both kinds.
-- Returns {"aborted": [execution ids], "units": [what a commit status needs
-- of the first 1000, in id order]}: the ids of a 10,000-unit fail-fast stay
-- well under the Data API's 1 MiB response, the details of all would not.
CREATE FUNCTION live_ci_abort_dependents(p_execution_id text) RETURNS jsonb
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

-- Records how a running execution ended ('succeeded' or 'failed'): the guarded
-- transition out of `running`, then for a success the counters of what waited
-- for it (its dependents' pending_deps; when it was the last of its account
-- and action, the account waiters' pending_accounts), for a failure the abort
-- of its dependents. Returns {"recorded": true, "aborted", "units"} or, when
-- the execution was not running (a repeat), {"recorded": false, "status"}.
CREATE FUNCTION live_ci_finish(p_execution_id text, p_status text, p_reason text) RETURNS jsonb
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

-- The claim: ready executions of a running run, highest priority first, up to
-- the run's free slots and p_limit, moved to `running`; then the run's counts.
-- Returns {"claimed": [execution records, highest priority first],
-- "progress": {"waiting", "running", "succeeded", "failed", "aborted"}}.
-- The counters select candidates through `executions_ready`; the NOT EXISTS
-- clauses re-check the edges of those few. The record JSON is built inline, as
-- `live_ci_execution_json` builds it (a test compares the two): calling the
-- function per row tripled the claim's time on 10,000 units.
CREATE FUNCTION live_ci_claim(p_run_id bigint, p_limit bigint) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    v_claimed jsonb := '[]';
BEGIN
    -- Serializes the claimers of one run: the claim below is the next
    -- statement, so its snapshot is taken once this lock is held.
    PERFORM 1 FROM runs WHERE run_id = p_run_id AND status = 'running' FOR NO KEY UPDATE;
    IF FOUND THEN
        WITH slots AS (
            SELECT greatest(r.max_parallel - (SELECT count(*) FROM executions x
                                              WHERE x.run_id = r.run_id AND x.status = 'running'), 0) AS n
            FROM runs r WHERE r.run_id = p_run_id AND r.status = 'running'
        ), ready AS (
            SELECT e.id FROM executions e
            WHERE e.run_id = p_run_id AND e.status = 'waiting'
              AND e.pending_deps = 0 AND e.pending_accounts = 0
              AND NOT EXISTS (SELECT 1 FROM execution_deps d JOIN executions p ON p.id = d.depends_on
                              WHERE d.execution = e.id AND p.status <> 'succeeded')
              AND NOT EXISTS (SELECT 1 FROM execution_account_waits w
                              JOIN run_accounts ra ON ra.id = w.run_account
                              WHERE w.execution = e.id AND ra.remaining > 0)
            ORDER BY e.priority DESC, e.seq
            LIMIT least(coalesce((SELECT n FROM slots), 0), greatest(p_limit, 0))
            FOR UPDATE OF e SKIP LOCKED
        ), claimed AS (
            UPDATE executions e
            SET status = 'running', claimed_at = clock_timestamp(), updated_at = clock_timestamp()
            FROM ready WHERE e.id = ready.id AND e.status = 'waiting'
            RETURNING e.*
        )
        SELECT coalesce(jsonb_agg((to_jsonb(c) || jsonb_build_object(
            'pr_id', r.pr_id, 'commit_id', r.commit_id, 'base_ref', r.base_ref, 'head_ref', r.head_ref,
            'approval_voters', coalesce((SELECT jsonb_agg(v.voter ORDER BY v.voter) FROM votes v
                                         WHERE v.execution = c.id AND v.vote = 'approve'), '[]'),
            'rejection_voters', coalesce((SELECT jsonb_agg(v.voter ORDER BY v.voter) FROM votes v
                                          WHERE v.execution = c.id AND v.vote = 'reject'), '[]'),
            'created_at', live_ci_ms(c.created_at), 'claimed_at', live_ci_ms(c.claimed_at),
            'finished_at', live_ci_ms(c.finished_at), 'updated_at', live_ci_ms(c.updated_at)))
            ORDER BY c.priority DESC, c.seq), '[]')
        INTO v_claimed
        FROM claimed c JOIN runs r ON r.run_id = c.run_id;
    END IF;
    RETURN jsonb_build_object('claimed', v_claimed, 'progress', live_ci_progress(p_run_id));
END
$$;

-- One Step Functions status change: the execution the event names, then (when
-- the event is an end: p_status 'succeeded' or 'failed') its finish, then the
-- claim of its run and the run's progress, in one transaction. NULL for a name
-- no execution has. An execution with a different ARN recorded is another
-- state machine's that shares the name: {"execution", "foreign": true}, and
-- nothing changes. Otherwise {"execution" (as read before the finish),
-- "finish" (live_ci_finish's answer; absent for a status that is not an end),
-- "claimed", "progress"}.
CREATE FUNCTION live_ci_settle(p_execution_id text, p_arn text, p_status text, p_reason text,
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
CREATE FUNCTION live_ci_start_next_run() RETURNS bigint
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

-- The guarded end of a run (only a running run with nothing waiting or
-- running; succeeded when every execution succeeded), the release of its
-- merge lock and the hand-over to the next run, under the merge_lock row
-- (which serializes run creation and hand-over: both read "is a run
-- running?" and act on it). Returns {"finished": status or null (not
-- finishable, or finished by another caller), "next_run", and what the run's
-- statuses and the lock's mirror need, read in the same transaction: "run",
-- "progress", "superseded" (the runs it covered, oldest on the trunk first),
-- "merge_lock"}.
CREATE FUNCTION live_ci_finish_run(p_run_id bigint) RETURNS text
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
