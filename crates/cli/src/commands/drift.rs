//! `live-ci drift`: the latest drift-check result of every unit from the
//! metadb (issue 32 item 4), as a table or as JSON: unit, state, the trunk
//! commit the check planned, when, the plan's counts and the unit's open
//! drift issue.

use live_ci_core::drift::DriftResult;
use live_ci_core::escape::text::visible;
use live_ci_core::port::DriftStore;
use live_ci_metadb::{Sql, Store};

use crate::Output;
use crate::args::{DriftArgs, ListFormat};
use crate::error::CliError;

/// Runs `live-ci drift` against the metadb the arguments select.
pub fn run(args: &DriftArgs) -> Result<Output, CliError> {
    super::db::runtime()?.block_on(async {
        let db = super::db::connect(&args.db).await?;
        drift(&db, args.format).await
    })
}

/// Lists the latest drift result per unit of `db`.
pub async fn drift<S: Sql>(db: &Store<S>, format: ListFormat) -> Result<Output, CliError> {
    let results = DriftStore::latest_drift(db).await?;
    let text = match format {
        ListFormat::Json => serde_json::to_string_pretty(&results)?,
        ListFormat::Table => table(&results),
    };
    Ok(Output {
        text,
        ..Output::default()
    })
}

/// The table; every value from the repository or the metadb is one visible
/// line (a unit path cannot move the cursor or forge a row).
pub fn table(results: &[DriftResult]) -> String {
    if results.is_empty() {
        return "no drift checks recorded".into();
    }
    let header = ["UNIT", "STATE", "COMMIT", "CHECKED AT", "COUNTS", "ISSUE"].map(str::to_owned);
    let rows: Vec<[String; 6]> = results
        .iter()
        .map(|r| {
            let state = match &r.message {
                Some(m) => format!("{} ({})", r.state, m.chars().take(80).collect::<String>()),
                None => r.state.to_string(),
            };
            [
                visible(r.unit.as_str()),
                visible(&state),
                r.commit_id.chars().take(12).collect(),
                r.checked_at.clone(),
                format!(
                    "+{}/~{}/-{}",
                    r.counts.add, r.counts.change, r.counts.destroy
                ),
                r.issue.map_or_else(|| "-".to_string(), |n| format!("#{n}")),
            ]
        })
        .collect();
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let line: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}
