-- What the voters' mail said of the plan ("1 to add, …; outputs change: url",
-- "outputs change: url"), so the approval page shows the same words instead of
-- raw counts that read "0 to add, 0 to change, 0 to destroy" for an outputs-only
-- plan. NULL for requests stored before this migration (the page falls back to
-- the counts).

ALTER TABLE approval_requests ADD COLUMN plan_summary text;

CREATE OR REPLACE FUNCTION live_ci_approval_json(a approval_requests) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT json_build_object(
        'execution_id', a.execution_id, 'sfn_execution_arn', a.sfn_execution_arn,
        'task_token_ciphertext', a.task_token_ciphertext,
        'task_token_hash', a.task_token_hash,
        'to_add', a.to_add, 'to_change', a.to_change, 'to_destroy', a.to_destroy,
        'plan_summary', a.plan_summary,
        'logs_url', a.logs_url,
        'requested_at', live_ci_ms(a.requested_at), 'expires_at', live_ci_ms(a.expires_at),
        'delivery_claimed_at', live_ci_ms(a.delivery_claimed_at),
        'decision_sent_at', live_ci_ms(a.decision_sent_at),
        'delivery', a.delivery)::text
    $$;
