//! The receiver Lambda behind the GitHub webhook's Function URL: verifies each
//! delivery, then plans pull requests (pr-plan task + Merge Lock status) and
//! deploys merge commits (create-deploy-stack task); pull requests from forks
//! or untrusted authors wait for a maintainer's `/live-ci plan` comment, and an
//! unusable webhook secret refuses everything with 503. Each delivery id is
//! claimed in the metadb first, so a redelivery to any container changes
//! nothing. A "locked" merge lock parameter is checked against the metadb's
//! lock row before it is answered. `main.rs` only wires AWS and GitHub clients
//! into [`Production`] ports for [`Receiver`]; tests hand the same handler
//! their own bundle of fakes ([`ReceiverPorts`]).

mod config;
mod dedupe;
mod handler;
mod http;
mod lock;
mod ports;
mod secret;

pub use config::{
    AWS_ACTIONS, Config, ConfigError, ENV_VARS, HandlerConfig, METADB_RESUME_DEADLINE,
    MetadbConfig, SECRET_RETRY, SECRET_TTL,
};
pub use dedupe::{CLAIM_BUDGET, Deliveries, MetadbDeliveries, NoDeliveryLog};
pub use handler::{Receiver, ReceiverError};
pub use http::{WebhookRequest, WebhookResponse, from_function_url, to_function_url};
pub use lock::{LockTruth, MetadbLock, NoLockCheck};
pub use ports::{NoVotes, Production, ReceiverPorts};
