//! The receiver's configuration, from the environment the Terraform module sets.

use std::collections::BTreeMap;
use std::time::Duration;

use live_ci_aws::{EcsConfig, TaskDefinitionRef};
use live_ci_core::settings::Settings;
use live_ci_core::task::TaskKind;
use live_ci_core::webhook::{FilePattern, TrustPolicy};

/// How long a warm container keeps the webhook secret before reading it again.
pub const SECRET_TTL: Duration = Duration::from_secs(300);
/// How often at most a signature failure re-reads the secret, and how long an
/// unusable (placeholder, short) secret is kept before it is read again.
pub const SECRET_RETRY: Duration = Duration::from_secs(10);

/// What the handler itself needs (no AWS specifics).
#[derive(Debug, Clone)]
pub struct HandlerConfig {
    pub repository: String,
    pub trunk_branch: String,
    pub file_pattern: FilePattern,
    pub webhook_secret_param: String,
    pub merge_lock_param: String,
    pub commit_status_config_param: String,
    /// Larger bodies are refused with 400 before any work (Function URLs take 6 MB).
    pub max_body_bytes: usize,
    /// Whose pull requests are planned without a maintainer's `/live-ci plan`.
    pub trust: TrustPolicy,
    /// The webhook secret is read again after this long ([`SECRET_TTL`]).
    pub secret_ttl: Duration,
    /// … and after a signature failure, at most this often ([`SECRET_RETRY`]).
    pub secret_retry: Duration,
}

/// Everything `main.rs` wires: the handler's part, GitHub and ECS.
#[derive(Debug, Clone)]
pub struct Config {
    pub handler: HandlerConfig,
    pub github_api_url: String,
    pub github_token_param: String,
    pub ecs: EcsConfig,
}

pub use live_ci_core::settings::ConfigError;

/// Every environment variable [`Config::from_lookup`] reads (`AWS_REGION` is set
/// by the Lambda runtime; the others by the Terraform module's `receiver_env`).
pub const ENV_VARS: &[&str] = &[
    "REPO_FULL_NAME",
    "TRUNK_BRANCH",
    "FILE_PATH_PATTERN",
    "GITHUB_API_URL",
    "GITHUB_WEBHOOK_SECRET_SSM_KEY",
    "GITHUB_TOKEN_SSM_KEY",
    "MERGE_LOCK_SSM_KEY",
    "COMMIT_STATUS_CONFIG_SSM_KEY",
    "MAX_BODY_BYTES",
    "PR_PLAN_AUTHOR_ASSOCIATIONS",
    "AWS_REGION",
    "ECS_CLUSTER_ARN",
    "ECS_SUBNET_IDS",
    "ECS_SECURITY_GROUP_IDS",
    "ECS_ASSIGN_PUBLIC_IP",
    "PR_PLAN_TASK_DEFINITION_ARN",
    "PR_PLAN_CONTAINER_NAME",
    "PR_PLAN_LOG_GROUP",
    "PR_PLAN_LOG_STREAM_PREFIX",
    "CREATE_DEPLOY_STACK_TASK_DEFINITION_ARN",
    "CREATE_DEPLOY_STACK_CONTAINER_NAME",
    "CREATE_DEPLOY_STACK_LOG_GROUP",
    "CREATE_DEPLOY_STACK_LOG_STREAM_PREFIX",
];

