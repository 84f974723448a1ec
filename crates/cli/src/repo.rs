//! Loading what commands share: the unit graph, the git repository, filters.

use std::path::Path;

use std::collections::BTreeMap;

use live_ci_core::{CoreError, RepoPath};
use live_ci_git::FsTree;
use live_ci_git::GitCli;
use live_ci_terragrunt::change::{Detection, VcsRanges, detect_with};
use live_ci_terragrunt::discovery::Stack;
use live_ci_terragrunt::filter::{FILTERS_FILE, FilterSet, Filters, RunFilters, narrow};
use live_ci_terragrunt::{DiscoverOptions, EngineError, Graph, discover_with};

use crate::args::{ChangeArgs, FilterArgs};
use crate::error::CliError;

pub(crate) const DEFAULT_FILTERS_FILE: &str = FILTERS_FILE;

/// The working tree as a listing sees it: the graph, the stacks, and every
/// problem, attributed to the unit (or stack) it breaks where it has one.
pub(crate) struct Listing {
    pub graph: Graph,
    pub stacks: Vec<Stack>,
    /// Problems of one unit: it stays listed, the problem is reported with it.
    pub unit_errors: BTreeMap<RepoPath, Vec<String>>,
    /// Problems of the graph as a whole (dependency cycles).
    pub graph_errors: Vec<String>,
    pub warnings: Vec<String>,
    /// The repository root's absolute path, for `reading=/abs/path`.
    pub root: Option<String>,
}

impl Listing {
    /// Every problem, units' and stacks' first, as stderr lines.
    pub(crate) fn all_errors(&self) -> Vec<String> {
        let mut out: Vec<String> = self.unit_errors.values().flatten().cloned().collect();
        out.extend(
            self.stacks
                .iter()
                .flat_map(|s| s.errors.iter().map(ToString::to_string)),
        );
        // A broken shared file breaks every unit including it: say it once.
        let mut seen = std::collections::HashSet::new();
        out.retain(|e| seen.insert(e.clone()));
        out.extend(self.graph_errors.iter().cloned());
        out
    }

    /// The problems a lenient listing reports on stderr and goes on: each unit's
    /// and stack's, naming it.
    pub(crate) fn problems(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .unit_errors
            .iter()
            .flat_map(|(u, es)| {
                es.iter()
                    .map(move |e| format!("unit {u} is listed unresolved: {e}"))
            })
            .collect();
        out.extend(self.stacks.iter().flat_map(|s| {
            s.errors
                .iter()
                .map(move |e| format!("stack {} is listed unresolved: {e}", s.path))
        }));
        out
    }

    pub(crate) fn stack_paths(&self) -> Vec<RepoPath> {
        self.stacks.iter().map(|s| s.path.clone()).collect()
    }
}

/// Discovers the working tree; `--no-hidden` leaves hidden directories out.
pub(crate) fn listing(repo: &Path, no_hidden: bool) -> Result<Listing, CliError> {
    if !repo.is_dir() {
        return Err(CliError::Read {
            path: repo.display().to_string(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "not a directory"),
        });
    }
    let options = DiscoverOptions { hidden: !no_hidden };
    let discovery = discover_with(&FsTree::new(repo), &options);
    let stacks = discovery.stacks.clone();
    let mut unit_errors: BTreeMap<RepoPath, Vec<String>> = discovery
        .unit_errors
        .iter()
        .map(|(u, es)| (u.clone(), es.iter().map(ToString::to_string).collect()))
        .collect();
    let (graph, errors) = discovery.into_graph();
    let mut graph_errors = Vec::new();
    for e in errors {
        match &e {
            // Already listed under the units that hit them.
            EngineError::Syntax { .. }
            | EngineError::Config { .. }
            | EngineError::TooLarge { .. }
            | EngineError::MissingFile { .. }
            | EngineError::Core(CoreError::InvalidPath { .. } | CoreError::Io { .. }) => {}
            EngineError::NotAUnit { unit, .. } => {
                unit_errors
                    .entry(unit.clone())
                    .or_default()
                    .push(e.to_string());
            }
            _ => graph_errors.push(e.to_string()),
        }
    }
    let mut warnings = unresolved_warnings(&graph);
    warnings.extend(stacks.iter().flat_map(Stack::unsupported));
    let root = std::fs::canonicalize(repo)
        .ok()
        .and_then(|p| p.to_str().map(str::to_string));
    Ok(Listing {
        graph,
        stacks,
        unit_errors,
        graph_errors,
        warnings,
        root,
    })
}

