//! The filters a run obeys, one owner for the pipeline (pr-plan,
//! create-deploy-stack) and the CLI (`affected`, `plan`): which affected units
//! stay, which are left out and by which expression, and the refusal when a
//! unit left out is one a kept unit needs first.
//!
//! Sets combine by intersection: a unit runs only when every set selects it
//! (the pipeline's sets are `.live-ci-filters` at the commit and the module's
//! `deploy_filters`). Within one set the queries combine as [`Filters`] does:
//! positive queries are a union, negative ones remove what they name.

use std::collections::BTreeSet;

use live_ci_core::deploy::Action;
use live_ci_core::path::RepoPath;
use live_ci_core::port::Vcs;

use super::eval::{Components, Filter, Filters, GitRanges};
use crate::change::{Affected, AffectedUnit};
use crate::error::{EngineError, Result};
use crate::graph::Graph;

/// The filters file at the repository root: one query per line, `#` comments.
pub const FILTERS_FILE: &str = ".live-ci-filters";

/// The module variable's name, as errors and the PR comment name it.
pub const DEPLOY_FILTERS: &str = "deploy_filters";

/// One named set of queries: a file, or the module variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterSet {
    /// Where the queries come from (`.live-ci-filters`, `deploy_filters`).
    pub source: String,
    /// The set's queries.
    pub filters: Filters,
}

/// Every set a run obeys; empty sets are dropped (they select everything).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilters {
    /// The non-empty sets; a unit runs only if every set keeps it.
    pub sets: Vec<FilterSet>,
}

impl RunFilters {
    /// The pipeline's sets: `.live-ci-filters` as committed at `rev` (absent
    /// is no filter) and the `deploy_filters` entries. A query that does not
    /// parse is an error naming the file (or variable), line and column.
    pub fn load(vcs: &dyn Vcs, rev: &str, deploy_filters: &[String]) -> Result<RunFilters> {
        let tree = vcs.tree_at(Some(rev))?;
        let file = RepoPath::new(FILTERS_FILE)?;
        // Listed first, so a missing file is "no filter", never a read error.
        let text = if tree.files()?.contains(&file) {
            Some(tree.read(&file)?)
        } else {
            None
        };
        let mut sets = Vec::new();
        if let Some(text) = text {
            sets.push(FilterSet {
                source: FILTERS_FILE.to_string(),
                filters: Filters::parse_file(FILTERS_FILE, &text)?,
            });
        }
        sets.push(FilterSet {
            source: DEPLOY_FILTERS.to_string(),
            filters: Filters::parse_list(DEPLOY_FILTERS, deploy_filters)?,
        });
        Ok(RunFilters::new(sets))
    }

    /// The sets, empty ones dropped.
    pub fn new(sets: Vec<FilterSet>) -> RunFilters {
        RunFilters {
            sets: sets.into_iter().filter(|s| !s.filters.is_empty()).collect(),
        }
    }

    /// Whether no set is left: the run keeps every affected unit.
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }
}

/// An affected unit a filter left out of the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Excluded {
    /// The unit's directory.
    pub path: RepoPath,
    /// What it would have done.
    pub action: Action,
    /// The set that left it out (`.live-ci-filters`, `deploy_filters`).
    pub source: String,
    /// The expression that removed it (a negative query), or, when no
    /// positive query of the set selects it, those positive queries.
    pub expressions: Vec<String>,
}

impl Excluded {
    /// `source: expr` (or `source: none of a, b`), for logs and comments.
    pub fn describe(&self) -> String {
        match self.expressions.as_slice() {
            [one] => format!("{}: {one:?}", self.source),
            many => {
                let quoted: Vec<String> = many.iter().map(|e| format!("{e:?}")).collect();
                format!("{}: selected by none of {}", self.source, quoted.join(", "))
            }
        }
    }
}

/// The affected units the filters keep, and the ones they leave out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Narrowed {
    /// The affected (and skipped) units the filters keep.
    pub affected: Affected,
    /// The affected units the filters leave out.
    pub excluded: Vec<Excluded>,
}

