-- The saved plan's sealed `show -json` (issue 29): terra-run stores it beside
-- the saved plan and records its SHA-256 here, in the statement that records
-- the plan's own, so the approval page shows the JSON of exactly the plan the
-- apply checks. NULL for plans saved before it was kept.

ALTER TABLE executions ADD COLUMN plan_json_sha256 text
    CHECK (plan_json_sha256 ~ '^[0-9a-f]{64}$');
