//! SNS as the core's [`Notifications`]: one `Publish` of the event's JSON to
//! the notifications topic (`NOTIFICATION_TOPIC_ARN`), which the notifier
//! Lambda renders and posts. Without a topic (the module's
//! `notification_format` null, the default) every publish is a no-op, so the
//! callers make the same one call either way.

use aws_sdk_sns::Client;
use live_ci_core::notification::Event;
use live_ci_core::port::{ErrorKind, Notifications};

use crate::error::{AwsError, Failure};

/// The environment variable naming the topic; absent or empty: off.
pub const NOTIFICATION_TOPIC_ENV: &str = "NOTIFICATION_TOPIC_ARN";

/// Publishes notification events to one SNS topic, or nowhere when off.
#[derive(Debug, Clone)]
pub struct SnsNotifications {
    /// `None`: notifications are off.
    target: Option<(Client, String)>,
}

impl SnsNotifications {
    /// Publishes to `topic_arn`; `None` or an empty ARN turns publishing off.
    pub fn new(client: Client, topic_arn: Option<String>) -> Self {
        SnsNotifications {
            target: topic_arn
                .filter(|arn| !arn.trim().is_empty())
                .map(|arn| (client, arn)),
        }
    }

    /// The topic from [`NOTIFICATION_TOPIC_ENV`] as `lookup` reads it.
    pub fn topic_from(lookup: impl Fn(&str) -> Option<String>) -> Option<String> {
        lookup(NOTIFICATION_TOPIC_ENV).filter(|arn| !arn.trim().is_empty())
    }

    /// Whether a topic is configured.
    pub fn is_on(&self) -> bool {
        self.target.is_some()
    }
}

impl Notifications for SnsNotifications {
    type Error = AwsError;

    async fn publish(&self, event: &Event) -> Result<(), AwsError> {
        let Some((client, topic)) = &self.target else {
            return Ok(());
        };
        let err = |message: Failure| AwsError::Sns {
            topic: topic.clone(),
            message,
        };
        let message = serde_json::to_string(event)
            .map_err(|e| err(Failure::other(ErrorKind::Permanent, e)))?;
        client
            .publish()
            .topic_arn(topic)
            .message(message)
            .send()
            .await
            .map_err(|e| err(Failure::sdk(e)))?;
        Ok(())
    }
}
