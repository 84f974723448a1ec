//! The trigger_sf Lambda: drives a run forward one Step Functions execution
//! per unit. It records how an execution ended, starts the units that became
//! ready, finishes the run when nothing is left, and hands the merge lock to
//! the next queued run. `main.rs` only wires AWS and GitHub clients into
//! [`Production`] ports for [`TriggerSf`]; tests hand the same handler their
//! own bundle of fakes and a real metadb ([`TriggerPorts`]).

mod config;
mod deploy_comment;
mod event;
mod handler;
mod notify;
mod ports;

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
pub use ports::{Production, TriggerPorts};
