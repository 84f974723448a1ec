//! The integration tests of the receiver Lambda: the handler, the merge lock's truth and
//! which commit statuses may fail a delivery: one test binary (one link) for the crate,
//! each former `tests/*.rs` a module.

mod aurora;
mod deliveries;
mod iam_denied;
mod lock_truth;
mod ports;
mod receiver;
mod statuses;
