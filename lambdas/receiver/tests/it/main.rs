//! The integration tests of the receiver Lambda: the handler and the merge lock's truth: one test binary (one link) for the
//! crate, each former `tests/*.rs` a module.

mod lock_truth;
mod receiver;
