-- The trunk commits the sweep knows besides the runs' commits: a merge that
-- affected no unit (create-deploy-stack creates no run for it), and the
-- sweep's own launches of create-deploy-stack for a trunk head no webhook
-- announced. Without them the sweep would find such a head unknown and launch
-- create-deploy-stack for it again every period.
CREATE TABLE trunk_commits (
    commit_id text PRIMARY KEY,
    -- create-deploy-stack found nothing to deploy up to this commit.
    no_op_at timestamptz,
    -- The sweep's last launch for this commit (its cool-down) and how many.
    launched_at timestamptz,
    launches integer NOT NULL DEFAULT 0
);
