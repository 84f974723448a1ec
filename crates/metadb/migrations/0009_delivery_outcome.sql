-- What became of a decision handed to Step Functions, as a closed set instead
-- of free text (issue 16, requirement 1): `delivery` was 'delivered' or
-- 'gone: <Step Functions' reason>', and any other string would have been read
-- as "still being sent". Now `delivery` is 'delivered' or 'gone', the reason
-- has its own column, and a CHECK refuses anything else, so a writer that
-- drifts fails loudly instead of showing voters the wrong page.
--
-- Existing rows are converted in place: 'gone: reason' (or a bare 'gone')
-- becomes 'gone' with the reason; 'delivered' and NULL stay. A row holding
-- any other value makes the constraint (and so this migration) fail, naming
-- the constraint, and the transaction leaves the schema as it was.

ALTER TABLE approval_requests ADD COLUMN delivery_reason text;

UPDATE approval_requests
    SET delivery_reason = btrim(substr(delivery, 5), ': '), delivery = 'gone'
    WHERE delivery LIKE 'gone%';

-- Written so that no branch is NULL (a NULL check passes): `delivery IS NOT
-- NULL` guards the comparisons.
ALTER TABLE approval_requests ADD CONSTRAINT approval_requests_delivery_outcome CHECK (
    (delivery IS NULL AND delivery_reason IS NULL)
    OR (delivery IS NOT NULL AND (
        (delivery = 'delivered' AND delivery_reason IS NULL)
        OR (delivery = 'gone' AND delivery_reason IS NOT NULL)))
);

-- `delivery` as the port's `TokenDelivery`: {"outcome": "delivered"} or
-- {"outcome": "gone", "reason": "…"}; the rest as in 0007.
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
