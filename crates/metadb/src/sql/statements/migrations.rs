//! Migrations and the function files' record (`migrate.rs`, `check_schema`).

// Migrations. The advisory lock key is arbitrary but fixed: concurrent migrators
// queue on it, and a transaction-scoped lock works through the Data API, which
// keeps no session between calls.
/// Takes the migrators' advisory lock until the transaction ends.
pub const MIGRATION_LOCK: &str =
    "SELECT 'locked' FROM (SELECT pg_advisory_xact_lock(7263348291)) AS l";

/// Creates the table of applied migrations if missing.
pub const CREATE_SCHEMA_MIGRATIONS: &str = "\
CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
)";

/// The applied migrations' versions, ascending.
pub const APPLIED_MIGRATIONS: &str = "SELECT version::text FROM schema_migrations ORDER BY version";

/// Records one migration as applied.
pub const RECORD_MIGRATION: &str =
    "INSERT INTO schema_migrations (version, name) VALUES (:version, :name)";

/// What a start needs to know it has nothing to apply, in one read: the
/// applied migrations' versions, then `functions <revision> <hash>` of the
/// newest function set applied. Fails before migration 0022 (no
/// `schema_functions`): the locked path decides then.
pub const SCHEMA_STATE: &str = "\
SELECT version::text FROM schema_migrations
UNION ALL
(SELECT 'functions ' || revision::text || ' ' || hash FROM schema_functions
 ORDER BY revision DESC LIMIT 1)";

/// The newest function set applied, as `<revision> <hash>`; no row when none.
pub const APPLIED_FUNCTIONS: &str =
    "SELECT revision::text || ' ' || hash FROM schema_functions ORDER BY revision DESC LIMIT 1";

/// Records the function set applied (revision and hash) and the migration it
/// was applied after.
pub const RECORD_FUNCTIONS: &str = "\
INSERT INTO schema_functions (revision, hash, migration) VALUES (:revision, :hash, :migration)";
