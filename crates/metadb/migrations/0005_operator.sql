-- The operator's controls and bounded starts.
--
-- A start that keeps failing is counted, so trigger_sf can fail the unit with
-- the error after a configured number of attempts instead of retrying forever.
ALTER TABLE executions ADD COLUMN start_attempts integer NOT NULL DEFAULT 0;
ALTER TABLE executions ADD COLUMN last_start_error text;

-- `live-ci retry` queues a new run at the same commit with the failed units of
-- the last run: the merge's own run stays unique per commit, its retries point
-- back at the run they retry.
ALTER TABLE runs ADD COLUMN retry_of bigint REFERENCES runs (run_id);
ALTER TABLE runs DROP CONSTRAINT runs_commit_id_key;
CREATE UNIQUE INDEX runs_merge_commit ON runs (commit_id) WHERE retry_of IS NULL;
CREATE INDEX runs_commit ON runs (commit_id);

-- Durations of earlier deployments of a unit, for the critical-path priority.
CREATE INDEX executions_history ON executions (cfg_path)
    WHERE status = 'succeeded' AND NOT is_rollback;

-- Every operator control (abort, retry, unlock), with who ran it.
CREATE TABLE operator_actions (
    id bigserial PRIMARY KEY,
    action text NOT NULL,
    run_id bigint REFERENCES runs (run_id),
    actor text NOT NULL,
    detail text NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp()
);
