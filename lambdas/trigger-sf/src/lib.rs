//! The trigger_sf Lambda: drives a run forward one Step Functions execution
//! per unit. It records how an execution ended, starts the units that became
//! ready, finishes the run when nothing is left, and hands the merge lock to
//! the next queued run. `main.rs` only wires AWS and GitHub clients to
//! [`TriggerSf`], so tests call the same handler with fakes and a real metadb.

mod config;
mod deploy_comment;
mod event;
mod handler;
mod notify;

pub use config::{
    AWS_ACTIONS, Config, ConfigError, ENV_VARS, HandlerConfig, MetadbConfig,
    TRUNK_SWEEP_COOLDOWN_SECS,
};
pub use deploy_comment::{COMMENT_TARGETS, COMMENT_UNITS};
pub use event::{Input, StatusChangeDetail, parse_input};
pub use handler::{
    NoTrunkSweep, Report, TriggerError, TriggerSf, TrunkLaunch, TrunkSweep, failure_reason,
};
pub use notify::run_end_event;
