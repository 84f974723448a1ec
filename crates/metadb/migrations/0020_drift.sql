-- Drift detection (issue 32 item 4): the scheduled `drift` job plans every
-- unit of the trunk head with plan roles only and records here what each plan
-- showed. One row per check (the commit it planned), one per unit and check,
-- and the open GitHub issue of each drifted unit, so a later check updates
-- that issue instead of opening a second one, and closes it when the unit is
-- clean again. `live-ci drift` reads the latest result per unit.
--
-- A check is written in one statement (drift_checks + drift_results), so a
-- half-recorded check is never read. Results are only inserted: the history
-- of a unit is its rows, newest check first (drift_results_unit).

CREATE TABLE drift_checks (
    check_id bigserial PRIMARY KEY,
    commit_id text NOT NULL CHECK (commit_id ~ '^[0-9a-f]{7,64}$'),
    checked_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE drift_results (
    check_id bigint NOT NULL REFERENCES drift_checks (check_id),
    unit text NOT NULL CHECK (unit <> ''),
    state text NOT NULL CHECK (state IN ('drifted', 'clean', 'failed', 'superseded')),
    -- Why the plan failed: present exactly for 'failed'.
    message text CHECK ((state = 'failed') = (message IS NOT NULL)),
    add_count integer NOT NULL CHECK (add_count >= 0),
    change_count integer NOT NULL CHECK (change_count >= 0),
    destroy_count integer NOT NULL CHECK (destroy_count >= 0),
    PRIMARY KEY (check_id, unit)
);

CREATE INDEX drift_results_unit ON drift_results (unit, check_id DESC);

-- A unit's open drift issue; the row goes when the issue is closed.
CREATE TABLE drift_issues (
    unit text PRIMARY KEY CHECK (unit <> ''),
    issue_number bigint NOT NULL CHECK (issue_number > 0),
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The drift job's own PostgreSQL role, as migration 0015 made terra-run's:
-- the job runs repository code (terraform plans), so its metadb reach is only
-- what its statements need (crates/metadb/src/sql/drift_statements.rs and
-- BUSY_UNITS): its own tables, and the columns of runs and executions that
-- say which units a running or queued run deploys ("a merge during a check
-- wins"). No write to runs, executions, votes or the merge lock: a drift
-- check can never hold or take what a deploy needs. NOLOGIN, made only by a
-- migrator that may create roles, like live_ci_terra_run.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'live_ci_drift') THEN
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_user AND (rolsuper OR rolcreaterole)) THEN
            RAISE NOTICE 'live-ci: % may not create roles: no live_ci_drift role', current_user;
            RETURN;
        END IF;
        BEGIN
            CREATE ROLE live_ci_drift NOLOGIN;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;
        END;
    END IF;
    GRANT SELECT ON schema_migrations TO live_ci_drift;
    GRANT SELECT (run_id, status) ON runs TO live_ci_drift;
    GRANT SELECT (run_id, cfg_path) ON executions TO live_ci_drift;
    GRANT SELECT, INSERT ON drift_checks, drift_results TO live_ci_drift;
    GRANT USAGE ON SEQUENCE drift_checks_check_id_seq TO live_ci_drift;
    GRANT SELECT, INSERT, UPDATE, DELETE ON drift_issues TO live_ci_drift;
END
$$;
