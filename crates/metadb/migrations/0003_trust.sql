-- Trust boundaries (issue 12). The saved plan an execution's plan task wrote:
-- its key, SHA-256 and S3 object version, recorded by the task itself (not by
-- the plan's child process), so the apply task downloads exactly that version
-- and refuses any other content.

ALTER TABLE executions
    ADD COLUMN plan_key text,
    ADD COLUMN plan_sha256 text CHECK (plan_sha256 ~ '^[0-9a-f]{64}$'),
    ADD COLUMN plan_version_id text;
