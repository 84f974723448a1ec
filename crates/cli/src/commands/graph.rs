//! `live-ci graph`: every unit with its dependencies and the files it reads.
//! A unit that cannot be resolved stays in the graph with its `errors`; only
//! `--strict` (or a dependency cycle) makes that a failure.

use serde::Serialize;

use live_ci_terragrunt::discovery::Stack;

use crate::Output;
use crate::args::{GraphArgs, GraphFormat};
use crate::error::CliError;
use crate::render;
use crate::repo::listing;

#[derive(Serialize)]
struct GraphJson<'a> {
    units: Vec<UnitJson<'a>>,
    stacks: &'a [Stack],
    errors: &'a [String],
}

#[derive(Serialize)]
struct UnitJson<'a> {
    path: &'a str,
    dependencies: Vec<&'a str>,
    reads: Vec<&'a str>,
    modules: Vec<&'a str>,
    unresolved: &'a [live_ci_terragrunt::Unresolved],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    errors: &'a [String],
}

/// Runs `live-ci graph` in the requested format (JSON, DOT or Mermaid).
pub fn run(args: &GraphArgs) -> Result<Output, CliError> {
    let listing = listing(&args.repo.repo, args.listing.hidden.no_hidden)?;
    let errors = listing.all_errors();
    let graph = &listing.graph;
    let text = match args.format {
        GraphFormat::Json => {
            let units = graph
                .units()
                .iter()
                .map(|u| UnitJson {
                    path: u.path.as_str(),
                    dependencies: u.dependencies.iter().map(|p| p.as_str()).collect(),
                    reads: u.reads.iter().map(|p| p.as_str()).collect(),
                    modules: u.module_sources.iter().map(|p| p.as_str()).collect(),
                    unresolved: &u.unresolved,
                    errors: listing
                        .unit_errors
                        .get(&u.path)
                        .map(Vec::as_slice)
                        .unwrap_or_default(),
                })
                .collect();
            serde_json::to_string_pretty(&GraphJson {
                units,
                stacks: &listing.stacks,
                errors: &errors,
            })?
        }
        GraphFormat::Dot => render::graph_dot(graph),
        GraphFormat::Mermaid => render::graph_mermaid(graph),
    };
    let mut warnings = listing.warnings.clone();
    let fatal = if args.listing.strict {
        errors
    } else {
        warnings.extend(listing.problems());
        listing.graph_errors.clone()
    };
    Ok(Output {
        text,
        warnings,
        errors: fatal,
    })
}
