//! File trees that discovery reads: the working directory, an in-memory tree for
//! tests, and (in the git adapter) a tree at a git revision.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::error::{CoreError, Result};
use crate::path::RepoPath;

/// A read-only view of a repository's files. Discovery lists once and reads
/// each file at most once, so implementations need no caching of their own.
pub trait FileTree: Send + Sync {
    /// Every regular file, repository-relative and sorted, leaving out the
    /// directories that never hold units (see [`is_skipped_dir`]). Hidden
    /// directories are listed: whether they count is discovery's choice
    /// ([`crate::discovery::DiscoverOptions::hidden`]).
    fn files(&self) -> Result<Vec<RepoPath>>;

    /// The UTF-8 contents of one file.
    fn read(&self, path: &RepoPath) -> Result<String>;
}

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

/// The working directory of a checkout.
#[derive(Debug, Clone)]
pub struct FsTree {
    root: PathBuf,
}

impl FsTree {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        FsTree { root: root.into() }
    }

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
                    subdirs.push(dir.child(&name));
                }
            } else if ft.is_file() || ft.is_symlink() {
                files.push(dir.child(&name));
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

/// An in-memory tree, for tests and for callers that already hold the files.
#[derive(Debug, Clone, Default)]
pub struct MemTree {
    files: BTreeMap<RepoPath, String>,
}

impl MemTree {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a file; `path` is repository-relative.
    pub fn with(mut self, path: &str, contents: &str) -> Result<Self> {
        self.insert(path, contents)?;
        Ok(self)
    }

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
