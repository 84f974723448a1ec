//! A checkout's working directory as a [`FileTree`], listed in parallel.

use std::path::{Path, PathBuf};

use live_ci_core::error::{CoreError, Result};
use live_ci_core::path::RepoPath;
use live_ci_core::port::FileTree;
use live_ci_core::tree::is_skipped_dir;
use rayon::prelude::*;

/// The working directory of a checkout.
#[derive(Debug, Clone)]
pub struct FsTree {
    root: PathBuf,
}

impl FsTree {
    /// The tree of the checkout at `root` (not read until listed).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        FsTree { root: root.into() }
    }

    /// The checkout's top directory, as given to [`FsTree::new`].
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn walk(&self, dir: &RepoPath) -> Result<Vec<RepoPath>> {
        let abs = self.root.join(dir.as_str());
        let entries = std::fs::read_dir(&abs).map_err(|e| io_err(&abs, e))?;
        let mut files = Vec::new();
        let mut subdirs = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_err(&abs, e))?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue; // non-UTF-8 names cannot be terragrunt paths
            };
            let ft = entry.file_type().map_err(|e| io_err(&entry.path(), e))?;
            if ft.is_dir() {
                if !is_skipped_dir(&name) {
                    subdirs.push(dir.checked_child(&name)?);
                }
            } else if ft.is_file() || ft.is_symlink() {
                files.push(dir.checked_child(&name)?);
            }
        }
        // Subtrees in parallel: a live repo of 10,000 units is mostly directories.
        let nested: Vec<Vec<RepoPath>> = subdirs
            .par_iter()
            .map(|d| self.walk(d))
            .collect::<Result<_>>()?;
        files.extend(nested.into_iter().flatten());
        Ok(files)
    }
}

fn io_err(path: &Path, e: std::io::Error) -> CoreError {
    CoreError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

impl FileTree for FsTree {
    fn files(&self) -> Result<Vec<RepoPath>> {
        let mut files = self.walk(&RepoPath::root())?;
        files.sort();
        Ok(files)
    }

    fn read(&self, path: &RepoPath) -> Result<String> {
        let abs = self.root.join(path.as_str());
        std::fs::read_to_string(&abs).map_err(|e| io_err(&abs, e))
    }
}
