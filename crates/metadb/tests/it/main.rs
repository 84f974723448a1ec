//! The integration tests of live-ci-metadb: PostgreSQL, the Data API and the approval, trunk and TLS paths: one test binary (one link) for the
//! crate, each former `tests/*.rs` a module.

mod approvals;
mod checkout;
mod data_api;
mod data_api_local;
mod deliveries;
mod deploy_comments;
mod drift;
mod errors;
mod functions;
mod job_roles;
mod pacing;
mod pg;
mod settle;
mod terra_run_login;
mod tls;
mod trunk;
mod trunk_sweep;
