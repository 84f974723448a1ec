//! The integration tests of the ECS task: its subcommands against real terraform, git, PostgreSQL and LocalStack: one test binary (one link) for the
//! crate, each former `tests/*.rs` a module.

mod binary;
mod checkout_cache;
mod child_env;
mod create_deploy_stack;
mod drift;
mod filters;
mod git_ssh;
mod github_app;
mod iam_denied;
mod migrate_at_start;
mod module_sources;
mod plan_json;
mod policy;
mod pr_plan;
mod run_links;
mod sandbox;
mod saved_plan_lock;
mod screens;
mod stacks;
mod support;
mod task_tokens;
mod terra_run;
mod trunk_order;
