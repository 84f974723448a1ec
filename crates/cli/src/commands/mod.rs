//! One module per subcommand.

pub mod affected;
pub mod find;
pub mod graph;
pub mod plan;
