//! The file-tree port: a repository's files at one revision, as discovery reads
//! them (the working directory in `live-ci-terragrunt`, a git revision in
//! `live-ci-git`, in memory in `crate::tree`).

use crate::error::Result;
use crate::path::RepoPath;

/// A read-only view of a repository's files. Discovery lists once and reads
/// each file at most once, so implementations need no caching of their own.
pub trait FileTree: Send + Sync {
    /// Every regular file, repository-relative and sorted, leaving out the
    /// directories that never hold units (see [`is_skipped_dir`](crate::tree::is_skipped_dir)). Hidden
    /// directories are listed: whether they count is discovery's choice
    /// (`DiscoverOptions::hidden` in live-ci-terragrunt).
    fn files(&self) -> Result<Vec<RepoPath>>;

    /// The UTF-8 contents of one file.
    fn read(&self, path: &RepoPath) -> Result<String>;
}
