-- Task tokens stored encrypted (issue 12, requirement 4). A task token
-- completes the waiting Request Approval state, so anyone who could read it
-- (every role with metadb access, every operator) could forge an approval.
-- From here on approval_request stores only the token's SHA-256 (the lookup
-- key the vote links carry) and its KMS ciphertext, bound to the execution by
-- the encryption context; only approval_response may decrypt it.
--
-- Plain tokens of earlier requests are dropped, not kept: a token left
-- readable until its request is decided is exactly what this closes. A
-- request still waiting when this runs keeps its row (and its mails) but no
-- token: approval_response says the request cannot be delivered, and the
-- deployment's Request Approval times out, after which `live-ci retry` queues
-- the unit again and it is mailed anew. Upgrade with no approval pending
-- (`live-ci status`) to avoid that.

ALTER TABLE approval_requests ADD COLUMN task_token_ciphertext text;
ALTER TABLE approval_requests DROP COLUMN task_token;

CREATE OR REPLACE FUNCTION live_ci_approval_json(a approval_requests) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT json_build_object(
        'execution_id', a.execution_id, 'sfn_execution_arn', a.sfn_execution_arn,
        'task_token_ciphertext', a.task_token_ciphertext,
        'task_token_hash', a.task_token_hash,
        'to_add', a.to_add, 'to_change', a.to_change, 'to_destroy', a.to_destroy,
        'logs_url', a.logs_url,
        'requested_at', live_ci_ms(a.requested_at), 'expires_at', live_ci_ms(a.expires_at),
        'delivery_claimed_at', live_ci_ms(a.delivery_claimed_at),
        'decision_sent_at', live_ci_ms(a.decision_sent_at),
        'delivery', a.delivery)::text
    $$;
