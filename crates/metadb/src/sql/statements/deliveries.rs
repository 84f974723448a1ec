//! The webhook deliveries log (`store/deliveries.rs`).

/// A receiver's claim of a GitHub delivery (migration 0013): inserts the id
/// unless a row holds it that is handled, or claimed more recently than
/// `:stale_secs` ago; a row older than the horizon counts as absent. Returns a
/// row only to the one caller that got the claim (a concurrent insert of the
/// same id waits for the first and then finds the conflict). The same
/// statement purges at most 100 other rows older than the horizon, skipping
/// rows another purge holds, so no delivery pays for a backlog.
pub const CLAIM_DELIVERY: &str = "\
WITH purged AS (
    DELETE FROM webhook_deliveries WHERE delivery_id IN (
        SELECT delivery_id FROM webhook_deliveries
        WHERE claimed_at
              < clock_timestamp() - make_interval(secs => CAST(:horizon_secs AS double precision))
          AND delivery_id <> :delivery_id
        ORDER BY claimed_at LIMIT 100 FOR UPDATE SKIP LOCKED))
INSERT INTO webhook_deliveries AS d (delivery_id) VALUES (:delivery_id)
ON CONFLICT (delivery_id) DO UPDATE SET claimed_at = clock_timestamp(), handled_at = NULL
WHERE (d.handled_at IS NULL
       AND d.claimed_at
           < clock_timestamp() - make_interval(secs => CAST(:stale_secs AS double precision)))
   OR d.claimed_at
      < clock_timestamp() - make_interval(secs => CAST(:horizon_secs AS double precision))
RETURNING 'claimed'";

/// A claimed delivery the receiver answered 200: redeliveries are duplicates.
pub const DELIVERY_HANDLED: &str =
    "UPDATE webhook_deliveries SET handled_at = clock_timestamp() WHERE delivery_id = :delivery_id";

/// A claimed delivery that failed: its redelivery is acted on.
pub const RELEASE_DELIVERY: &str =
    "DELETE FROM webhook_deliveries WHERE delivery_id = :delivery_id AND handled_at IS NULL";