/// Every AWS action the receiver's code calls, for the IAM policy the Terraform
/// module gives it: the webhook secret, token, merge lock and status config
/// (`SsmParamStore::get`, SecureStrings decrypted with the module's key) and the
/// pr-plan / create-deploy-stack tasks (`EcsTaskLauncher`, which passes the
/// task's roles).
pub const AWS_ACTIONS: &[&str] = &[
    "ssm:GetParameter",
    "kms:Decrypt",
    "ecs:RunTask",
    "iam:PassRole",
];

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// The same, from any lookup (tests pass a map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let env = Settings::new(get);
        let req = |k: &'static str| env.req(k);
        let file_pattern = env.file_pattern()?;
        let max_body_bytes = env.number("MAX_BODY_BYTES", 5 * 1024 * 1024)?;
        let assign_public_ip = env.flag("ECS_ASSIGN_PUBLIC_IP", false)?;
        let trust = match env.opt("PR_PLAN_AUTHOR_ASSOCIATIONS") {
            None => TrustPolicy::default(),
            Some(text) => {
                TrustPolicy::parse_json(&text).map_err(|reason| ConfigError::Invalid {
                    name: "PR_PLAN_AUTHOR_ASSOCIATIONS",
                    value: text.clone(),
                    reason,
                })?
            }
        };
        let task = |def: &'static str,
                    container: &'static str,
                    group: &'static str,
                    prefix: &'static str|
         -> Result<TaskDefinitionRef, ConfigError> {
            Ok(TaskDefinitionRef {
                task_definition: req(def)?,
                container: req(container)?,
                log_group: req(group)?,
                log_stream_prefix: req(prefix)?,
            })
        };
        Ok(Config {
            handler: HandlerConfig {
                repository: req("REPO_FULL_NAME")?,
                trunk_branch: env.or("TRUNK_BRANCH", "main"),
                file_pattern,
                webhook_secret_param: req("GITHUB_WEBHOOK_SECRET_SSM_KEY")?,
                merge_lock_param: req("MERGE_LOCK_SSM_KEY")?,
                commit_status_config_param: req("COMMIT_STATUS_CONFIG_SSM_KEY")?,
                max_body_bytes,
                trust,
                secret_ttl: SECRET_TTL,
                secret_retry: SECRET_RETRY,
            },
            github_api_url: env.or("GITHUB_API_URL", "https://api.github.com"),
            github_token_param: req("GITHUB_TOKEN_SSM_KEY")?,
            ecs: EcsConfig {
                cluster: req("ECS_CLUSTER_ARN")?,
                region: req("AWS_REGION")?,
                subnets: env.list("ECS_SUBNET_IDS")?,
                security_groups: env.list("ECS_SECURITY_GROUP_IDS")?,
                assign_public_ip,
                tasks: BTreeMap::from([
                    (
                        TaskKind::PrPlan,
                        task(
                            "PR_PLAN_TASK_DEFINITION_ARN",
                            "PR_PLAN_CONTAINER_NAME",
                            "PR_PLAN_LOG_GROUP",
                            "PR_PLAN_LOG_STREAM_PREFIX",
                        )?,
                    ),
                    (
                        TaskKind::CreateDeployStack,
                        task(
                            "CREATE_DEPLOY_STACK_TASK_DEFINITION_ARN",
                            "CREATE_DEPLOY_STACK_CONTAINER_NAME",
                            "CREATE_DEPLOY_STACK_LOG_GROUP",
                            "CREATE_DEPLOY_STACK_LOG_STREAM_PREFIX",
                        )?,
                    ),
                ]),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use live_ci_core::settings::RecordingLookup;

    #[test]
    fn reads_exactly_the_declared_variables() {
        // Unset: the recording lookup's "1" is no JSON list of associations.
        let lookup = RecordingLookup::without(&["PR_PLAN_AUTHOR_ASSOCIATIONS"]);
        Config::from_lookup(|k| lookup.get(k)).unwrap();
        let declared: std::collections::BTreeSet<String> =
            ENV_VARS.iter().map(|s| s.to_string()).collect();
        assert_eq!(lookup.asked(), declared, "ENV_VARS is out of date");
    }

    #[test]
    fn a_missing_variable_is_named() {
        let lookup = RecordingLookup::without(&[
            "CREATE_DEPLOY_STACK_LOG_GROUP",
            "PR_PLAN_AUTHOR_ASSOCIATIONS",
        ]);
        let err = Config::from_lookup(|k| lookup.get(k)).unwrap_err();
        assert_eq!(err, ConfigError::Missing("CREATE_DEPLOY_STACK_LOG_GROUP"));
    }
}
