//! How live-ci authenticates to GitHub — a token, or a GitHub App — read from
//! a binary's environment, and the one function that builds a job's client from
//! it. The Lambdas (`live_ci_boot`) and the task (`live-ci-task`'s
//! `main.rs`) both call [`connect`], so the choice is made here only.

use live_ci_core::port::{Classify, ErrorKind, ParamStore};
use live_ci_core::settings::{ConfigError, Settings};

use crate::app::AppCredentials;
use crate::client::{GitHubClient, GitHubConfig};
use crate::error::GitHubError;
use crate::permissions::Job;
use crate::retry::RetryPolicy;

/// The variables [`GitHubAuth::from_settings`] reads (each binary adds them to
/// its `ENV_VARS`).
pub const AUTH_ENV_VARS: &[&str] = &[
    TOKEN_PARAM,
    APP_ID,
    APP_INSTALLATION_ID,
    APP_PRIVATE_KEY_PARAM,
];

/// The SecureString parameter holding a personal or fine-grained token.
pub const TOKEN_PARAM: &str = "GITHUB_TOKEN_SSM_KEY";
/// The GitHub App's id.
pub const APP_ID: &str = "GITHUB_APP_ID";
/// The id of the App's installation on the live repository's owner.
pub const APP_INSTALLATION_ID: &str = "GITHUB_APP_INSTALLATION_ID";
/// The SecureString parameter holding the App's private key (PEM).
pub const APP_PRIVATE_KEY_PARAM: &str = "GITHUB_APP_PRIVATE_KEY_SSM_KEY";

/// What a client authenticates with.
#[derive(Clone)]
pub enum Credentials {
    /// A personal (classic or fine-grained) token, sent as is.
    Token(String),
    /// A GitHub App: each client gets an installation token for its job.
    App(AppCredentials),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Token(_) => f.write_str("Token(<redacted>)"),
            Credentials::App(app) => f.debug_tuple("App").field(app).finish(),
        }
    }
}

/// Where a binary finds its GitHub credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitHubAuth {
    /// `GITHUB_TOKEN_SSM_KEY`.
    Token {
        /// The SSM parameter holding the token.
        param: String,
    },
    /// `GITHUB_APP_ID`, `GITHUB_APP_INSTALLATION_ID`, `GITHUB_APP_PRIVATE_KEY_SSM_KEY`.
    App {
        /// The App's id.
        app_id: u64,
        /// The App's installation on the repository's owner.
        installation_id: u64,
        /// The SSM parameter holding the App's private key (PEM).
        private_key_param: String,
    },
}

impl GitHubAuth {
    /// `None` when nothing is configured (the binaries then post nothing);
    /// a token and an App at once, or half an App, is an error naming the
    /// variables.
    pub fn from_settings<F: Fn(&str) -> Option<String>>(
        env: &Settings<F>,
    ) -> Result<Option<Self>, ConfigError> {
        let token = env.opt(TOKEN_PARAM);
        let app_vars = [APP_ID, APP_INSTALLATION_ID, APP_PRIVATE_KEY_PARAM];
        let app_given: Vec<(&'static str, String)> = app_vars
            .iter()
            .filter_map(|name| env.opt(name).map(|v| (*name, v)))
            .collect();
        if let (Some(_), Some((name, value))) = (&token, app_given.first()) {
            return Err(ConfigError::Invalid {
                name,
                value: value.clone(),
                reason: format!(
                    "{TOKEN_PARAM} is set too: configure a github token or a github app, not both"
                ),
            });
        }
        if let Some(param) = token {
            return Ok(Some(GitHubAuth::Token { param }));
        }
        if app_given.is_empty() {
            return Ok(None);
        }
        let id = |name: &'static str| -> Result<u64, ConfigError> {
            let value = env.req(name)?;
            value.trim().parse().map_err(|_| ConfigError::Invalid {
                name,
                value: value.clone(),
                reason: "not a github app or installation id (a whole number)".into(),
            })
        };
        Ok(Some(GitHubAuth::App {
            app_id: id(APP_ID)?,
            installation_id: id(APP_INSTALLATION_ID)?,
            private_key_param: env.req(APP_PRIVATE_KEY_PARAM)?,
        }))
    }

