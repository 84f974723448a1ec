//! The command line: one subcommand per task kind. Everything else comes from
//! the environment (see [`crate::config::ENV_VARS`]), as ECS passes it.

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "live-ci-task",
    version,
    about = "live-ci's ECS task: create-deploy-stack, terra-run, pr-plan, drift (configured by environment variables)"
)]
/// The parsed command line: which task this process is.
pub struct Cli {
    /// The task to run.
    #[command(subcommand)]
    pub command: TaskCommand,
}

/// The task kinds, one subcommand each (named as the launchers name them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Subcommand)]
pub enum TaskCommand {
    /// A merged pull request: find the affected units, write the run, invoke trigger_sf.
    CreateDeployStack,
    /// One plan or apply of one unit for the state machine (LIVE_CI_PHASE).
    TerraRun,
    /// Plan the units a pull request affects; statuses and a summary comment.
    PrPlan,
    /// Plan every unit of the trunk head with plan roles only; record drift, file issues, notify.
    Drift,
    /// Print the environment variables and IAM actions the task uses, as JSON.
    Contract,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subcommands_match_the_launchers_names() {
        use live_ci_core::task::TaskKind;
        for (kind, expected) in [
            (TaskKind::CreateDeployStack, TaskCommand::CreateDeployStack),
            (TaskKind::TerraRun, TaskCommand::TerraRun),
            (TaskKind::PrPlan, TaskCommand::PrPlan),
            (TaskKind::Drift, TaskCommand::Drift),
        ] {
            let cli = Cli::try_parse_from(["live-ci-task", kind.subcommand()]).unwrap();
            assert_eq!(cli.command, expected);
        }
        assert!(Cli::try_parse_from(["live-ci-task", "deploy"]).is_err());
    }
}
