-- A PostgreSQL role for terra-run (issue 27): the task that runs repository
-- code (terraform, as a separate uid) reaches the metadb with exactly what its
-- own statements need, so a child that escaped that uid and took the task's
-- credentials could not cast a vote or flip the decision the apply trusts.
-- IAM cannot narrow rds-data:ExecuteStatement to tables; these grants can.
--
-- What terra-run runs (crates/metadb/src/sql/statements.rs): EXECUTION and
-- RUN_BY_ID (live_ci_execution_json reads every column of the execution and
-- its run, and the votes' voter and vote), SAVED_PLAN, RECORD_SAVED_PLAN and
-- RECORD_NEW_RESOURCES (UPDATEs of their own columns only), and the schema
-- version (schema_migrations). Nothing else: no INSERT, UPDATE or DELETE of
-- votes, approval requests, runs, or of an execution's status and decision.
-- The functions it may call run as the caller (no SECURITY DEFINER in the
-- metadb), so live_ci_vote and the like fail on these grants too.
--
-- NOLOGIN: the role carries the grants; the login that uses it (and its
-- password, never in Terraform state) is a member made by whoever holds the
-- master secret. Roles are per server and grants per database, so the role is
-- made once and granted here in each database. A migrating user that may not
-- create roles (a direct connection's own user) skips all of it, and says so.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'live_ci_terra_run') THEN
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_user AND (rolsuper OR rolcreaterole)) THEN
            RAISE NOTICE 'live-ci: % may not create roles: no live_ci_terra_run role', current_user;
            RETURN;
        END IF;
        BEGIN
            CREATE ROLE live_ci_terra_run NOLOGIN;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            -- Another database's migration made it at the same moment.
            NULL;
        END;
    END IF;
    GRANT SELECT ON executions, runs, schema_migrations TO live_ci_terra_run;
    GRANT SELECT (execution, voter, vote) ON votes TO live_ci_terra_run;
    GRANT UPDATE (plan_key, plan_sha256, plan_version_id, plan_json_sha256, new_resources, updated_at)
        ON executions TO live_ci_terra_run;
END
$$;
