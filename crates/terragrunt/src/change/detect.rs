//! Change detection end to end through the VCS port: diff two revisions, discover
//! the units at head (and at the merge base when a unit may have been removed),
//! and map the changed files onto units.

use std::collections::{BTreeSet, HashMap};

use crate::change::affected::{Affected, affected_units};
use crate::discovery::{
    DiscoverOptions, Discovery, STACK_FILE, Stack, discover, discover_with, generate_stacks,
};
use crate::error::{EngineError, Result};
use crate::filter::{GitRanges, RangeChanges};
use crate::graph::Graph;
use live_ci_core::path::RepoPath;
use live_ci_core::port::{ChangeKind, FileChange, Vcs};
use live_ci_core::tree::in_skipped_dir;

/// Everything change detection learned, for callers that go on to plan.
#[derive(Debug)]
pub struct Detection {
    /// The files the change touches.
    pub changes: Vec<FileChange>,
    /// The unit graph at the head revision (or the working tree).
    pub head: Graph,
    /// The graph at the merge base, discovered only when a `terragrunt.hcl` was
    /// deleted or a change may alter what a stack generates.
    pub base: Option<Graph>,
    /// The units the change deploys or skips.
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
    detect_with(vcs, base, head, allow_destroy, &DiscoverOptions::default())
}

/// [`detect`] with discovery options (`--no-hidden`).
pub fn detect_with(
    vcs: &dyn Vcs,
    base: &str,
    head: Option<&str>,
    allow_destroy: bool,
    options: &DiscoverOptions,
) -> Result<Detection> {
    let changes = vcs.changed_files(base, head)?;
    let discovery = discover_with(&*vcs.tree_at(head)?, options);
    refuse_changed_stacks(&discovery.stacks, &changes)?;
    let removes_config = changes
        .iter()
        .any(|c| c.kind == ChangeKind::Deleted && c.path.file_name() == "terragrunt.hcl");
    // What a stack generates is not committed, so a unit a stack no longer
    // generates deletes no file of the diff: both sides are generated when a
    // change may alter a stack (a stack file anywhere, or what a stack at
    // head watches; a deleted stack file is among the former).
    let regenerates = changes.iter().any(|c| {
        c.path.file_name() == STACK_FILE
            || discovery.stacks.iter().any(|s| s.is_touched_by(&c.path))
    });
    let head_graph = strict_graph(discovery)?;
    let (base_graph, unstacked) = if removes_config || regenerates {
        let merge_base = vcs.merge_base(base, head.unwrap_or("HEAD"))?;
        // Errors at base are not ours to fix: the removed units are all we need.
        let at_base = discover_with(&*vcs.tree_at(Some(&merge_base))?, options);
        // Those head still has are not removed: affected_units decides.
        let unstacked: BTreeSet<RepoPath> = at_base.generation.units.keys().cloned().collect();
        (Some(at_base.into_graph().0), unstacked)
    } else {
        (None, BTreeSet::new())
    };
    let affected = affected_units(
        &head_graph,
        base_graph.as_ref(),
        &changes,
        &unstacked,
        allow_destroy,
    );
    Ok(Detection {
        changes,
        head: head_graph,
        base: base_graph,
        affected,
    })
}

/// A change touching a stack live-ci cannot generate fails the detection,
/// naming the stack and the construct: its units would otherwise be silently
/// left out of the run. Stacks no change touches only warn (in listings).
pub fn refuse_changed_stacks(stacks: &[Stack], changes: &[FileChange]) -> Result<()> {
    for stack in stacks {
        let Some(error) = stack.errors.first() else {
            continue;
        };
        if let Some(change) = changes.iter().find(|c| stack.is_touched_by(&c.path)) {
            return Err(EngineError::StackChanged {
                stack: stack.path.child(STACK_FILE),
                changed: change.path.clone(),
                error: Box::new(error.clone()),
            });
        }
    }
    Ok(())
}

/// The stack check of [`detect`] alone, without discovering units: for a
/// caller that must refuse before it knows the range it deploys, or that
/// finds units another way (a plan scan).
pub fn refuse_changed_stacks_between(vcs: &dyn Vcs, base: &str, head: &str) -> Result<()> {
    let changes = vcs.changed_files(base, Some(head))?;
    let (stacks, _) = generate_stacks(&*vcs.tree_at(Some(head))?)?;
    refuse_changed_stacks(&stacks, &changes)
}

/// The unit graph at `rev` (`None`: the working tree); any discovery error fails it.
pub fn graph_at(vcs: &dyn Vcs, rev: Option<&str>) -> Result<Graph> {
    strict_graph(discover(&*vcs.tree_at(rev)?))
}

/// The graph, or the first problem; a problem of one unit names the unit, so
/// the pipeline's failure says which unit is broken and where.
fn strict_graph(discovery: Discovery) -> Result<Graph> {
    let first_unit_error = discovery
        .unit_errors
        .iter()
        .next()
        .and_then(|(unit, errors)| Some((unit.clone(), errors.first()?.clone())));
    let (graph, errors) = discovery.into_graph();
    if let Some((unit, error)) = first_unit_error {
        return Err(EngineError::Unit {
            unit,
            error: Box::new(error),
        });
    }
    match errors.into_iter().next() {
        None => Ok(graph),
        Some(first) => Err(first),
    }
}

/// Git ranges in filter queries (`[a...b]`, `[ref]`), answered by change detection.
pub struct VcsRanges<'a> {
    /// The repository the ranges are read from.
    pub vcs: &'a dyn Vcs,
}

impl std::fmt::Debug for VcsRanges<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("VcsRanges")
    }
}