/// One warning per path discovery could not resolve statically.
pub(crate) fn unresolved_warnings(graph: &Graph) -> Vec<String> {
    graph
        .units()
        .iter()
        .flat_map(|u| {
            u.unresolved.iter().map(move |x| {
                format!(
                    "{}: {} in {} was not resolved ({}); its changes are not tracked",
                    u.path, x.field, x.file, x.reason
                )
            })
        })
        .collect()
}

/// The queries of `--filter` flags and the filters file.
pub(crate) fn filters(repo: &Path, args: &FilterArgs) -> Result<Filters, CliError> {
    let mut filters = Filters::parse(args.filters.iter().map(String::as_str))?;
    let (file, explicit) = match &args.filters_file {
        Some(f) => (f.clone(), true),
        None => (repo.join(DEFAULT_FILTERS_FILE), false),
    };
    if args.no_filters_file && !explicit {
        return Ok(filters);
    }
    match std::fs::read_to_string(&file) {
        Ok(text) => filters.extend(Filters::parse_file(&file.display().to_string(), &text)?),
        // The default file is optional; one named on the command line is not.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {}
        Err(source) => {
            return Err(CliError::Read {
                path: file.display().to_string(),
                source,
            });
        }
    }
    Ok(filters)
}

/// What the queries of `--filter` and the filters file are called in messages.
fn filters_source(args: &FilterArgs) -> String {
    match (&args.filters_file, args.filters.is_empty()) {
        (_, false) => "--filter".to_string(),
        (Some(f), true) => f.display().to_string(),
        (None, true) => DEFAULT_FILTERS_FILE.to_string(),
    }
}

/// Change detection between `--base` and `--head`, narrowed by the filters
/// (applies are matched against the head graph, destroys against the base graph).
pub(crate) fn affected(
    repo: &Path,
    change: &ChangeArgs,
    filter: &FilterArgs,
) -> Result<(Detection, Vec<String>), CliError> {
    affected_with(repo, change, filter, false)
}

/// [`affected`], with `--no-hidden`.
pub(crate) fn affected_with(
    repo: &Path,
    change: &ChangeArgs,
    filter: &FilterArgs,
    no_hidden: bool,
) -> Result<(Detection, Vec<String>), CliError> {
    let git = GitCli::open(repo)?;
    let filters = filters(repo, filter)?;
    let options = DiscoverOptions { hidden: !no_hidden };
    let mut detection = detect_with(
        &git,
        &change.base,
        Some(&change.head),
        change.allow_destroy,
        &options,
    )?;
    let mut warnings = unresolved_warnings(&detection.head);
    if !filters.is_empty() {
        let ranges = VcsRanges { vcs: &git };
        let root = std::fs::canonicalize(repo)
            .ok()
            .and_then(|p| p.to_str().map(str::to_string));
        // The pipeline's own narrowing (live_ci_terragrunt::filter::narrow), so
        // the CLI and a run agree on a commit: the same units kept, the same
        // refusal when a left-out unit is needed first.
        let set = FilterSet {
            source: filters_source(filter),
            filters,
        };
        let narrowed = narrow(
            std::mem::take(&mut detection.affected),
            &detection.head,
            detection.base.as_ref(),
            &RunFilters::new(vec![set]),
            Some(&ranges),
            root.as_deref(),
        )?;
        detection.affected = narrowed.affected;
        warnings.extend(
            narrowed
                .excluded
                .iter()
                .map(|e| format!("{} is left out by {}", e.path, e.describe())),
        );
    }
    warnings.extend(detection.affected.skipped.iter().map(|s| s.reason.clone()));
    Ok((detection, warnings))
}
