//! The git adapter: implements the core's [`Vcs`](live_ci_core::port::Vcs) port with
//! the git CLI (changed files between revisions, file trees at a revision), and
//! makes the ECS tasks' fresh checkouts.

mod cli;
mod clone;
mod error;
mod tree;
mod verify;

pub use cli::GitCli;
pub use error::GitError;
pub use tree::GitTree;
