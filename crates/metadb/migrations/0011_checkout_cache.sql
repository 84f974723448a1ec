-- A run's packed checkout (issue 17): create-deploy-stack packs the merge
-- commit's checkout once, stores it in the artifact bucket and records its key
-- and SHA-256 here, in the statement that creates the run, so the record is
-- there before any of the run's executions can start. Every terra-run of the
-- run reads both with its execution record (no other round trip), unpacks
-- only content with that digest, and fetches from the repository when the
-- run has none (its upload failed) or the object is gone.
--
-- Both columns or neither; the digest as the task computes it (64 lowercase
-- hex digits), so a writer that drifts fails here instead of every task of the
-- run failing its digest check.

ALTER TABLE runs ADD COLUMN checkout_key text;
ALTER TABLE runs ADD COLUMN checkout_sha256 text;
ALTER TABLE runs ADD CONSTRAINT runs_checkout CHECK (
    (checkout_key IS NULL AND checkout_sha256 IS NULL)
    OR (checkout_key IS NOT NULL AND btrim(checkout_key) <> ''
        AND checkout_sha256 IS NOT NULL AND checkout_sha256 ~ '^[0-9a-f]{64}$')
);

-- Each execution keeps a copy of its run's, written by the statement that
-- inserts it (a run's, a retry's, a rollback's): `to_jsonb(e)` puts it in
-- every execution record, `live_ci_execution_json` and the claim's inline
-- JSON alike, with no other join. Runs before this migration have none.
ALTER TABLE executions ADD COLUMN checkout jsonb;

-- `checkout` as the port's `CachedCheckout` ({"key", "sha256"}) or null; the
-- run and execution JSON carry it as one field.
CREATE FUNCTION live_ci_checkout_json(key text, sha256 text) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE WHEN key IS NULL THEN NULL
                ELSE jsonb_build_object('key', key, 'sha256', sha256) END
    $$;

-- As in 0004, plus `checkout`.
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
