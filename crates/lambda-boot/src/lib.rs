//! A Lambda's cold start in one place: JSON log lines (the module sets
//! `log_format = "JSON"`), the AWS configuration (`AWS_ENDPOINT_URL` points it
//! at the local cloud), parameters, the metadb (direct or Data API) and GitHub
//! clients, and the runtime loop. Each Lambda's `main.rs` only reads its config
//! and wires these into its handler.

use std::future::Future;

use aws_config::SdkConfig;
use lambda_runtime::{LambdaEvent, service_fn};
use live_ci_aws::SsmParamStore;
use live_ci_core::approval::{LinkError, LinkKey, RunLinkKey};
use live_ci_core::port::ParamStore;
use live_ci_github::{GitHubAuth, GitHubClient, Job};
use live_ci_metadb::{AnyMetadb, MetadbConfig};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tracing_subscriber::fmt::MakeWriter;

/// What can stop a cold start or the runtime loop.
#[derive(Debug, thiserror::Error)]
pub enum BootError {
    #[error("reading parameter {name:?}: {source}")]
    Param {
        name: String,
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("parameter {name:?}: {source}")]
    LinkKey {
        name: String,
        source: live_ci_core::approval::LinkError,
    },
    /// The run-link key refused (too short, a placeholder); `reason` never
    /// quotes the value.
    #[error("parameter {name:?}: run-link key {reason}")]
    RunLinkKey { name: String, reason: String },
    #[error("metadb: {0}")]
    Metadb(#[from] live_ci_metadb::MetadbError),
    #[error("github: {0}")]
    GitHub(#[from] live_ci_github::GitHubError),
    #[error("lambda runtime: {0}")]
    Runtime(String),
}

/// The subscriber every Lambda logs through: one JSON object per line with
/// `level` and `message` at the top (the keys of Lambda's own JSON log
/// format), no timestamp (CloudWatch adds its own), filtered by `RUST_LOG`
/// (the module sets it; `info` otherwise).
pub fn subscriber<W>(writer: W) -> impl tracing::Subscriber + Send + Sync
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .without_time()
        .with_writer(writer)
        .finish()
}

/// A started Lambda: logging on, the AWS configuration loaded.
#[derive(Debug, Clone)]
pub struct Boot {
    pub aws: SdkConfig,
}

impl Boot {
    /// Turns logging on (stdout, which Lambda sends to CloudWatch) and loads
    /// the AWS configuration from the environment.
    pub async fn start() -> Self {
        // A second start in one process keeps the first subscriber.
        let _ = tracing::subscriber::set_global_default(subscriber(std::io::stdout));
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
    /// (`live_ci_github::connect`, which the task uses too).
    pub async fn github(
        &self,
        auth: &GitHubAuth,
        api_url: &str,
        repository: &str,
        job: Job,
    ) -> Result<GitHubClient, BootError> {
        Ok(live_ci_github::connect(auth, &self.params(), api_url, repository, job).await?)
    }
}

/// The vote links' signing key from parameter `name` of `params`: a key that
/// is too short or a placeholder fails the cold start with an error naming
/// the parameter (never quoting the value), so no link is signed or checked
/// under a key anyone could guess.
pub async fn link_key_from<P: ParamStore>(params: &P, name: &str) -> Result<LinkKey, BootError> {
    let secret = params.get(name).await.map_err(|e| BootError::Param {
        name: name.to_string(),
        source: Box::new(e),
    })?;
    LinkKey::new(secret.as_bytes()).map_err(|source| BootError::LinkKey {
        name: name.to_string(),
        source,
    })
}

/// The run links' signing key from parameter `name` of `params`, refused as
/// [`link_key_from`] refuses a vote-link key. A key of its own: the Lambdas
/// that mint run links hold this one and not the vote-link key.
pub async fn run_link_key_from<P: ParamStore>(
    params: &P,
    name: &str,
) -> Result<RunLinkKey, BootError> {
    let secret = params.get(name).await.map_err(|e| BootError::Param {
        name: name.to_string(),
        source: Box::new(e),
    })?;
    RunLinkKey::new(secret.as_bytes()).map_err(|e| BootError::RunLinkKey {
        name: name.to_string(),
        reason: match e {
            LinkError::ShortKey(n) => format!("is {n} bytes; at least 32 are required"),
            LinkError::PlaceholderKey => {
                "holds a placeholder, not a key; set a random value of at least 32 characters"
                    .to_string()
            }
            other => other.to_string(),
        },
    })
}

/// Serves every invocation with `handler` until the runtime stops. The
/// handler returns its crate's own error, whose `Diagnostic` (the error name
/// CloudWatch, the DLQ and Step Functions see) the runtime reports.
pub async fn serve<E, R, Err, F, Fut>(handler: F) -> Result<(), BootError>
where
    E: DeserializeOwned + Send + 'static,
    R: Serialize + Send + 'static,
    Err: Into<lambda_runtime::Diagnostic> + std::fmt::Debug,
    F: Fn(E) -> Fut,
    Fut: Future<Output = Result<R, Err>> + Send,
{
    let handler = &handler;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<E>| {
        handler(event.payload)
    }))
    .await
    .map_err(|e| BootError::Runtime(e.to_string()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::{Arc, Mutex};

    /// One parameter, as SSM would answer it.
    struct OneParam(&'static str);

    impl ParamStore for OneParam {
        type Error = std::convert::Infallible;
        async fn get(&self, _: &str) -> Result<String, Self::Error> {
            Ok(self.0.to_string())
        }
        async fn put(&self, _: &str, _: &str) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    /// Both vote-link Lambdas read their key through `link_key_from`: the
    /// module's old placeholder, a repeated placeholder and a short key fail
    /// the cold start naming the parameter and not the value.
    #[tokio::test]
    async fn a_placeholder_or_short_vote_link_key_fails_the_cold_start() {
        let name = "/live-ci/vote-link-key";
        for (value, reason) in [
            ("unset", "holds a placeholder"),
            ("changemechangemechangemechangeme", "holds a placeholder"),
            ("0123456789abcdef", "is 16 bytes; at least 32 are required"),
        ] {
            let err = link_key_from(&OneParam(value), name).await.unwrap_err();
            let text = err.to_string();
            assert!(
                text.starts_with(&format!("parameter {name:?}: vote-link key")),
                "{text}"
            );
            assert!(text.contains(reason), "{text}");
            assert!(!text.contains(value), "the error quotes the key: {text}");
        }
        let key = link_key_from(&OneParam("a-random-key-0123456789abcdefghijk"), name).await;
        assert!(key.is_ok());
    }

    /// The run-link key is refused like the vote-link key, naming itself.
    #[tokio::test]
    async fn a_placeholder_or_short_run_link_key_fails_the_cold_start() {
        let name = "/live-ci/run-link-key";
        for (value, reason) in [
            ("unset", "holds a placeholder"),
            ("changemechangemechangemechangeme", "holds a placeholder"),
            ("0123456789abcdef", "is 16 bytes; at least 32 are required"),
        ] {
            let err = run_link_key_from(&OneParam(value), name).await.unwrap_err();
            let text = err.to_string();
            assert!(
                text.starts_with(&format!("parameter {name:?}: run-link key {reason}")),
                "{text}"
            );
            assert!(!text.contains(value), "the error quotes the key: {text}");
        }
        let key = run_link_key_from(&OneParam("a-random-key-0123456789abcdefghijk"), name).await;
        assert!(key.is_ok());
    }

    /// A writer into shared memory, so the test reads what was logged.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'w> MakeWriter<'w> for Buffer {
        type Writer = Buffer;
        fn make_writer(&'w self) -> Buffer {
            self.clone()
        }
    }

    #[test]
    fn every_log_line_is_one_json_object_with_level_and_message() {
        let buffer = Buffer::default();
        tracing::subscriber::with_default(subscriber(buffer.clone()), || {
            tracing::info!(run_id = 7, "started\nwith a second line");
            tracing::warn!(error = "boom", "posting a status");
            tracing::debug!("filtered out at the default level");
        });
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0]["level"], "INFO");
        assert_eq!(lines[0]["message"], "started\nwith a second line");
        assert_eq!(lines[0]["run_id"], 7);
        assert_eq!(lines[1]["level"], "WARN");
        assert_eq!(lines[1]["message"], "posting a status");
        assert_eq!(lines[1]["error"], "boom");
        assert!(lines.iter().all(|l| l.get("timestamp").is_none()));
    }
}
