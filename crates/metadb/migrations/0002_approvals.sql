-- E-mail approvals: what approval_request leaves for approval_response, which
-- receives only a signed link. One row per execution: the Step Functions task
-- token (never mailed; links carry its SHA-256), what the mail showed, when the
-- links expire, and the one-time hand-over of the decision to Step Functions.
-- Votes themselves stay in `votes`, decided by `executions.decision`.

CREATE TABLE approval_requests (
    execution_id text PRIMARY KEY REFERENCES executions (execution_id),
    sfn_execution_arn text NOT NULL,
    task_token text NOT NULL,
    task_token_hash text NOT NULL,
    to_add integer NOT NULL CHECK (to_add >= 0),
    to_change integer NOT NULL CHECK (to_change >= 0),
    to_destroy integer NOT NULL CHECK (to_destroy >= 0),
    logs_url text NOT NULL,
    requested_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at timestamptz NOT NULL,
    -- A caller sending the decision; a claim older than its lease is retried.
    delivery_claimed_at timestamptz,
    decision_sent_at timestamptz,
    -- 'delivered', or 'gone: <reason>' when Step Functions no longer waited.
    delivery text
);

-- One row per voter mailed for one task token: a repeated SNS delivery mails
-- nobody twice, and a new task token (a new request) mails everyone again.
CREATE TABLE approval_mails (
    execution_id text NOT NULL REFERENCES approval_requests (execution_id),
    task_token_hash text NOT NULL,
    voter text NOT NULL,
    message_id text NOT NULL,
    mailed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (execution_id, task_token_hash, voter)
);

CREATE FUNCTION live_ci_approval_json(a approval_requests) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT json_build_object(
        'execution_id', a.execution_id, 'sfn_execution_arn', a.sfn_execution_arn,
        'task_token', a.task_token, 'task_token_hash', a.task_token_hash,
        'to_add', a.to_add, 'to_change', a.to_change, 'to_destroy', a.to_destroy,
        'logs_url', a.logs_url,
        'requested_at', live_ci_ms(a.requested_at), 'expires_at', live_ci_ms(a.expires_at),
        'delivery_claimed_at', live_ci_ms(a.delivery_claimed_at),
        'decision_sent_at', live_ci_ms(a.decision_sent_at),
        'delivery', a.delivery)::text
    $$;
