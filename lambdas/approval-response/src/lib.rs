//! The approval_response Lambda behind a Function URL. A GET on a vote link
//! shows a confirmation page (mail scanners that prefetch links change
//! nothing); the page's button POSTs the signed token back, which records the
//! vote, and once a threshold is reached exactly one caller sends the
//! decision to Step Functions. An asynchronous invoke by the receiver counts a
//! vote comment on the merged pull request the same way
//! ([`ApprovalResponder::github_vote`]). `main.rs` only wires clients into
//! [`Production`] ports for [`ApprovalResponder`]; tests hand it their own
//! bundle ([`ResponderPorts`]).
// Every public item says what it is for (issue 33 item 7; a workspace lint
// once every crate is there).

mod config;
mod github_vote;
mod handler;
mod http;
mod page;
mod ports;

pub use config::{AWS_ACTIONS, Config, ConfigError, ENV_VARS};
pub use github_vote::{
    GitHubVoteError, GitHubVoteEvent, GitHubVoteOutcome, GitHubVoteRequest, GitHubVoting,
};
pub use handler::ApprovalResponder;
pub use http::{PageRequest, PageResponse, from_function_url, to_function_url};
pub use ports::{NoPlanStore, Production, ResponderPorts};
