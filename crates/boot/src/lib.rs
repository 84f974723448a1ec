//! How every live-ci binary starts, in one place: the Lambdas' cold start
//! and the ECS task's start share logging ([`log`]), the AWS configuration
//! (`AWS_ENDPOINT_URL` points it at the local cloud), Parameter Store, the
//! metadb (direct or Data API), the GitHub client ([`github`]: one place
//! decides token or App), the approval links' keys ([`keys`]) and one
//! settings reader that names every problem at once ([`settings`]). The
//! Lambdas also share the runtime loop and the one conversion of an error
//! into the runtime's `Diagnostic` ([`lambda`], feature `lambda`). Each
//! binary's `main.rs` only reads its config and wires these into its handler.

pub mod github;
pub mod keys;
#[cfg(feature = "lambda")]
pub mod lambda;
pub mod log;
pub mod settings;

use aws_config::SdkConfig;
use live_ci_aws::SsmParamStore;
use live_ci_core::approval::{LinkKey, RUN_LINK_TTL_SECS, RunLinkKey, RunPages};
use live_ci_core::port::ParamStore;
use live_ci_github::{GitHubAuth, GitHubClient, Job};
use live_ci_metadb::{AnyMetadb, MetadbConfig};

pub use keys::{link_key_from, run_link_key_from};
#[cfg(feature = "lambda")]
pub use lambda::{Classified, diagnostic, serve};
pub use log::subscriber;
pub use settings::{Env, SettingsError};

/// What can stop a start or the runtime loop.
#[derive(Debug, thiserror::Error)]
pub enum BootError {
    /// Parameter Store could not return a parameter the start needs.
    #[error("reading parameter {name:?}: {source}")]
    Param {
        /// The parameter's name.
        name: String,
        /// Parameter Store's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The vote-link key parameter holds no usable key (too short, a
    /// placeholder); the value is never quoted.
    #[error("parameter {name:?}: {source}")]
    LinkKey {
        /// The key's parameter name.
        name: String,
        /// Why the key was refused.
        source: live_ci_core::approval::LinkError,
    },
    /// The run-link key refused (too short, a placeholder); `reason` never
    /// quotes the value.
    #[error("parameter {name:?}: run-link key {reason}")]
    RunLinkKey {
        /// The key's parameter name.
        name: String,
        /// Why the key was refused, as a sentence's end ("is 12 bytes; ...").
        reason: String,
    },
    /// The metadb client could not be built from its configuration.
    #[error("metadb: {0}")]
    Metadb(#[from] live_ci_metadb::MetadbError),
    /// The GitHub credentials (token or App key) could not be read.
    #[error("github: {0}")]
    GitHub(#[from] live_ci_github::GitHubError),
    /// The task's client of its repository could not be built.
    #[error("connecting to github: {0}")]
    Connect(live_ci_github::GitHubError),
    /// An App's token is limited to the repository by name.
    #[error("a github app needs REPO_FULL_NAME")]
    AppWithoutRepository,
    /// The Lambda runtime loop stopped with this error.
    #[error("lambda runtime: {0}")]
    Runtime(String),
}

/// A started binary: the AWS configuration loaded (logging is on for a
/// Lambda; the task turns its own on first, [`log::task`]).
#[derive(Debug, Clone)]
pub struct Boot {
    /// The AWS SDK configuration every client of this binary is built from.
    pub aws: SdkConfig,
}

impl Boot {
    /// A Lambda's cold start: logging on ([`log::lambda`]), then
    /// [`Boot::load`].
    pub async fn start() -> Self {
        log::lambda();
        Self::load().await
    }

    /// The AWS configuration from the environment.
    pub async fn load() -> Self {
        Boot {
            aws: aws_config::load_from_env().await,
        }
    }

    /// Parameter Store with this configuration.
    pub fn params(&self) -> SsmParamStore {
        SsmParamStore::new(live_ci_aws::sdk::ssm::Client::new(&self.aws))
    }

    /// One parameter's value, the error naming it.
    pub async fn param(&self, name: &str) -> Result<String, BootError> {
        self.params().get(name).await.map_err(|e| BootError::Param {
            name: name.to_string(),
            source: Box::new(e),
        })
    }

    /// The vote links' signing key, from its parameter ([`link_key_from`]).
    pub async fn link_key(&self, name: &str) -> Result<LinkKey, BootError> {
        link_key_from(&self.params(), name).await
    }

    /// The run links' signing key, from its parameter ([`run_link_key_from`]).
    pub async fn run_link_key(&self, name: &str) -> Result<RunLinkKey, BootError> {
        run_link_key_from(&self.params(), name).await
    }

    /// The read-only run pages, when configured (`(key parameter, page
    /// address)`): their key refused as [`run_link_key_from`] refuses it.
    pub async fn run_pages(
        &self,
        configured: Option<&(String, String)>,
    ) -> Result<Option<RunPages>, BootError> {
        let Some((key_param, base_url)) = configured else {
            return Ok(None);
        };
        Ok(Some(RunPages {
            key: self.run_link_key(key_param).await?,
            base_url: base_url.clone(),
            ttl_secs: RUN_LINK_TTL_SECS,
        }))
    }

    /// The metadb the module configured (Lambdas use the Data API; a URL
    /// connects directly, as in the local cloud).
    pub fn metadb(
        &self,
        config: &MetadbConfig,
        connections: usize,
    ) -> Result<AnyMetadb, BootError> {
        Ok(AnyMetadb::from_config(config, &self.aws, connections)?)
    }

    /// `job`'s GitHub client of `repository`, authenticated as `auth` says
    /// ([`github::connect`]).
    pub async fn github(
        &self,
        auth: &GitHubAuth,
        api_url: &str,
        repository: &str,
        job: Job,
    ) -> Result<GitHubClient, BootError> {
        github::connect(auth, &self.params(), api_url, repository, job).await
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use live_ci_core::port::ParamStore;

    /// One parameter, as SSM would answer it.
    pub(crate) struct OneParam(pub(crate) &'static str);

    impl ParamStore for OneParam {
        type Error = std::convert::Infallible;
        async fn get(&self, _: &str) -> Result<String, Self::Error> {
            Ok(self.0.to_string())
        }
        async fn put(&self, _: &str, _: &str) -> Result<(), Self::Error> {
            Ok(())
        }
    }
}
