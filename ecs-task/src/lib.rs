//! The live-ci ECS task: `create-deploy-stack` (a merged pull request → a run
//! of executions in the metadb, handed to `trigger_sf`), `terra-run` (one plan
//! or apply of one unit for the state machine, each phase in a task of its own
//! with the phase's own task role) and `pr-plan` (plans of the units
//! a pull request affects, reported on the pull request). The handlers take the
//! core's ports, so tests and AWS run the same code; `main.rs` only wires.
//! Its stdout is written by [`output`] only (a `print!` does not compile past
//! clippy); everything else it says is a `tracing` log line.

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod checkout;
pub mod checkout_cache;
pub mod child_env;
pub mod cli;
pub mod config;
pub mod create_deploy_stack;
pub mod drift;
pub mod error;
pub mod filters;
pub mod git_credentials;
pub mod git_ssh;
pub mod logs;
pub mod output;
pub mod plans;
pub mod policy;
pub mod pr_plan;
pub mod run;
pub mod sandbox;
pub mod stacks;
pub mod startup;
pub mod terra_run;
pub mod timeline;

pub use config::{
    AWS_ACTIONS, CREATE_DEPLOY_STACK_AWS_ACTIONS, Common, Config, ConfigErrors,
    CreateDeployStackConfig, DRIFT_AWS_ACTIONS, DriftConfig, ENV_VARS, FromLookup, JOB_AWS_ACTIONS,
    PR_PLAN_AWS_ACTIONS, PhaseInput, PrPlanConfig, ScanType, TERRA_RUN_AWS_ACTIONS, TerraRunConfig,
};
pub use error::{Result, TaskError};
