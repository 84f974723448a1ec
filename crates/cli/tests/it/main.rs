//! The integration tests of live-ci-cli: the binary, its Data API path, the operator commands, parity with the Python original and the status view: one test binary (one link) for the
//! crate, each former `tests/*.rs` a module.

mod cli;
mod data_api;
mod drift;
mod operator;
mod pacing;
mod parity;
mod status;
