//! Every statement the metadb runs, in the shared dialect (`:name` parameters;
//! arrays and records arrive as JSON text and are cast in SQL). A statement that
//! returns rows returns exactly one text column, a JSON document per row.
//!
//! One file per port, beside the store files (`crate::store`); every
//! statement is re-exported here, so `sql::statements::NAME` stays the path.

mod deliveries;
mod executions;
mod migrations;
mod runs;
mod sweep;
mod votes;

pub use deliveries::*;
pub use executions::*;
pub use migrations::*;
pub use runs::*;
pub use sweep::*;
pub use votes::*;