/// Narrows `affected` to what every set selects: applies are matched against
/// the head graph, destroys against the base graph (no base graph: no destroy
/// is selected). Units removed and not destroyed (`skipped`) stay listed only
/// when selected. Refused: leaving out a unit that a kept unit needs first in
/// this run (an apply's dependency, a destroy's dependent), naming both.
pub fn narrow(
    affected: Affected,
    head: &Graph,
    base: Option<&Graph>,
    filters: &RunFilters,
    git: Option<&dyn GitRanges>,
    root: Option<&str>,
) -> Result<Narrowed> {
    if filters.is_empty() {
        return Ok(Narrowed {
            affected,
            excluded: Vec::new(),
        });
    }
    let select = |graph: &Graph, f: &Filters| -> Result<BTreeSet<RepoPath>> {
        let components = Components {
            graph,
            stacks: &[],
            root,
        };
        let selection = f.select_components(&components, git)?;
        Ok(selection
            .units
            .iter()
            .map(|&i| graph.path(i).clone())
            .collect())
    };
    // Per set, what it keeps of each graph.
    let mut kept: Vec<(BTreeSet<RepoPath>, BTreeSet<RepoPath>)> = Vec::new();
    for set in &filters.sets {
        let apply = select(head, &set.filters)?;
        let destroy = match base {
            Some(b) => select(b, &set.filters)?,
            None => BTreeSet::new(),
        };
        kept.push((apply, destroy));
    }
    let keeps = |set: usize, path: &RepoPath, action: Action| {
        let (apply, destroy) = &kept[set];
        match action {
            Action::Apply => apply.contains(path),
            Action::Destroy => destroy.contains(path),
        }
    };
    let Affected { units, skipped } = affected;
    let mut out = Narrowed::default();
    let mut left_out: Vec<AffectedUnit> = Vec::new();
    for u in units {
        match (0..filters.sets.len()).find(|&s| !keeps(s, &u.path, u.action)) {
            None => out.affected.units.push(u),
            Some(s) => {
                let graph = match u.action {
                    Action::Apply => Some(head),
                    Action::Destroy => base,
                };
                let set = &filters.sets[s];
                let expressions = match graph {
                    Some(g) => why_excluded(&set.filters, &u.path, |f| select(g, f))?,
                    None => positive_sources(&set.filters),
                };
                out.excluded.push(Excluded {
                    path: u.path.clone(),
                    action: u.action,
                    source: set.source.clone(),
                    expressions,
                });
                left_out.push(u);
            }
        }
    }
    out.affected.skipped = skipped
        .into_iter()
        .filter(|s| (0..filters.sets.len()).all(|i| keeps(i, &s.path, s.action)))
        .collect();
    refuse_needed(&out, &left_out, head, base)?;
    Ok(out)
}

/// The first negative query that removes `path`, else the set's positive
/// queries (none of which selected it).
fn why_excluded(
    filters: &Filters,
    path: &RepoPath,
    select: impl Fn(&Filters) -> Result<BTreeSet<RepoPath>>,
) -> Result<Vec<String>> {
    for f in filters.iter().filter(|f| f.query().is_negative()) {
        if !select(&Filters::single(f.clone()))?.contains(path) {
            return Ok(vec![f.source().to_string()]);
        }
    }
    Ok(positive_sources(filters))
}

fn positive_sources(filters: &Filters) -> Vec<String> {
    filters
        .iter()
        .filter(|f| !f.query().is_negative())
        .map(Filter::source)
        .map(str::to_string)
        .collect()
}

/// A kept apply whose dependency (transitively, in the head graph) is an
/// affected apply left out; a kept destroy whose dependent (in the base graph)
/// is an affected destroy left out: the run would deploy it without what it
/// needs first.
fn refuse_needed(
    out: &Narrowed,
    left_out: &[AffectedUnit],
    head: &Graph,
    base: Option<&Graph>,
) -> Result<()> {
    for (action, graph) in [(Action::Apply, Some(head)), (Action::Destroy, base)] {
        let Some(graph) = graph else { continue };
        let out_of_run: BTreeSet<&RepoPath> = left_out
            .iter()
            .filter(|u| u.action == action)
            .map(|u| &u.path)
            .collect();
        if out_of_run.is_empty() {
            continue;
        }
        for u in out.affected.units.iter().filter(|u| u.action == action) {
            let Some(i) = graph.index_of(&u.path) else {
                continue;
            };
            let needed = match action {
                Action::Apply => graph.dependencies_closure([i], None),
                Action::Destroy => graph.dependents_closure([i], None),
            };
            let hit = needed
                .into_iter()
                .filter(|&j| j != i)
                .map(|j| graph.path(j))
                .find(|p| out_of_run.contains(p));
            if let Some(needed) = hit {
                let by = out
                    .excluded
                    .iter()
                    .find(|e| &e.path == needed && e.action == action)
                    .map(Excluded::describe)
                    .unwrap_or_default();
                return Err(EngineError::FilterExcludesNeeded {
                    unit: u.path.clone(),
                    needed: needed.clone(),
                    action,
                    by,
                });
            }
        }
    }
    Ok(())
}
