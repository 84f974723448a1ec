//! The integration tests of live-ci-terragrunt: one test binary (one link) for the
//! crate, each former `tests/*.rs` a module.

mod discovery;
mod hostile_hcl;
mod scheduler;
mod stacks;
