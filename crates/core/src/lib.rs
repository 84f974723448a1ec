//! live-ci's pure domain that every binary shares: deployments, approvals,
//! statuses, the merge lock, webhook routing and the ports; the Terragrunt engine
//! (units, discovery, graph, change detection, filters, the runner-pool
//! scheduler) is `live-ci-terragrunt`, the task's child environment is in the
//! task. No AWS SDK, no network, no processes:
//! everything outside comes in through the ports in [`port`].

pub mod account;
pub mod approval;
pub mod deploy;
pub mod deploy_comment;
pub mod drift;
pub mod error;
pub mod escape;
pub mod merge_lock;
pub mod notification;
pub mod operate;
pub mod path;
pub mod plan_text;
pub mod plan_view;
pub mod policy;
pub mod port;
pub mod redact;
pub mod run_view;
pub mod settings;
pub mod status;
pub mod task;
pub mod terraform;
pub mod tree;
pub mod voter_identity;
pub mod webhook;

pub use error::{CoreError, Result};
pub use path::RepoPath;
pub use tree::MemTree;
