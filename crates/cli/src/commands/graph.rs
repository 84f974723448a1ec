//! `live-ci graph`: every unit with its dependencies and the files it reads.

use serde::Serialize;

use crate::Output;
use crate::args::{GraphArgs, GraphFormat};
use crate::error::CliError;
use crate::render;
use crate::repo::working_graph;

#[derive(Serialize)]
struct GraphJson<'a> {
    units: Vec<UnitJson<'a>>,
    errors: &'a [String],
}

#[derive(Serialize)]
struct UnitJson<'a> {
    path: &'a str,
    dependencies: Vec<&'a str>,
    reads: Vec<&'a str>,
    modules: Vec<&'a str>,
    unresolved: &'a [live_ci_core::Unresolved],
}

pub fn run(args: &GraphArgs) -> Result<Output, CliError> {
    let (graph, errors, warnings) = working_graph(&args.repo.repo)?;
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
                })
                .collect();
            serde_json::to_string_pretty(&GraphJson {
                units,
                errors: &errors,
            })?
        }
        GraphFormat::Dot => render::graph_dot(&graph),
        GraphFormat::Mermaid => render::graph_mermaid(&graph),
    };
    Ok(Output {
        text,
        warnings,
        errors,
    })
}
