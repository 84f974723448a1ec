//! Where the receiver checks a "locked" merge lock parameter: the metadb's lock
//! row, which the parameter only mirrors. A mirror write lost after a run
//! finished would otherwise keep every pull request locked until the sweep
//! repairs it; checked against the row, "locked" cannot outlive the run.

use std::future::Future;

use live_ci_core::merge_lock::MergeLock;
use live_ci_core::port::{PortError, PortResultExt, RunStore};

/// The merge lock as the metadb (the truth) has it.
pub trait LockTruth: Send + Sync {
    fn merge_lock(&self) -> impl Future<Output = Result<MergeLock, PortError>> + Send;
}

/// The metadb's lock row, through any metadb adapter.
#[derive(Debug)]
pub struct MetadbLock<M>(pub M);

impl<M: RunStore> LockTruth for MetadbLock<M> {
    async fn merge_lock(&self) -> Result<MergeLock, PortError> {
        self.0
            .merge_lock()
            .await
            .map(|row| row.lock())
            .port("metadb")
    }
}

/// The type of a receiver that answers from the parameter alone (it has no
/// value).
#[derive(Debug)]
pub enum NoLockCheck {}

impl LockTruth for NoLockCheck {
    async fn merge_lock(&self) -> Result<MergeLock, PortError> {
        match *self {}
    }
}
