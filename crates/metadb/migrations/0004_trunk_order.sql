-- Deploy the trunk, in trunk order. A run deploys the range from the last
-- started run's commit to its own merge commit, so its place is its commit's
-- depth on the trunk's first-parent chain (`trunk_seq`, measured with git by
-- create-deploy-stack), not the order create-deploy-stack happened to finish
-- in. A merge that an already started (or newer queued) run covers is recorded
-- as 'superseded' and never applied.

ALTER TABLE runs ADD COLUMN trunk_seq bigint NOT NULL DEFAULT 0 CHECK (trunk_seq >= 0);
ALTER TABLE runs ADD COLUMN superseded_by bigint REFERENCES runs (run_id);
ALTER TABLE runs DROP CONSTRAINT runs_status_check;
ALTER TABLE runs ADD CONSTRAINT runs_status_check
    CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'superseded'));

-- Which queued run starts next: the newest on the trunk.
DROP INDEX runs_queued;
CREATE INDEX runs_queued ON runs (trunk_seq DESC, run_id DESC) WHERE status = 'queued';
CREATE INDEX runs_trunk ON runs (trunk_seq DESC, run_id DESC) WHERE status <> 'superseded';
CREATE INDEX executions_cfg_path ON executions (cfg_path) WHERE NOT is_rollback;

-- Per unit: the last trunk commit applied successfully, and whether its latest
-- deployment in a finished run failed (it stays pending and joins the next
-- run). Derived from the executions, so no writer can forget to update it.
CREATE VIEW unit_deployments AS
SELECT DISTINCT ON (e.cfg_path)
    e.cfg_path,
    e.status AS last_status,
    r.status AS run_status,
    r.run_id AS last_run_id,
    (SELECT r2.commit_id FROM executions e2 JOIN runs r2 ON r2.run_id = e2.run_id
     WHERE e2.cfg_path = e.cfg_path AND NOT e2.is_rollback AND e2.action = 'apply'
       AND e2.status = 'succeeded'
     ORDER BY r2.trunk_seq DESC, r2.run_id DESC LIMIT 1) AS applied_commit
FROM executions e JOIN runs r ON r.run_id = e.run_id
WHERE NOT e.is_rollback AND r.status <> 'superseded'
ORDER BY e.cfg_path, r.trunk_seq DESC, r.run_id DESC;

CREATE OR REPLACE FUNCTION live_ci_run_json(r runs) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT json_build_object(
        'run_id', r.run_id, 'pr_id', r.pr_id, 'commit_id', r.commit_id,
        'base_ref', r.base_ref, 'head_ref', r.head_ref,
        'base_sha', r.base_sha, 'head_sha', r.head_sha,
        'status', r.status, 'max_parallel', r.max_parallel, 'fail_fast', r.fail_fast,
        'trunk_seq', r.trunk_seq, 'superseded_by', r.superseded_by,
        'created_at', live_ci_ms(r.created_at), 'started_at', live_ci_ms(r.started_at),
        'finished_at', live_ci_ms(r.finished_at))::text
    $$;
