//! live-ci's pure domain: Terragrunt discovery, the unit graph, change detection,
//! filter queries and the runner-pool scheduler. No AWS SDK, no network, no processes:
//! everything outside comes in through the ports in [`port`].

pub mod account;
pub mod approval;
pub mod change;
pub mod child_env;
pub mod deploy;
pub mod discovery;
pub mod error;
pub mod filter;
pub mod graph;
pub mod merge_lock;
pub mod operate;
pub mod params;
pub mod path;
pub mod plan;
pub mod port;
pub mod scheduler;
pub mod settings;
pub mod status;
pub mod task;
pub mod terraform;
pub mod tree;
pub mod unit;
pub mod webhook;

pub use discovery::{DiscoverOptions, Discovery, discover, discover_with};
pub use error::{CoreError, Result};
pub use graph::Graph;
pub use path::RepoPath;
pub use tree::{FileTree, FsTree, MemTree};
pub use unit::{Unit, Unresolved};
