//! A Terragrunt unit as discovery sees it: where it is, what it depends on, and
//! every file whose change must redeploy it.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use live_ci_core::path::RepoPath;

/// One deployable directory (it holds a `terragrunt.hcl` that is not only a parent
/// config).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unit {
    /// The unit's directory.
    pub path: RepoPath,
    /// Directories of the units it depends on (`dependency` blocks, also those of
    /// included files, and `dependencies { paths }`).
    pub dependencies: BTreeSet<RepoPath>,
    /// Files other than its own `terragrunt.hcl` that it includes or reads,
    /// transitively (`include`, `read_terragrunt_config`, `file`, `templatefile`,
    /// `read_tfvars_file`, `sops_decrypt_file`).
    pub reads: BTreeSet<RepoPath>,
    /// Local module directories from `terraform { source = "../modules/x" }`.
    pub module_sources: BTreeSet<RepoPath>,
    /// Paths discovery could not resolve statically: reported, never guessed.
    pub unresolved: Vec<Unresolved>,
}

impl Unit {
    /// A unit at directory `path` with nothing discovered yet.
    pub fn new(path: RepoPath) -> Self {
        Unit {
            path,
            dependencies: BTreeSet::new(),
            reads: BTreeSet::new(),
            module_sources: BTreeSet::new(),
            unresolved: Vec::new(),
        }
    }

    /// The unit's name in filter queries: its directory's last component.
    pub fn name(&self) -> &str {
        self.path.file_name()
    }

    /// The unit's own config file.
    pub fn config_file(&self) -> RepoPath {
        self.path.child("terragrunt.hcl")
    }
}

/// A path expression discovery could not evaluate without running terragrunt
/// (an environment variable, a dependency output, an unknown function...).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Unresolved {
    /// The file holding the expression.
    pub file: RepoPath,
    /// Where in it, e.g. `dependency.vpc.config_path` or `include.root.path`.
    pub field: String,
    /// Why it could not be resolved, naming the offending function or variable.
    pub reason: String,
}
