//! `live-ci affected`: the units a change affects, with the action and reasons.

use crate::args::{AffectedArgs, ListFormat};
use crate::error::CliError;
use crate::repo::affected_with;
use crate::{Output, render};

/// Runs `live-ci affected`: the units the change affects, as JSON or a table.
pub fn run(args: &AffectedArgs) -> Result<Output, CliError> {
    let (detection, warnings) = affected_with(
        &args.repo.repo,
        &args.change,
        &args.filter,
        args.hidden.no_hidden,
    )?;
    let a = &detection.affected;
    let text = match args.format {
        ListFormat::Json => serde_json::to_string_pretty(a)?,
        ListFormat::Table => {
            let mut rows: Vec<Vec<String>> = a
                .units
                .iter()
                .map(|u| {
                    vec![
                        u.path.to_string(),
                        render::action(u.action).to_string(),
                        u.reasons
                            .iter()
                            .map(|r| render::reason(*r))
                            .collect::<Vec<_>>()
                            .join(", "),
                    ]
                })
                .collect();
            rows.extend(a.skipped.iter().map(|s| {
                vec![
                    s.path.to_string(),
                    format!("skipped {}", render::action(s.action)),
                    "removed; needs --allow-destroy".to_string(),
                ]
            }));
            render::table(&["UNIT", "ACTION", "REASONS"], rows)
        }
    };
    Ok(Output {
        text,
        warnings,
        errors: Vec::new(),
    })
}
