-- The deploy comment (issue 29 item 3): trigger-sf writes one comment per
-- run on each pull request the run deploys, and edits it as the run advances.
-- This table holds, per (run, pull request), the SHA-256 of the body last
-- written, so a comment is edited only when its rendered body changed (at
-- most one edit per change, whatever the number of events).
--
-- The pull requests a run deploys are its own and those of the runs it
-- superseded, transitively (runs.superseded_by): a superseded or coalesced
-- run keeps its own row and pull request number, so nothing else is
-- recorded here.
--
-- The digest is claimed BEFORE the edit (compare-and-set: only a caller whose
-- body differs from the stored one gets the row) and cleared when the edit
-- fails, so the next event writes again. NULL: nothing written, or the last
-- write failed.

CREATE TABLE deploy_comments (
    run_id bigint NOT NULL REFERENCES runs (run_id),
    pr_number bigint NOT NULL CHECK (pr_number > 0),
    digest text CHECK (digest ~ '^[0-9a-f]{64}$'),
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (run_id, pr_number)
);

-- The covered runs are found by their superseded_by.
CREATE INDEX runs_superseded_by ON runs (superseded_by) WHERE superseded_by IS NOT NULL;
