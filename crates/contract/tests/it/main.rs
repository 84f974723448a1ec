//! The integration tests of live-ci-contract: the module contract and the docs checks: one test binary (one link) for the
//! crate, each former `tests/*.rs` a module.

mod docs;
mod github_permissions;
mod layout;
mod local_deployment;
mod module_contract;
