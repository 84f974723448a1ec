//! The apply queue port (SQS in AWS): how a plan task that stays up after its
//! plan receives the approved apply of the same unit, instead of a new task
//! being started for it. One queue per waiting plan task; the state machine
//! sends the apply's task token to it.

use std::future::Future;

/// One short-lived queue per waiting task, addressed by the URL `create` gives.
pub trait ApplyQueue: Send + Sync {
    type Error: crate::port::Classify;

    /// Creates the queue `name` (messages kept `retention_seconds`); its URL.
    fn create(
        &self,
        name: &str,
        retention_seconds: u64,
    ) -> impl Future<Output = Result<String, Self::Error>> + Send;

    /// Waits up to `wait_seconds` for one message and removes it from the
    /// queue before handing it over: a job is taken at most once, and a task
    /// that dies after taking it is the state machine's heartbeat to find.
    fn take(
        &self,
        url: &str,
        wait_seconds: u32,
    ) -> impl Future<Output = Result<Option<String>, Self::Error>> + Send;

    /// Deletes the queue (gone already is fine): a send after this fails, so
    /// the state machine starts a new task for the apply instead.
    fn delete(&self, url: &str) -> impl Future<Output = Result<(), Self::Error>> + Send;
}
