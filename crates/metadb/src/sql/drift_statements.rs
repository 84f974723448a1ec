//! The drift store's statements (migration 0020), in the shared dialect.
//! Everything here runs as the drift job's role `live_ci_drift`: only its own
//! tables.

/// A check and all its results in one statement (so never half recorded);
/// the check's id. `:results` is a JSON array of
/// `{unit, state, message, add, change, destroy}`.
pub const RECORD_DRIFT_CHECK: &str = "\
WITH c AS (
    INSERT INTO drift_checks (commit_id) VALUES (:commit_id) RETURNING check_id
), r AS (
    INSERT INTO drift_results (check_id, unit, state, message, add_count, change_count, destroy_count)
    SELECT c.check_id, x.unit, x.state, x.message, x.add, x.change, x.destroy
    FROM c, jsonb_to_recordset(CAST(:results AS jsonb))
        AS x(unit text, state text, message text, add integer, change integer, destroy integer)
    RETURNING 1
)
SELECT c.check_id::text FROM c";

/// The latest result of every unit, with its check and open issue, by unit.
pub const LATEST_DRIFT: &str = "\
SELECT json_build_object(
    'check_id', r.check_id, 'commit_id', c.commit_id, 'unit', r.unit, 'state', r.state,
    'message', r.message,
    'counts', json_build_object('add', r.add_count, 'change', r.change_count,
                                'destroy', r.destroy_count),
    'checked_at', to_char(c.checked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),
    'issue', i.issue_number)::text
FROM (SELECT DISTINCT ON (unit) * FROM drift_results ORDER BY unit, check_id DESC) r
JOIN drift_checks c ON c.check_id = r.check_id
LEFT JOIN drift_issues i ON i.unit = r.unit
ORDER BY r.unit";

/// A drift check's start mark: the newest run's id (the role reads
/// `runs.run_id`).
pub const LATEST_RUN_ID: &str = "SELECT COALESCE(max(run_id), 0)::text FROM runs";

/// The units of the runs made after a mark, whatever their status (the role
/// reads `executions (run_id, cfg_path)`), one JSON string per row.
pub const UNITS_OF_RUNS_AFTER: &str = "SELECT to_json(u.cfg_path)::text FROM (
    SELECT DISTINCT e.cfg_path FROM executions e WHERE e.run_id > :run_id) u ORDER BY u.cfg_path";

/// The number of the drift issue recorded for a unit, if any.
pub const DRIFT_ISSUE: &str = "SELECT issue_number::text FROM drift_issues WHERE unit = :unit";

/// Records (or replaces) the drift issue of a unit.
pub const SET_DRIFT_ISSUE: &str = "\
INSERT INTO drift_issues (unit, issue_number) VALUES (:unit, :issue)
ON CONFLICT (unit) DO UPDATE
SET issue_number = EXCLUDED.issue_number, updated_at = clock_timestamp()";

/// Forgets the drift issue of a unit.
pub const CLEAR_DRIFT_ISSUE: &str = "DELETE FROM drift_issues WHERE unit = :unit";
