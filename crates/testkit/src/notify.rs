//! A recording fake of the notifications port: the events published, in
//! order, and a switch that makes every publish fail (the advisory rule).

use std::sync::Mutex;

use live_ci_core::notification::Event;
use live_ci_core::port::Notifications;

use crate::params::{FakeError, lock};

/// Records every published event; fails every publish while `fail` is set.
#[derive(Debug, Default)]
pub struct RecordingNotifications {
    /// Every event published, in order.
    pub published: Mutex<Vec<Event>>,
    /// When set, every publish fails with this message (and records nothing).
    pub fail: Mutex<Option<String>>,
}

impl RecordingNotifications {
    /// The events published so far.
    pub fn published(&self) -> Vec<Event> {
        lock(&self.published).clone()
    }
}

impl Notifications for RecordingNotifications {
    type Error = FakeError;

    async fn publish(&self, event: &Event) -> Result<(), FakeError> {
        if let Some(why) = lock(&self.fail).clone() {
            return Err(FakeError(why));
        }
        lock(&self.published).push(event.clone());
        Ok(())
    }
}
