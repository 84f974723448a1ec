//! `live-ci runs`: the newest runs with their progress, newest first, and which
//! one holds the merge lock; as a table or as JSON.

use live_ci_core::operate::RunSummary;

use live_ci_core::port::RunControl;
use live_ci_metadb::{Sql, Store};

use crate::Output;
use crate::args::{ListFormat, RunsArgs};
use crate::error::CliError;

/// Runs `live-ci runs` against the metadb the arguments select.
pub fn run(args: &RunsArgs) -> Result<Output, CliError> {
    super::db::runtime()?.block_on(async {
        let db = super::db::connect(&args.db).await?;
        runs(&db, args.limit, args.format).await
    })
}

/// Lists the runs of `db`.
pub async fn runs<S: Sql>(
    db: &Store<S>,
    limit: u32,
    format: ListFormat,
) -> Result<Output, CliError> {
    let runs = RunControl::runs(db, limit).await?;
    let text = match format {
        ListFormat::Json => serde_json::to_string_pretty(&runs)?,
        ListFormat::Table => table(&runs),
    };
    Ok(Output {
        text,
        ..Output::default()
    })
}

fn table(runs: &[RunSummary]) -> String {
    if runs.is_empty() {
        return "no runs".into();
    }
    let header = ["RUN", "PR", "COMMIT", "STATUS", "UNITS", "PROGRESS", "NOTE"].map(str::to_owned);
    let rows: Vec<[String; 7]> = runs
        .iter()
        .map(|r| {
            let p = &r.progress;
            let mut note = Vec::new();
            if r.holds_lock {
                note.push("holds the merge lock".to_string());
            }
            if let Some(of) = r.retry_of {
                note.push(format!("retry of run {of}"));
            }
            [
                r.run.run_id.to_string(),
                format!("#{}", r.run.pr_id),
                r.run.commit_id.chars().take(12).collect(),
                r.run.status.as_str().to_owned(),
                p.total().to_string(),
                format!(
                    "{} succeeded · {} running · {} waiting · {} failed · {} aborted",
                    p.succeeded, p.running, p.waiting, p.failed, p.aborted
                ),
                note.join(", "),
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
