//! The integration tests of live-ci-git: the git adapter against real repositories: one test binary (one link) for the
//! crate, each former `tests/*.rs` a module.

mod clone;
mod git_cli;
mod hostile_config;
