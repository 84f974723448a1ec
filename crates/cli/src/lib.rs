//! The `live-ci` command line: dry runs of what the pipeline would do, printed as
//! stable JSON (for other tools) or as tables, DOT and Mermaid (for people), and
//! the operator's controls over the deployed pipeline (runs, status, abort,
//! retry, unlock, migrate) through either metadb connection.

mod args;
pub mod commands;
mod error;
mod render;
mod repo;

use std::io::Write;
use std::process::ExitCode;

pub use args::{Cli, Command, ListFormat};
pub use error::CliError;

/// Runs one command, printing its output on stdout and problems on stderr.
/// Exit codes: 0 success, 1 an error in the input or the repository, 2 bad usage.
pub fn run(cli: Cli) -> ExitCode {
    let result = match &cli.command {
        Command::Graph(a) => commands::graph::run(a),
        Command::Affected(a) => commands::affected::run(a),
        Command::Find(a) => commands::find::run(a),
        Command::Plan(a) => commands::plan::run(a),
        Command::Migrate(a) => commands::migrate::run(a),
        Command::Status(a) => commands::status::run(a),
        Command::Runs(a) => commands::runs::run(a),
        Command::Drift(a) => commands::drift::run(a),
        Command::Abort(a) => commands::control::abort(a),
        Command::Retry(a) => commands::control::retry(a),
        Command::Unlock(a) => commands::control::unlock(a),
    };
    let mut stderr = std::io::stderr().lock();
    match result {
        Ok(out) => {
            for w in &out.warnings {
                let _ = writeln!(stderr, "warning: {w}");
            }
            for e in &out.errors {
                let _ = writeln!(stderr, "error: {e}");
            }
            let mut stdout = std::io::stdout().lock();
            if writeln!(stdout, "{}", out.text.trim_end()).is_err() {
                return ExitCode::from(1);
            }
            if out.errors.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            let _ = writeln!(stderr, "error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// What a command printed: its output, and problems found along the way (errors
/// make the exit code 1 even when output was produced, as `graph` does).
#[derive(Debug, Default)]
pub struct Output {
    /// What goes to stdout (trailing whitespace trimmed on print).
    pub text: String,
    /// Printed on stderr as `warning: ...`; they do not change the exit code.
    pub warnings: Vec<String>,
    /// Printed on stderr as `error: ...`; any makes the exit code 1.
    pub errors: Vec<String>,
}
