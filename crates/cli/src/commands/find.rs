//! `live-ci find`: the units filter queries select.

use serde::Serialize;

use live_ci_core::change::VcsRanges;
use live_ci_git::GitCli;

use crate::args::{FindArgs, ListFormat};
use crate::error::CliError;
use crate::repo::{filters, working_graph};
use crate::{Output, render};

#[derive(Serialize)]
struct FindJson<'a> {
    units: Vec<&'a str>,
}

pub fn run(args: &FindArgs) -> Result<Output, CliError> {
    let repo = &args.repo.repo;
    let filters = filters(repo, &args.filter)?;
    let (graph, errors, warnings) = working_graph(repo)?;
    if !errors.is_empty() {
        return Err(CliError::Graph(errors));
    }
    let selected = if filters.needs_git() {
        let git = GitCli::open(repo)?;
        filters.select(&graph, Some(&VcsRanges { vcs: &git }))?
    } else {
        filters.select(&graph, None)?
    };
    let units: Vec<&str> = selected.iter().map(|&i| graph.path(i).as_str()).collect();
    let text = match args.format {
        ListFormat::Json => serde_json::to_string_pretty(&FindJson { units })?,
        ListFormat::Table => render::table(
            &["UNIT"],
            units.iter().map(|u| vec![u.to_string()]).collect(),
        ),
    };
    Ok(Output {
        text,
        warnings,
        errors: Vec::new(),
    })
}
