//! `live-ci status`: a run's units and their statuses from the metadb, as a
//! table under a progress bar; with `--watch` it redraws as the run advances
//! until the run has finished (the demo's live view).

use std::io::{IsTerminal, Write};
use std::time::Duration;

use serde::Serialize;

use live_ci_core::deploy::{Action, ExecutionRecord, ExecutionStatus, RunRecord, RunStatus};
use live_ci_core::escape::text;
use live_ci_core::port::{ExecutionStore, RunStore};
use live_ci_metadb::AnyMetadb;

use crate::Output;
use crate::args::{ListFormat, StatusArgs};
use crate::error::CliError;

/// Width of the progress bar, in cells.
const BAR: usize = 30;

#[derive(Serialize)]
struct StatusJson<'a> {
    run: &'a RunRecord,
    executions: Vec<ExecutionJson<'a>>,
}

#[derive(Serialize)]
struct ExecutionJson<'a> {
    execution_id: &'a str,
    cfg_path: &'a str,
    account_name: &'a str,
    action: &'a str,
    is_rollback: bool,
    status: ExecutionStatus,
    status_reason: Option<&'a str>,
}

/// Runs `live-ci status`, once or (`--watch`) until the run has finished.
pub fn run(args: &StatusArgs) -> Result<Output, CliError> {
    super::db::runtime()?.block_on(async {
        let db = super::db::connect(&args.db).await?;
        let tty = std::io::stdout().is_terminal();
        let mut shown = String::new();
        loop {
            let (run, executions) = snapshot(&db, args).await?;
            let finished = matches!(run.status, RunStatus::Succeeded | RunStatus::Failed);
            if !args.watch || finished {
                let text = match args.format {
                    ListFormat::Table => render(&run, &executions),
                    ListFormat::Json => json(&run, &executions)?,
                };
                if args.watch && tty {
                    print!("\x1b[H\x1b[2J");
                }
                return Ok(Output {
                    text,
                    ..Output::default()
                });
            }
            let frame = render(&run, &executions);
            if frame != shown {
                let mut out = std::io::stdout().lock();
                // A terminal gets the frame redrawn in place; a log gets each
                // new frame once, so it reads as a history of the run.
                let written = if tty {
                    writeln!(out, "\x1b[H\x1b[2J{frame}").and_then(|()| out.flush())
                } else {
                    writeln!(out, "{frame}\n").and_then(|()| out.flush())
                };
                written.map_err(|e| CliError::Read {
                    path: "<stdout>".into(),
                    source: e,
                })?;
                shown = frame;
            }
            tokio::time::sleep(Duration::from_millis(args.interval_ms)).await;
        }
    })
}

async fn snapshot(
    db: &AnyMetadb,
    args: &StatusArgs,
) -> Result<(RunRecord, Vec<ExecutionRecord>), CliError> {
    let run = match (&args.run, &args.commit) {
        (Some(id), _) => db.run(*id).await?,
        (None, Some(commit)) => db.run_by_commit(commit).await?,
        (None, None) => match db.merge_lock().await?.run_id {
            Some(id) => db.run(id).await?,
            None => {
                return Err(CliError::Usage(
                    "no run holds the merge lock: give --run or --commit".into(),
                ));
            }
        },
    };
    let Some(run) = run else {
        let which = match (&args.run, &args.commit) {
            (Some(id), _) => format!("run {id}"),
            (None, Some(commit)) => format!("a run for commit {commit:?}"),
            (None, None) => "the locked run".into(),
        };
        return Err(CliError::Usage(format!("the metadb has no {which}")));
    };
    let executions = db.executions(run.run_id).await?;
    Ok((run, executions))
}

fn json(run: &RunRecord, executions: &[ExecutionRecord]) -> Result<String, CliError> {
    let out = StatusJson {
        run,
        executions: sorted(executions)
            .into_iter()
            .map(|e| ExecutionJson {
                execution_id: &e.execution_id,
                cfg_path: e.cfg_path.as_str(),
                account_name: &e.account_name,
                action: action_name(e.action),
                is_rollback: e.is_rollback,
                status: e.status,
                status_reason: e.status_reason.as_deref(),
            })
            .collect(),
    };
    Ok(serde_json::to_string_pretty(&out)?)
}

fn action_name(action: Action) -> &'static str {
    match action {
        Action::Apply => "apply",
        Action::Destroy => "destroy",
    }
}

/// Creation order, rollbacks last: the order the run was planned in.
fn sorted(executions: &[ExecutionRecord]) -> Vec<&ExecutionRecord> {
    let mut sorted: Vec<&ExecutionRecord> = executions.iter().collect();
    sorted.sort_by_key(|e| (e.is_rollback, e.created_at, e.execution_id.clone()));
    sorted
}

/// The run as a header, a progress bar and one line per unit. Values from the
/// metadb (unit paths, account names, failure reasons with a child's output)
/// are [`text::visible`]: an escape sequence in them can neither clear nor
/// redraw the operator's terminal, nor a newline forge a row.
pub fn render(run: &RunRecord, executions: &[ExecutionRecord]) -> String {
    let count = |s: ExecutionStatus| executions.iter().filter(|e| e.status == s).count();
    let total = executions.len();
    let done = executions.iter().filter(|e| e.status.is_finished()).count();
    let filled = (done * BAR).checked_div(total).unwrap_or(BAR);
    let percent = (done * 100).checked_div(total).unwrap_or(100);
    let mut out = format!(
        "run {} · PR #{} · commit {} · {}\n[{}{}] {done}/{total} ({percent}%) · {} running · {} waiting · {} succeeded · {} failed · {} aborted\n\n",
        run.run_id,
        run.pr_id,
        text::visible(&run.commit_id.chars().take(12).collect::<String>()),
        run.status.as_str(),
        "#".repeat(filled),
        "-".repeat(BAR - filled),
        count(ExecutionStatus::Running),
        count(ExecutionStatus::Waiting),
        count(ExecutionStatus::Succeeded),
        count(ExecutionStatus::Failed),
        count(ExecutionStatus::Aborted),
    );
    let rows: Vec<[String; 5]> = sorted(executions)
        .into_iter()
        .map(|e| {
            let action = if e.is_rollback {
                format!("{} (rollback)", action_name(e.action))
            } else {
                action_name(e.action).to_owned()
            };
            [
                text::visible(e.cfg_path.as_str()),
                text::visible(&e.account_name),
                action,
                e.status.as_str().to_owned(),
                text::visible(e.status_reason.as_deref().unwrap_or_default()),
            ]
        })
        .collect();
    let header = ["UNIT", "ACCOUNT", "ACTION", "STATUS", "DETAIL"].map(str::to_owned);
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
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
