//! The GitHub adapter: implements the core's [`GitHost`](live_ci_core::port::GitHost)
//! port over GitHub's REST API (github.com or GitHub Enterprise), with pagination
//! and retries on server errors and rate limits; authenticated by a token or
//! a GitHub App (an installation token per job, `permissions`).

mod app;
mod auth;
mod client;
mod error;
pub mod permissions;
mod retry;

pub use app::{AppCredentials, JWT_BACKDATE, JWT_LIFETIME, REFRESH_MARGIN};
pub use auth::{
    APP_ID, APP_INSTALLATION_ID, APP_PRIVATE_KEY_PARAM, AUTH_ENV_VARS, Credentials, GitHubAuth,
    TOKEN_PARAM, connect,
};
pub use client::{DRIFT_LABEL, GitHubClient, GitHubConfig, check_run_body};
pub use error::GitHubError;
pub use permissions::Job;
pub use retry::RetryPolicy;
