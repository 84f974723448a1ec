//! Loading what commands share: the unit graph, the git repository, filters.

use std::path::Path;

use live_ci_core::change::{Action, Affected, Detection, VcsRanges, detect};
use live_ci_core::filter::Filters;
use live_ci_core::{FsTree, Graph, discover};
use live_ci_git::GitCli;

use crate::args::{ChangeArgs, FilterArgs};
use crate::error::CliError;

pub const DEFAULT_FILTERS_FILE: &str = ".live-ci-filters";

/// The graph of the working tree, with discovery's problems as messages.
pub fn working_graph(repo: &Path) -> Result<(Graph, Vec<String>, Vec<String>), CliError> {
    if !repo.is_dir() {
        return Err(CliError::Read {
            path: repo.display().to_string(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "not a directory"),
        });
    }
    let (graph, errors) = discover(&FsTree::new(repo)).into_graph();
    let warnings = unresolved_warnings(&graph);
    Ok((
        graph,
        errors.iter().map(ToString::to_string).collect(),
        warnings,
    ))
}

/// One warning per path discovery could not resolve statically.
pub fn unresolved_warnings(graph: &Graph) -> Vec<String> {
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
pub fn filters(repo: &Path, args: &FilterArgs) -> Result<Filters, CliError> {
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

/// Change detection between `--base` and `--head`, narrowed by the filters
/// (applies are matched against the head graph, destroys against the base graph).
pub fn affected(
    repo: &Path,
    change: &ChangeArgs,
    filter: &FilterArgs,
) -> Result<(Detection, Vec<String>), CliError> {
    let git = GitCli::open(repo)?;
    let filters = filters(repo, filter)?;
    let mut detection = detect(&git, &change.base, Some(&change.head), change.allow_destroy)?;
    let mut warnings = unresolved_warnings(&detection.head);
    if !filters.is_empty() {
        let ranges = VcsRanges { vcs: &git };
        let keep_apply = paths_of(
            &detection.head,
            &filters.select(&detection.head, Some(&ranges))?,
        );
        let keep_destroy = match &detection.base {
            Some(base) => paths_of(base, &filters.select(base, Some(&ranges))?),
            None => Default::default(),
        };
        let Affected { units, skipped } = std::mem::take(&mut detection.affected);
        detection.affected = Affected {
            units: units
                .into_iter()
                .filter(|u| match u.action {
                    Action::Apply => keep_apply.contains(&u.path),
                    Action::Destroy => keep_destroy.contains(&u.path),
                })
                .collect(),
            skipped: skipped
                .into_iter()
                .filter(|s| keep_destroy.contains(&s.path))
                .collect(),
        };
    }
    warnings.extend(detection.affected.skipped.iter().map(|s| s.reason.clone()));
    Ok((detection, warnings))
}

fn paths_of(
    graph: &Graph,
    selected: &[usize],
) -> std::collections::BTreeSet<live_ci_core::RepoPath> {
    selected.iter().map(|&i| graph.path(i).clone()).collect()
}
