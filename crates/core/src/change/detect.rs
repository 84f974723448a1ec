//! Change detection end to end through the VCS port: diff two revisions, discover
//! the units at head (and at the merge base when a unit may have been removed),
//! and map the changed files onto units.

use std::collections::BTreeSet;

use crate::change::affected::{Affected, affected_units};
use crate::discovery::discover;
use crate::error::{CoreError, Result};
use crate::filter::GitRanges;
use crate::graph::Graph;
use crate::path::RepoPath;
use crate::port::{ChangeKind, FileChange, Vcs};

/// Everything change detection learned, for callers that go on to plan.
#[derive(Debug)]
pub struct Detection {
    pub changes: Vec<FileChange>,
    pub head: Graph,
    /// The graph at the merge base, discovered only when a `terragrunt.hcl` was deleted.
    pub base: Option<Graph>,
    pub affected: Affected,
}

/// Units affected between the merge base of `base` and `head` (`None`: the
/// working tree). Discovery problems at head (syntax errors, missing
/// dependencies, cycles) fail the detection: deploying a broken graph is never right.
pub fn detect(
    vcs: &dyn Vcs,
    base: &str,
    head: Option<&str>,
    allow_destroy: bool,
) -> Result<Detection> {
    let changes = vcs.changed_files(base, head)?;
    let head_graph = graph_at(vcs, head)?;
    let removes_config = changes
        .iter()
        .any(|c| c.kind == ChangeKind::Deleted && c.path.file_name() == "terragrunt.hcl");
    let base_graph = if removes_config {
        let merge_base = vcs.merge_base(base, head.unwrap_or("HEAD"))?;
        // Errors at base are not ours to fix: the removed units are all we need.
        Some(discover(&*vcs.tree_at(Some(&merge_base))?).into_graph().0)
    } else {
        None
    };
    let affected = affected_units(&head_graph, base_graph.as_ref(), &changes, allow_destroy);
    Ok(Detection {
        changes,
        head: head_graph,
        base: base_graph,
        affected,
    })
}

/// The unit graph at `rev` (`None`: the working tree); any discovery error fails it.
pub fn graph_at(vcs: &dyn Vcs, rev: Option<&str>) -> Result<Graph> {
    let (graph, errors) = discover(&*vcs.tree_at(rev)?).into_graph();
    match errors.into_iter().next() {
        None => Ok(graph),
        Some(first) => Err(first),
    }
}

/// Git ranges in filter queries (`[a...b]`, `[ref]`), answered by change detection.
pub struct VcsRanges<'a> {
    pub vcs: &'a dyn Vcs,
}

impl std::fmt::Debug for VcsRanges<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("VcsRanges")
    }
}

impl GitRanges for VcsRanges<'_> {
    fn affected(&self, base: &str, head: Option<&str>) -> Result<BTreeSet<RepoPath>> {
        let detection = detect(self.vcs, base, head, true).map_err(|e| match e {
            CoreError::Vcs(m) => CoreError::Filter(format!("git range [{base}]: {m}")),
            other => other,
        })?;
        Ok(detection
            .affected
            .units
            .into_iter()
            .map(|u| u.path)
            .collect())
    }
}
