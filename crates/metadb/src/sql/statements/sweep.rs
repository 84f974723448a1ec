//! The trunk sweep: its launch claim and the executions it re-checks
//! (`store/sweep.rs`).

/// Executions claimed longer than `:older_than_secs` ago with no Step Functions
/// execution started, oldest claim first.
pub const STALE_CLAIMS: &str = "\
SELECT live_ci_execution_json(e) FROM executions e
WHERE e.status = 'running' AND e.sfn_execution_arn IS NULL
  AND e.claimed_at < clock_timestamp() - make_interval(secs => CAST(:older_than_secs AS double precision))
ORDER BY e.claimed_at";

/// Up to `:limit` running executions with a Step Functions execution, oldest
/// claim first.
pub const RUNNING_WITH_ARN: &str = "\
SELECT live_ci_execution_json(e) FROM executions e
WHERE e.status = 'running' AND e.sfn_execution_arn IS NOT NULL
ORDER BY e.claimed_at LIMIT :limit";

/// The sweep's claim to launch create-deploy-stack for a trunk head: only for a
/// commit no run has, no no-op merge recorded, and no launch younger than the
/// cool-down. One statement, so of two sweeps at once (the second waits on the
/// row the first wrote) exactly one gets the row back: the launch count.
pub const CLAIM_TRUNK_LAUNCH: &str = "\
INSERT INTO trunk_commits (commit_id, launched_at, launches)
SELECT :commit_id, clock_timestamp(), 1
WHERE NOT EXISTS (SELECT 1 FROM runs WHERE commit_id = :commit_id)
ON CONFLICT (commit_id) DO UPDATE
SET launched_at = clock_timestamp(), launches = trunk_commits.launches + 1
WHERE trunk_commits.no_op_at IS NULL
  AND (trunk_commits.launched_at IS NULL
       OR trunk_commits.launched_at
          < clock_timestamp() - make_interval(secs => CAST(:cooldown_secs AS double precision)))
RETURNING launches::text";
