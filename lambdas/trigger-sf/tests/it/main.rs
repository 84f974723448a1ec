//! The integration tests of the trigger_sf Lambda: events, the handler against PostgreSQL, LocalStack and the trunk sweep: one test binary (one link) for the
//! crate, each former `tests/*.rs` a module.

mod deploy_comment;
mod events;
mod localstack;
mod lock_owner;
mod lock_scope;
mod notify;
mod ports;
mod round_trips;
mod screens;
mod trigger;
mod trunk_sweep;
