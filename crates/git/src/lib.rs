//! The git adapter: implements the core's [`Vcs`](live_ci_core::port::Vcs) port with
//! the git CLI (changed files between revisions, file trees at a revision, a
//! checkout's working directory as a tree: [`FsTree`]), and makes the ECS tasks'
//! fresh checkouts.

mod cli;
mod clone;
mod error;
mod fs_tree;
mod tree;
mod verify;

pub use cli::GitCli;
pub use error::GitError;
pub use fs_tree::FsTree;
pub use tree::GitTree;
