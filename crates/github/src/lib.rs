//! The GitHub adapter: implements the core's [`GitHost`](live_ci_core::port::GitHost)
//! port over GitHub's REST API (github.com or GitHub Enterprise), with pagination
//! and retries on server errors and rate limits.

mod client;
mod error;
mod retry;

pub use client::{GitHubClient, GitHubConfig};
pub use error::GitHubError;
pub use retry::RetryPolicy;
