-- A run as the port's `Run`, times in ms: its trunk position and the run that
-- superseded it (migration 0004), and its packed checkout as
-- live_ci_checkout_json (migration 0011).
CREATE OR REPLACE FUNCTION live_ci_run_json(r runs) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT json_build_object(
        'run_id', r.run_id, 'pr_id', r.pr_id, 'commit_id', r.commit_id,
        'base_ref', r.base_ref, 'head_ref', r.head_ref,
        'base_sha', r.base_sha, 'head_sha', r.head_sha,
        'status', r.status, 'max_parallel', r.max_parallel, 'fail_fast', r.fail_fast,
        'trunk_seq', r.trunk_seq, 'superseded_by', r.superseded_by,
        'checkout', live_ci_checkout_json(r.checkout_key, r.checkout_sha256),
        'created_at', live_ci_ms(r.created_at), 'started_at', live_ci_ms(r.started_at),
        'finished_at', live_ci_ms(r.finished_at))::text
    $$;
