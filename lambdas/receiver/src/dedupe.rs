//! Deliveries already acted on. GitHub redelivers on timeouts and people press
//! "Redeliver", and a redelivery may land in any container of the function, so
//! the guard is the metadb's deliveries log (`DeliveryLog`), shared by all of
//! them. A bounded per-container set answers repeats to the same container
//! without a round trip, and keeps some protection while the metadb is
//! unreachable (the durable guard of a task start is then ECS's `clientToken`,
//! the delivery id).

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use live_ci_core::port::{DeliveryClaim, DeliveryLog, PortError, PortResultExt};

/// How long the receiver waits for the deliveries log: a resuming Aurora
/// cluster can take longer than the 10 s GitHub gives the whole delivery, so
/// past this the delivery goes on unclaimed (see the module doc).
pub const CLAIM_BUDGET: Duration = Duration::from_secs(2);

/// Where the receiver claims deliveries across containers.
pub trait Deliveries: Send + Sync {
    /// Claims delivery `id` (GitHub's `X-GitHub-Delivery`): act on it only when
    /// [`DeliveryClaim::Claimed`].
    fn claim(&self, id: &str) -> impl Future<Output = Result<DeliveryClaim, PortError>> + Send;
    /// Ends the claim on `id`: `handled` keeps it (redeliveries are
    /// duplicates); otherwise it is released so a redelivery is acted on.
    fn finish(&self, id: &str, handled: bool)
    -> impl Future<Output = Result<(), PortError>> + Send;
}

/// The metadb's deliveries log, through any metadb adapter.
#[derive(Debug)]
pub struct MetadbDeliveries<M>(pub M);

impl<M: DeliveryLog> Deliveries for MetadbDeliveries<M> {
    async fn claim(&self, id: &str) -> Result<DeliveryClaim, PortError> {
        self.0.claim_delivery(id).await.port("metadb")
    }

    async fn finish(&self, id: &str, handled: bool) -> Result<(), PortError> {
        self.0.finish_delivery(id, handled).await.port("metadb")
    }
}

/// The type of a receiver with no shared log (tests of other behaviour; it has
/// no value).
#[derive(Debug)]
pub enum NoDeliveryLog {}

impl Deliveries for NoDeliveryLog {
    async fn claim(&self, _: &str) -> Result<DeliveryClaim, PortError> {
        match *self {}
    }

    async fn finish(&self, _: &str, _: bool) -> Result<(), PortError> {
        match *self {}
    }
}

#[derive(Debug)]
pub(crate) struct SeenDeliveries {
    inner: Mutex<(HashSet<String>, VecDeque<String>)>,
    capacity: usize,
}

impl SeenDeliveries {
    pub(crate) fn new(capacity: usize) -> Self {
        SeenDeliveries {
            inner: Mutex::new((HashSet::new(), VecDeque::new())),
            capacity,
        }
    }

    pub(crate) fn contains(&self, id: &str) -> bool {
        self.inner.lock().map(|g| g.0.contains(id)).unwrap_or(false)
    }

    pub(crate) fn insert(&self, id: &str) {
        if let Ok(mut g) = self.inner.lock()
            && g.0.insert(id.to_string())
        {
            g.1.push_back(id.to_string());
            while g.1.len() > self.capacity {
                if let Some(old) = g.1.pop_front() {
                    g.0.remove(&old);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forgets_the_oldest_beyond_capacity() {
        let s = SeenDeliveries::new(2);
        s.insert("a");
        s.insert("b");
        s.insert("a");
        s.insert("c");
        assert!(!s.contains("a") && s.contains("b") && s.contains("c"));
    }
}
