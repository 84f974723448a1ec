//! The integration tests of live-ci-core: the scheduler and the webhook routes: one test binary (one link) for the
//! crate, each former `tests/*.rs` a module.

mod scheduler;
mod webhook_routes;
