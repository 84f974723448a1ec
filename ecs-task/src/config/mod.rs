//! The task's configuration, from the environment the Terraform module sets on
//! the task definitions (shared by all subcommands) plus the per-task overrides
//! of the receiver (`live_ci_core::task::env`) and of the state machine
//! (`live_ci_stepfunctions::payload::task_env`). Every name read is in [`ENV_VARS`].

mod aws_actions;
mod common;
mod jobs;
mod module_sources;
mod names;
mod read;
#[cfg(test)]
mod tests;

use live_ci_boot::settings::Env;
use live_ci_metadb::MetadbConfig;
use live_ci_stepfunctions::payload::task_env;

use crate::cli::TaskCommand;
use read::{finish, metadb};

pub use aws_actions::{
    AWS_ACTIONS, CREATE_DEPLOY_STACK_AWS_ACTIONS, DRIFT_AWS_ACTIONS, JOB_AWS_ACTIONS,
    PR_PLAN_AWS_ACTIONS, TERRA_RUN_AWS_ACTIONS,
};
pub use common::{Common, ScanType, github_clone_url, github_web_url};
pub use jobs::{CreateDeployStackConfig, DriftConfig, PhaseInput, PrPlanConfig, TerraRunConfig};
pub use module_sources::ModuleSources;
pub use names::{
    DEPLOY_FILTERS, ENV_VARS, METADB_DRIFT_SECRET_ARN, METADB_TERRA_RUN_SECRET_ARN,
    MODULE_SOURCE_REPOSITORIES, MODULE_SOURCES_FOR_FORKS, MODULE_SOURCES_GIT_URL, POLICY_COMMAND,
    POLICY_OVERRIDE, RUN_LINK_KEY_SSM_KEY, RUN_PAGE_URL,
};
pub use read::{ConfigErrors, FromLookup};

/// The task's whole configuration for the subcommand it was started with,
/// including what `main` wires (the metadb, the plan bucket); built before
/// anything is done.
#[derive(Debug, Clone)]
pub enum Config {
    /// A merged pull request becomes a run: the metadb's migrator, the run's
    /// packed checkout in the plan bucket.
    CreateDeployStack {
        /// The metadb, as the migrator.
        metadb: MetadbConfig,
        /// terra-run's login secret, which this migrator fills (Data API
        /// only: a direct connection's terra-run keeps the URL it is given).
        terra_run_secret: Option<String>,
        /// The drift job's login secret, filled the same way.
        drift_secret: Option<String>,
        /// Where the run's packed checkout is stored (the plan bucket).
        plan_bucket: String,
        /// The job's own settings.
        job: CreateDeployStackConfig,
    },
    /// One plan or apply of one unit, its plans kept in the plan bucket.
    TerraRun {
        /// The metadb, as terra-run's restricted login.
        metadb: MetadbConfig,
        /// Where the saved plans and the packed checkouts are.
        plan_bucket: String,
        /// The job's own settings.
        job: TerraRunConfig,
    },
    /// pr-plan runs a pull request's code: it never opens the metadb (its
    /// role has no `rds-data` actions and no secret of it), whatever
    /// `METADB_*` the task's environment shares with the other subcommands.
    PrPlan {
        /// The job's own settings.
        job: PrPlanConfig,
    },
    /// drift logs in as its own restricted login (the module gives it that
    /// login's secret or URL, never the master's) and publishes to the
    /// notification topic when one is configured.
    Drift {
        /// The metadb, as drift's restricted login.
        metadb: MetadbConfig,
        /// The SNS topic told of drift (`NOTIFICATION_TOPIC_ARN`); none: no notice.
        notification_topic: Option<String>,
        /// The job's own settings.
        job: DriftConfig,
    },
    /// `contract` reads no environment.
    Contract,
}

impl Config {
    /// `command`'s configuration from the process environment, or every problem with it.
    pub fn from_env(command: TaskCommand) -> Result<Self, ConfigErrors> {
        Self::from_lookup(command, |k| std::env::var(k).ok())
    }

    /// The same, from any lookup (tests pass a map).
    pub fn from_lookup(
        command: TaskCommand,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigErrors> {
        let mut check = Env::new(get);
        let config = match command {
            TaskCommand::CreateDeployStack => {
                let job = CreateDeployStackConfig::read(&mut check);
                let metadb = metadb(&mut check);
                let terra_run_secret = check.optional(METADB_TERRA_RUN_SECRET_ARN);
                let drift_secret = check.optional(METADB_DRIFT_SECRET_ARN);
                let plan_bucket = check.required("PLAN_BUCKET");
                (|| {
                    Some(Config::CreateDeployStack {
                        metadb: metadb?,
                        terra_run_secret,
                        drift_secret,
                        plan_bucket: plan_bucket?,
                        job: job?,
                    })
                })()
            }
            TaskCommand::TerraRun => {
                let job = TerraRunConfig::read(&mut check);
                let metadb = metadb(&mut check);
                let plan_bucket = check.required("PLAN_BUCKET");
                (|| {
                    Some(Config::TerraRun {
                        metadb: metadb?,
                        plan_bucket: plan_bucket?,
                        job: job?,
                    })
                })()
            }
            // No metadb, even when METADB_* is set: see `Config::PrPlan`.
            TaskCommand::PrPlan => PrPlanConfig::read(&mut check).map(|job| Config::PrPlan { job }),
            TaskCommand::Drift => {
                let job = DriftConfig::read(&mut check);
                let metadb = metadb(&mut check);
                let notification_topic = check
                    .optional(live_ci_aws::NOTIFICATION_TOPIC_ENV)
                    .filter(|arn| !arn.trim().is_empty());
                (|| {
                    Some(Config::Drift {
                        metadb: metadb?,
                        notification_topic,
                        job: job?,
                    })
                })()
            }
            TaskCommand::Contract => Some(Config::Contract),
        };
        let task_token = match command {
            TaskCommand::TerraRun => check.optional(task_env::TASK_TOKEN),
            _ => None,
        };
        finish(check, config).map_err(|errors| ConfigErrors {
            task_token,
            ..errors
        })
    }

    /// The settings every subcommand shares (`None` for `contract`).
    pub fn common(&self) -> Option<&Common> {
        match self {
            Config::CreateDeployStack { job, .. } => Some(&job.common),
            Config::TerraRun { job, .. } => Some(&job.common),
            Config::PrPlan { job, .. } => Some(&job.common),
            Config::Drift { job, .. } => Some(&job.common),
            Config::Contract => None,
        }
    }
}

impl Config {
    /// The private module sources this subcommand's repository code may
    /// read: create-deploy-stack, terra-run and drift run merged code;
    /// pr-plan a trusted head's, or a fork's only with `MODULE_SOURCES_FOR_FORKS`.
    pub fn module_sources(&self) -> Option<&ModuleSources> {
        let sources = self.common()?.module_sources.as_ref()?;
        match self {
            Config::CreateDeployStack { .. } | Config::TerraRun { .. } | Config::Drift { .. } => {
                Some(sources)
            }
            Config::PrPlan { job } => (job.head_trusted || sources.for_forks).then_some(sources),
            Config::Contract => None,
        }
    }
}
