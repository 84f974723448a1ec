//! The notifications port (an SNS topic in AWS, read by the notifier Lambda):
//! publishes one [`Event`]. Advisory by contract: a failed publish is logged
//! and reported by the caller ([`announce`]), never the caller's error, so a
//! chat outage cannot hold up or fail a deploy. The feature is off by default:
//! [`NoNotifications`] publishes nothing.

use std::future::Future;

use crate::notification::Event;
use crate::port::{Classify, PortError};

/// Publishes notifications.
pub trait Notifications: Send + Sync {
    /// The adapter's error, classified retryable or permanent.
    type Error: Classify;

    /// Publishes `event` (sanitized: no vote link, no task token).
    fn publish(&self, event: &Event) -> impl Future<Output = Result<(), Self::Error>> + Send;
}

/// Notifications off (no topic configured): every publish is a no-op.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoNotifications;

impl Notifications for NoNotifications {
    type Error = std::convert::Infallible;

    async fn publish(&self, _event: &Event) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// Publishes `event` under the advisory rule: the event is sanitized first,
/// a failure is logged and handed back as a warning line, never an error.
pub async fn announce<N: Notifications>(notifications: &N, event: Event) -> Option<String> {
    let event = event.sanitized();
    let kind = event.kind_name();
    match notifications.publish(&event).await {
        Ok(()) => None,
        Err(e) => {
            let e = PortError::new("notifications", e);
            tracing::warn!(kind, error = %e, "publishing a notification");
            Some(format!("notification {kind}: {e}"))
        }
    }
}
