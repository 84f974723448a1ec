-- The merge lock row with its run's pull request and commit.
CREATE OR REPLACE FUNCTION live_ci_merge_lock_json() RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT jsonb_build_object('run_id', m.run_id, 'pr_id', r.pr_id, 'commit_id', r.commit_id,
                              'locked_at', live_ci_ms(m.locked_at))
    FROM merge_lock m LEFT JOIN runs r ON r.run_id = m.run_id
    $$;