    /// The parameter holding the secret (token or private key).
    pub fn secret_param(&self) -> &str {
        match self {
            GitHubAuth::Token { param } => param,
            GitHubAuth::App {
                private_key_param, ..
            } => private_key_param,
        }
    }

    /// The credentials, with the secret read from `params`.
    pub async fn credentials<P: ParamStore>(&self, params: &P) -> Result<Credentials, GitHubError> {
        let name = self.secret_param();
        let secret = params.get(name).await.map_err(|e| GitHubError::Param {
            name: name.to_string(),
            retryable: e.kind() == ErrorKind::Retryable,
            message: e.to_string(),
        })?;
        Ok(match self {
            GitHubAuth::Token { .. } => Credentials::Token(secret),
            GitHubAuth::App {
                app_id,
                installation_id,
                ..
            } => Credentials::App(AppCredentials {
                app_id: *app_id,
                installation_id: *installation_id,
                private_key_pem: secret,
            }),
        })
    }
}

/// The client `job` uses for `repository`, authenticated as `auth` says: the
/// one place a binary turns its settings into a GitHub client, and so the one
/// place statuses become check runs (with an App) or stay commit statuses
/// (with a token).
pub async fn connect<P: ParamStore>(
    auth: &GitHubAuth,
    params: &P,
    api_base: &str,
    repository: &str,
    job: Job,
) -> Result<GitHubClient, GitHubError> {
    let client = GitHubClient::new(GitHubConfig {
        api_base: api_base.to_string(),
        repository: repository.to_string(),
        credentials: auth.credentials(params).await?,
        job,
        retry: RetryPolicy::default(),
    })?;
    // With an App, statuses become check runs (a token cannot create them).
    Ok(match auth {
        GitHubAuth::App { .. } => client.with_check_runs(),
        GitHubAuth::Token { .. } => client,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(vars: &[(&str, &str)]) -> Result<Option<GitHubAuth>, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        GitHubAuth::from_settings(&Settings::new(|k: &str| map.get(k).cloned()))
    }

    #[test]
    fn a_token_an_app_or_nothing() {
        assert_eq!(read(&[]), Ok(None));
        assert_eq!(
            read(&[(TOKEN_PARAM, "/t")]),
            Ok(Some(GitHubAuth::Token { param: "/t".into() }))
        );
        assert_eq!(
            read(&[
                (APP_ID, "12"),
                (APP_INSTALLATION_ID, "34"),
                (APP_PRIVATE_KEY_PARAM, "/k")
            ]),
            Ok(Some(GitHubAuth::App {
                app_id: 12,
                installation_id: 34,
                private_key_param: "/k".into()
            }))
        );
    }

    #[test]
    fn both_or_half_an_app_is_refused_by_name() {
        let both = read(&[(TOKEN_PARAM, "/t"), (APP_ID, "12")]).unwrap_err();
        assert_eq!(
            both.to_string(),
            "environment variable GITHUB_APP_ID=\"12\": GITHUB_TOKEN_SSM_KEY is set too: configure a github token or a github app, not both"
        );
        assert_eq!(
            read(&[(APP_ID, "12"), (APP_PRIVATE_KEY_PARAM, "/k")]),
            Err(ConfigError::Missing(APP_INSTALLATION_ID))
        );
        let bad = read(&[
            (APP_ID, "my-app"),
            (APP_INSTALLATION_ID, "34"),
            (APP_PRIVATE_KEY_PARAM, "/k"),
        ])
        .unwrap_err();
        assert_eq!(
            bad.to_string(),
            "environment variable GITHUB_APP_ID=\"my-app\": not a github app or installation id (a whole number)"
        );
    }
}
