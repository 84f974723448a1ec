//! The webhook deliveries port: which GitHub deliveries (by `X-GitHub-Delivery`)
//! some receiver already acts on, shared by every container of the function,
//! so a redelivery that lands in another container changes nothing.

use std::future::Future;
use std::time::Duration;

/// How long a delivery id is remembered. GitHub lets a repository's admins
/// redeliver the deliveries of the past three days (GitHub Enterprise Server:
/// seven); a redelivery older than that cannot arrive, so rows older than this
/// are purged.
pub const DELIVERY_HORIZON: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// How long a claim that was neither finished nor released blocks its
/// delivery: longer than the receiver's Lambda timeout, so only a receiver
/// that died mid-delivery leaves one this old, and GitHub's redelivery of it
/// is then acted on.
pub const STALE_CLAIM: Duration = Duration::from_secs(15 * 60);

/// Whether this receiver may act on a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryClaim {
    /// First seen (or its earlier claim was released, went stale or expired):
    /// act on it, then [`DeliveryLog::finish_delivery`].
    Claimed,
    /// Another receiver acts or acted on it: change nothing.
    Duplicate,
}

/// The deliveries log. Implementation: `live-ci-metadb` (both adapters), one
/// guarded statement per call, so two receivers racing for one delivery id
/// cannot both get [`DeliveryClaim::Claimed`].
pub trait DeliveryLog: Send + Sync {
    /// The adapter's error, classified retryable or permanent.
    type Error: super::Classify;

    /// Records `delivery_id` as claimed unless a live claim or a finished
    /// delivery holds it (one insert-if-absent statement, which also purges
    /// rows older than [`DELIVERY_HORIZON`]).
    fn claim_delivery(
        &self,
        delivery_id: &str,
    ) -> impl Future<Output = Result<DeliveryClaim, Self::Error>> + Send;

    /// Ends a claim: `handled` keeps the id until the horizon (redeliveries
    /// are duplicates); otherwise the claim is released so GitHub's
    /// redelivery of a failed delivery is acted on.
    fn finish_delivery(
        &self,
        delivery_id: &str,
        handled: bool,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;
}
