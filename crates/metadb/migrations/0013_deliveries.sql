-- GitHub deliveries some receiver acts or acted on (issue 27, item 6): the
-- de-duplication of `X-GitHub-Delivery` used to live in each Lambda
-- container, so a redelivery landing in another container was acted on again.
-- One row per delivery id; `handled_at` is set once the receiver answered 200,
-- a failed delivery's row is deleted (GitHub's redelivery is then acted on).
-- Claims are taken and rows purged by one statement (CLAIM_DELIVERY), the
-- horizon and the stale-claim age being its parameters.

CREATE TABLE webhook_deliveries (
    delivery_id text PRIMARY KEY CHECK (btrim(delivery_id) <> '' AND length(delivery_id) <= 200),
    claimed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    handled_at timestamptz
);

-- The purge's range scan.
CREATE INDEX webhook_deliveries_claimed_at ON webhook_deliveries (claimed_at);
