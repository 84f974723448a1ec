//! Where the receiver checks a "locked" merge lock parameter: the metadb's lock
//! row, which the parameter only mirrors. A mirror write lost after a run
//! finished would otherwise keep every pull request locked until the sweep
//! repairs it; checked against the row, "locked" cannot outlive the run. The
//! check itself is the lock's owner's (`merge_lock::read_confirmed`); the
//! receiver names its types here so its public paths stay.

pub use live_ci_core::merge_lock::{LockTruth, MetadbLock, NoLockCheck};
