//! One module per subcommand.

pub mod affected;
pub mod find;
pub mod graph;
pub mod migrate;
pub mod plan;
pub mod status;
