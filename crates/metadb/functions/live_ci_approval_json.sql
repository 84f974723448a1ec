-- An approval request as the port's `ApprovalRequest`, times in ms:
-- `plan_summary` is what the voters' mail said of the plan (NULL for requests
-- stored before migration 0007: the page falls back to the counts), and
-- `delivery` the port's `TokenDelivery`: {"outcome": "delivered"} or
-- {"outcome": "gone", "reason": "…"}.
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
        'delivery', CASE a.delivery
            WHEN 'delivered' THEN json_build_object('outcome', 'delivered')
            WHEN 'gone' THEN json_build_object('outcome', 'gone', 'reason', a.delivery_reason)
        END)::text
    $$;