impl VcsRanges<'_> {
    /// Every unit a change between the revisions affects: changed, reading a
    /// changed file, or depending on such a unit (what `live-ci affected`
    /// lists), removed units included.
    pub fn affected(&self, base: &str, head: Option<&str>) -> Result<BTreeSet<RepoPath>> {
        let detection = detect(self.vcs, base, head, true).map_err(|e| range_error(base, e))?;
        Ok(detection
            .affected
            .units
            .into_iter()
            .map(|u| u.path)
            .collect())
    }
}

fn range_error(base: &str, e: EngineError) -> EngineError {
    match e {
        EngineError::Core(live_ci_core::CoreError::Vcs(m)) => {
            EngineError::Filter(format!("git range [{base}]: {m}"))
        }
        other => other,
    }
}

impl GitRanges for VcsRanges<'_> {
    fn changed(&self, base: &str, head: Option<&str>) -> Result<RangeChanges> {
        range_changes(self.vcs, base, head, &DiscoverOptions::default())
            .map_err(|e| range_error(base, e))
    }
}

/// The files terragrunt counts as read in a local module: its configuration.
const MODULE_FILE_SUFFIXES: &[&str] = &[".tf", ".tf.json", ".hcl", ".tofu", ".tofu.json"];

/// One side of a range: its units and who reads what.
struct Side {
    graph: Graph,
    readers: HashMap<RepoPath, Vec<usize>>,
    module_users: HashMap<RepoPath, Vec<usize>>,
}

impl Side {
    fn new(d: Discovery) -> Self {
        // A listing tolerates broken units: the graph is what discovery could build.
        let (graph, _) = d.into_graph();
        let mut readers: HashMap<RepoPath, Vec<usize>> = HashMap::new();
        let mut module_users: HashMap<RepoPath, Vec<usize>> = HashMap::new();
        for (i, u) in graph.units().iter().enumerate() {
            for r in &u.reads {
                readers.entry(r.clone()).or_default().push(i);
            }
            for m in &u.module_sources {
                module_users.entry(m.clone()).or_default().push(i);
            }
        }
        Side {
            graph,
            readers,
            module_users,
        }
    }

    fn is_unit(&self, dir: &RepoPath) -> bool {
        self.graph.index_of(dir).is_some()
    }

    /// Units that read `file`: directly, or as configuration of their local module.
    fn readers_of(&self, file: &RepoPath) -> BTreeSet<RepoPath> {
        let mut out: BTreeSet<RepoPath> = self
            .readers
            .get(file)
            .into_iter()
            .flatten()
            .map(|&i| self.graph.path(i).clone())
            .collect();
        if MODULE_FILE_SUFFIXES
            .iter()
            .any(|s| file.file_name().ends_with(s))
        {
            let mut dir = file.parent();
            while let Some(d) = dir {
                for &i in self.module_users.get(&d).into_iter().flatten() {
                    out.insert(self.graph.path(i).clone());
                }
                dir = d.parent();
            }
        }
        out
    }

    fn units_under(&self, dir: &RepoPath) -> impl Iterator<Item = &RepoPath> {
        self.graph
            .units()
            .iter()
            .map(|u| &u.path)
            .filter(move |p| p.starts_with(dir))
    }
}

/// What `[base...head]` selects, file by file as terragrunt's git filter maps
/// a diff: a `terragrunt.hcl` added or changed selects its unit, one deleted
/// selects the unit removed with it (from the base); any other file selects
/// the unit whose directory holds it, and otherwise every unit that reads it
/// (at the head, or at the base for a deleted file); a `terragrunt.stack.hcl`
/// selects its stack and everything below it.
pub fn range_changes(
    vcs: &dyn Vcs,
    base: &str,
    head: Option<&str>,
    options: &DiscoverOptions,
) -> Result<RangeChanges> {
    let changes = vcs.changed_files(base, head)?;
    let to = Side::new(discover_with(&*vcs.tree_at(head)?, options));
    let from = if changes.iter().any(|c| c.kind == ChangeKind::Deleted) {
        let merge_base = vcs.merge_base(base, head.unwrap_or("HEAD"))?;
        Some(Side::new(discover_with(
            &*vcs.tree_at(Some(&merge_base))?,
            options,
        )))
    } else {
        None
    };
    let mut out = RangeChanges::default();
    // A unit of the base: still there at the head (changed) or gone (removed).
    let at_base = |out: &mut RangeChanges, unit: &RepoPath| {
        if to.is_unit(unit) {
            out.changed.insert(unit.clone());
        } else {
            out.removed.insert(unit.clone());
        }
    };
    for change in &changes {
        let file = &change.path;
        if in_skipped_dir(file) {
            continue;
        }
        let dir = file.parent().unwrap_or_else(RepoPath::root);
        let deleted = change.kind == ChangeKind::Deleted;
        match file.file_name() {
            STACK_FILE => {
                out.stacks.insert(dir.clone());
                let below: Vec<RepoPath> = to.units_under(&dir).cloned().collect();
                out.changed.extend(below);
                if let Some(from) = &from
                    && deleted
                {
                    for u in from.units_under(&dir) {
                        at_base(&mut out, u);
                    }
                }
            }
            _ if to.is_unit(&dir) => {
                out.changed.insert(dir);
            }
            "terragrunt.hcl" if deleted && from.as_ref().is_some_and(|f| f.is_unit(&dir)) => {
                out.removed.insert(dir);
            }
            _ if deleted => {
                // Only the base knows who read a deleted file.
                if let Some(from) = &from {
                    for u in from.readers_of(file) {
                        if to.is_unit(&u) {
                            out.changed.insert(u);
                        }
                    }
                }
            }
            _ => out.changed.extend(to.readers_of(file)),
        }
    }
    Ok(out)
}
