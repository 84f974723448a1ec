-- The SQL functions live once each in crates/metadb/functions/ (issue 33
-- item 6; crates/metadb/src/functions.rs), applied after the migrations in
-- the same transaction. This table records which set of them a database
-- has: one row per revision applied (the binary's revision number, the hash
-- of its function files, the last migration it was built with). A start
-- whose set is the newest row applies nothing; a binary with an older
-- revision never replaces a newer one.
CREATE TABLE schema_functions (
    revision integer PRIMARY KEY CHECK (revision > 0),
    hash text NOT NULL CHECK (hash <> ''),
    migration integer NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- terra-run and the drift job check the schema at start instead of
-- migrating (check_schema): they read this table as they read
-- schema_migrations (0015, 0020).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'live_ci_terra_run') THEN
        GRANT SELECT ON schema_functions TO live_ci_terra_run;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'live_ci_drift') THEN
        GRANT SELECT ON schema_functions TO live_ci_drift;
    END IF;
END
$$;
