//! One module per subcommand.

pub mod affected;
pub mod control;
pub mod db;
pub mod drift;
pub mod find;
pub mod graph;
pub mod migrate;
pub mod plan;
pub mod runs;
pub mod status;
