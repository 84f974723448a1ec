//! File trees that discovery reads: an in-memory tree for tests and the
//! directories every listing skips; the working directory (`FsTree`) and a
//! tree at a git revision are in the git adapter (`live-ci-git`).

use std::collections::BTreeMap;

use crate::error::{CoreError, Result};
use crate::path::RepoPath;
use crate::port::FileTree;

/// Directories that never hold units: VCS metadata and the terraform and
/// terragrunt caches, the three terragrunt's discovery always skips. Other
/// hidden directories are walked, as terragrunt walks them by default.
pub fn is_skipped_dir(name: &str) -> bool {
    matches!(name, ".git" | ".terraform" | ".terragrunt-cache")
}

/// A hidden directory (`.name`), which `--no-hidden` leaves out of discovery.
pub fn is_hidden_dir(name: &str) -> bool {
    name.starts_with('.') && name != "." && name != ".."
}

/// True when any directory above `file` is hidden.
pub fn in_hidden_dir(file: &RepoPath) -> bool {
    let mut dir = file.parent();
    while let Some(d) = dir {
        if is_hidden_dir(d.file_name()) {
            return true;
        }
        dir = d.parent();
    }
    false
}

/// True when any directory above `file` is one discovery skips.
pub fn in_skipped_dir(file: &RepoPath) -> bool {
    let mut dir = file.parent();
    while let Some(d) = dir {
        if is_skipped_dir(d.file_name()) {
            return true;
        }
        dir = d.parent();
    }
    false
}

/// An in-memory tree, for tests and for callers that already hold the files.
#[derive(Debug, Clone, Default)]
pub struct MemTree {
    files: BTreeMap<RepoPath, String>,
}

impl MemTree {
    /// An empty tree.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a file; `path` is repository-relative.
    pub fn with(mut self, path: &str, contents: &str) -> Result<Self> {
        self.insert(path, contents)?;
        Ok(self)
    }

    /// Adds or replaces a file; `path` is repository-relative.
    pub fn insert(&mut self, path: &str, contents: &str) -> Result<()> {
        self.files
            .insert(RepoPath::new(path)?, contents.to_string());
        Ok(())
    }
}

impl FileTree for MemTree {
    fn files(&self) -> Result<Vec<RepoPath>> {
        Ok(self
            .files
            .keys()
            .filter(|p| !in_skipped_dir(p))
            .cloned()
            .collect())
    }

    fn read(&self, path: &RepoPath) -> Result<String> {
        self.files.get(path).cloned().ok_or_else(|| CoreError::Io {
            path: path.to_string(),
            message: "no such file".into(),
        })
    }
}
