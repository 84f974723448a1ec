//! `live-ci find`: the units (and stacks) filter queries select. As terragrunt's
//! `find`, a unit that cannot be resolved stays listed with its errors, and
//! git ranges list the units they removed.

use serde::Serialize;

use live_ci_git::GitCli;
use live_ci_terragrunt::change::VcsRanges;
use live_ci_terragrunt::filter::Components;

use crate::args::{FindArgs, ListFormat};
use crate::error::CliError;
use crate::repo::{filters, listing};
use crate::{Output, render};

#[derive(Serialize)]
struct FindJson<'a> {
    units: Vec<Found<'a>>,
}

#[derive(Serialize)]
struct Found<'a> {
    path: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    /// Removed by a git range: it exists at the range's base only.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    removed: bool,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    errors: &'a [String],
}

/// Runs `live-ci find`: the selected units and stacks; a graph error (with
/// `--strict`, any unit's error too) fails it before anything is listed.
pub fn run(args: &FindArgs) -> Result<Output, CliError> {
    let repo = &args.repo.repo;
    let filters = filters(repo, &args.filter)?;
    let listing = listing(repo, args.listing.hidden.no_hidden)?;
    let all_errors = listing.all_errors();
    if !listing.graph_errors.is_empty() || (args.listing.strict && !all_errors.is_empty()) {
        return Err(CliError::Graph(all_errors));
    }
    let stacks = listing.stack_paths();
    let components = Components {
        graph: &listing.graph,
        stacks: &stacks,
        root: listing.root.as_deref(),
    };
    let selection = if filters.needs_git() {
        let git = GitCli::open(repo)?;
        filters.select_components(&components, Some(&VcsRanges { vcs: &git }))?
    } else {
        filters.select_components(&components, None)?
    };
    let mut found: Vec<Found<'_>> = selection
        .units
        .iter()
        .map(|&i| {
            let path = listing.graph.path(i);
            Found {
                path: path.as_str(),
                kind: "unit",
                removed: false,
                errors: listing
                    .unit_errors
                    .get(path)
                    .map(Vec::as_slice)
                    .unwrap_or_default(),
            }
        })
        .collect();
    found.extend(selection.removed.iter().map(|p| Found {
        path: p.as_str(),
        kind: "unit",
        removed: true,
        errors: &[],
    }));
    found.extend(selection.stacks.iter().map(|p| Found {
        path: p.as_str(),
        kind: "stack",
        removed: false,
        errors: &[],
    }));
    found.sort_by(|a, b| a.path.cmp(b.path));
    let text = match args.format {
        ListFormat::Json => serde_json::to_string_pretty(&FindJson { units: found })?,
        ListFormat::Table => render::table(
            &["PATH", "TYPE", "NOTE"],
            found
                .iter()
                .map(|f| {
                    let note = if f.removed {
                        "removed".to_string()
                    } else if f.errors.is_empty() {
                        String::new()
                    } else {
                        format!("{} error(s)", f.errors.len())
                    };
                    vec![f.path.to_string(), f.kind.to_string(), note]
                })
                .collect(),
        ),
    };
    let mut warnings = listing.warnings.clone();
    warnings.extend(listing.problems());
    Ok(Output {
        text,
        warnings,
        errors: Vec::new(),
    })
}
