//! The `live-ci-task` entry point, wiring only: the process hardened, the
//! command line and configuration read, then the start's steps ([`start`]:
//! logging, the checked configuration, the AWS configuration, the metadb and
//! GitHub clients) and the subcommand's handler ([`commands`]). Its stdout
//! is written through `live_ci_task::output` only, as the library's is.

#![deny(clippy::print_stdout, clippy::print_stderr)]

mod commands;
mod start;

use anyhow::Context;
use clap::Parser;
use live_ci_boot::Boot;
use live_ci_task::cli::Cli;
use live_ci_task::{Config, ConfigErrors, sandbox, timeline};

fn main() -> anyhow::Result<()> {
    // Before anything else (before any secret is read or any child started):
    // no process of this uid may read this one's memory or environment
    // (`/proc/<pid>/environ`) or ptrace it.
    sandbox::forbid_dumps().context("making the task non-dumpable (PR_SET_DUMPABLE 0)")?;
    timeline::start();
    let cli = Cli::parse();
    // Every variable the subcommand needs is checked before anything is done.
    let config = Config::from_env(cli.command);
    // While this process has one thread: what its children inherit.
    let child_user = config
        .as_ref()
        .ok()
        .and_then(Config::common)
        .and_then(|c| c.child_user);
    sandbox::harden_process(child_user).context("hardening the task before any child")?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?
        .block_on(task_main(config))
}

async fn task_main(config: Result<Config, ConfigErrors>) -> anyhow::Result<()> {
    live_ci_boot::log::task();
    let config = start::checked_config(config).await?;
    let Some(common) = config.common() else {
        start::contract();
        return Ok(());
    };
    let boot = Boot::load().await;
    timeline::mark("aws_config");
    let (clients, github) = start::open(&config, common, boot).await?;
    commands::run(&config, common, &clients, github).await
}
