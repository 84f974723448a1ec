//! The deploy comment's statements (migration 0016), in the shared dialect.

/// The pull requests a run deploys, its own first: the run's and those of the
/// runs it superseded, transitively, with the digest last written on each.
/// UNION (not UNION ALL) ends the walk even on a cycle.
pub const DEPLOY_COMMENT_TARGETS: &str = "\
WITH RECURSIVE covered (run_id, pr_id) AS (
    SELECT run_id, pr_id FROM runs WHERE run_id = :run_id
    UNION
    SELECT r.run_id, r.pr_id FROM runs r JOIN covered c ON r.superseded_by = c.run_id
), prs AS (
    SELECT DISTINCT c.pr_id, c.run_id = :run_id AS own FROM covered c WHERE c.pr_id > 0
), targets AS (
    SELECT pr_id, bool_or(own) AS own FROM prs GROUP BY pr_id
)
SELECT json_build_object('pr_number', t.pr_id, 'digest', d.digest)::text
FROM targets t
LEFT JOIN deploy_comments d ON d.run_id = :run_id AND d.pr_number = t.pr_id
ORDER BY t.own DESC, t.pr_id
LIMIT :limit";

/// Compare-and-set of the digest, before the write: a row comes back only to
/// the caller whose digest differs from the stored one (or who stored the
/// first). Two callers with the same body: the second updates nothing.
pub const CLAIM_DEPLOY_COMMENT: &str = "\
INSERT INTO deploy_comments (run_id, pr_number, digest)
VALUES (:run_id, :pr_number, :digest)
ON CONFLICT (run_id, pr_number) DO UPDATE
SET digest = EXCLUDED.digest, updated_at = clock_timestamp()
WHERE deploy_comments.digest IS DISTINCT FROM EXCLUDED.digest
RETURNING 'claimed'";

/// Clears a digest whose write failed, unless another caller has claimed a
/// newer one since.
pub const RELEASE_DEPLOY_COMMENT: &str = "\
UPDATE deploy_comments SET digest = NULL, updated_at = clock_timestamp()
WHERE run_id = :run_id AND pr_number = :pr_number AND digest = :digest";
