//! live-ci's Terragrunt engine: discovery of units from `terragrunt.hcl` files, the
//! unit graph, change detection, filter queries, deployment plans and the
//! providers a unit uses. Pure like `live-ci-core` (no AWS SDK, no network, no
//! processes); kept apart so the Lambdas do not compile hcl-rs, rayon or globset.

pub mod change;
pub mod discovery;
pub mod error;
pub mod executions;
pub mod filter;
pub mod graph;
pub mod plan;
pub mod policy;
pub mod providers;
pub mod scheduler;
pub mod unit;

pub use discovery::{DiscoverOptions, Discovery, discover, discover_with};
pub use error::{EngineError, Result};
pub use graph::Graph;
pub use unit::{Unit, Unresolved};
