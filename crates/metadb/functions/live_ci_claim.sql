-- The claim: ready executions of a running run, highest priority first, up to
-- the run's free slots and p_limit, moved to `running`; then the run's counts.
-- Returns {"claimed": [execution records, highest priority first],
-- "progress": {"waiting", "running", "succeeded", "failed", "aborted"}}.
-- The counters select candidates through `executions_ready`; the NOT EXISTS
-- clauses re-check the edges of those few. The record JSON is built inline, as
-- `live_ci_execution_json` builds it (a test compares the two): calling the
-- function per row tripled the claim's time on 10,000 units.
--
-- Per-account pacing (migration 0017): a run none of whose accounts has a cap
-- below the run's own takes the plain statement (one index walk that stops
-- after the free slots). A paced run ranks its ready executions within their
-- account (a window function, which cannot carry FOR UPDATE: candidates are
-- selected first and locked by id after; the run's row lock already
-- serializes the claimers, so the running counts read after it cannot change
-- under the claim but by finishes, which only lower them). The ranking reads
-- every ready execution of the run, not only the first free slots' worth: a
-- capped account's surplus must be skipped.
CREATE OR REPLACE FUNCTION live_ci_claim(p_run_id bigint, p_limit bigint) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    v_claimed jsonb := '[]';
    v_ids bigint[];
BEGIN
    -- Serializes the claimers of one run: the claim below is the next
    -- statement, so its snapshot is taken once this lock is held.
    PERFORM 1 FROM runs WHERE run_id = p_run_id AND status = 'running' FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN jsonb_build_object('claimed', v_claimed, 'progress', live_ci_progress(p_run_id));
    END IF;
    IF NOT EXISTS (SELECT 1 FROM run_accounts ra JOIN runs r ON r.run_id = ra.run_id
                   WHERE ra.run_id = p_run_id AND ra.max_parallel < r.max_parallel) THEN
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
        RETURN jsonb_build_object('claimed', v_claimed, 'progress', live_ci_progress(p_run_id));
    END IF;
    -- Paced: the k-th ready execution of an account (priority order) fits
    -- when the account's running count plus k stays within its cap.
    WITH slots AS (
        SELECT greatest(r.max_parallel - (SELECT count(*) FROM executions x
                                          WHERE x.run_id = r.run_id AND x.status = 'running'), 0) AS n
        FROM runs r WHERE r.run_id = p_run_id
    ), caps AS (
        SELECT account_name, min(max_parallel) AS cap FROM run_accounts
        WHERE run_id = p_run_id AND max_parallel IS NOT NULL
        GROUP BY account_name
    ), busy AS (
        SELECT account_name, count(*) AS n FROM executions
        WHERE run_id = p_run_id AND status = 'running'
        GROUP BY account_name
    ), ready AS (
        SELECT e.id, e.account_name, e.priority, e.seq FROM executions e
        WHERE e.run_id = p_run_id AND e.status = 'waiting'
          AND e.pending_deps = 0 AND e.pending_accounts = 0
    ), ranked AS (
        SELECT r.id, r.priority, r.seq, c.cap, coalesce(b.n, 0) AS busy,
               row_number() OVER (PARTITION BY r.account_name ORDER BY r.priority DESC, r.seq) AS k
        FROM ready r
        LEFT JOIN caps c ON c.account_name = r.account_name
        LEFT JOIN busy b ON b.account_name = r.account_name
    ), fits AS (
        -- No account gives more than the run's free slots, so the edges are
        -- re-checked for those few per account only (a candidate a stale
        -- counter let through still counts in its account's rank: the claim
        -- then takes fewer, never more).
        SELECT ranked.id FROM ranked
        WHERE (cap IS NULL OR busy + k <= cap) AND k <= (SELECT n FROM slots)
          AND NOT EXISTS (SELECT 1 FROM execution_deps d JOIN executions p ON p.id = d.depends_on
                          WHERE d.execution = ranked.id AND p.status <> 'succeeded')
          AND NOT EXISTS (SELECT 1 FROM execution_account_waits w
                          JOIN run_accounts ra ON ra.id = w.run_account
                          WHERE w.execution = ranked.id AND ra.remaining > 0)
        ORDER BY priority DESC, seq
        LIMIT least(coalesce((SELECT n FROM slots), 0), greatest(p_limit, 0))
    )
    SELECT coalesce(array_agg(id), '{}') INTO v_ids FROM fits;
    WITH ready AS (
        SELECT e.id FROM executions e
        WHERE e.id = ANY (v_ids) AND e.status = 'waiting'
        ORDER BY e.id
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
    RETURN jsonb_build_object('claimed', v_claimed, 'progress', live_ci_progress(p_run_id));
END
$$;
