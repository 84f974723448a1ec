//! The `live-ci` binary: parses arguments and hands over to the library.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // clap exits with 2 on bad usage (and 0 for --help) by itself.
    let cli = live_ci_cli::Cli::parse();
    live_ci_cli::run(cli)
}
