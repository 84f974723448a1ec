//! The receiver's configuration, from the environment the Terraform module sets.

use std::collections::BTreeMap;

use live_ci_aws::{EcsConfig, TaskDefinitionRef};
use live_ci_core::task::TaskKind;
use live_ci_core::webhook::FilePattern;

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
}

/// Everything `main.rs` wires: the handler's part, GitHub and ECS.
#[derive(Debug, Clone)]
pub struct Config {
    pub handler: HandlerConfig,
    pub github_api_url: String,
    pub github_token_param: String,
    pub ecs: EcsConfig,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("environment variable {0} is not set")]
    Missing(&'static str),
    #[error("environment variable {name}={value:?}: {reason}")]
    Invalid {
        name: &'static str,
        value: String,
        reason: String,
    },
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// The same, from any lookup (tests pass a map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let req = |k: &'static str| {
            get(k)
                .filter(|v| !v.trim().is_empty())
                .ok_or(ConfigError::Missing(k))
        };
        let opt = |k: &'static str, default: &str| {
            get(k)
                .filter(|v| !v.trim().is_empty())
                .unwrap_or_else(|| default.to_string())
        };
        let list = |k: &'static str| -> Result<Vec<String>, ConfigError> {
            Ok(req(k)?
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect())
        };
        let pattern_text = opt("FILE_PATH_PATTERN", FilePattern::DEFAULT);
        let file_pattern = FilePattern::new(&pattern_text).map_err(|e| ConfigError::Invalid {
            name: "FILE_PATH_PATTERN",
            value: pattern_text.clone(),
            reason: e.to_string(),
        })?;
        let max_body = opt("MAX_BODY_BYTES", "5242880");
        let max_body_bytes = max_body.parse().map_err(|_| ConfigError::Invalid {
            name: "MAX_BODY_BYTES",
            value: max_body.clone(),
            reason: "not a byte count".into(),
        })?;
        let public_ip = opt("ECS_ASSIGN_PUBLIC_IP", "false");
        let assign_public_ip = match public_ip.as_str() {
            "true" => true,
            "false" => false,
            _ => {
                return Err(ConfigError::Invalid {
                    name: "ECS_ASSIGN_PUBLIC_IP",
                    value: public_ip,
                    reason: "expected true or false".into(),
                });
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
                trunk_branch: opt("TRUNK_BRANCH", "main"),
                file_pattern,
                webhook_secret_param: req("GITHUB_WEBHOOK_SECRET_SSM_KEY")?,
                merge_lock_param: req("MERGE_LOCK_SSM_KEY")?,
                commit_status_config_param: req("COMMIT_STATUS_CONFIG_SSM_KEY")?,
                max_body_bytes,
            },
            github_api_url: opt("GITHUB_API_URL", "https://api.github.com"),
            github_token_param: req("GITHUB_TOKEN_SSM_KEY")?,
            ecs: EcsConfig {
                cluster: req("ECS_CLUSTER_ARN")?,
                region: req("AWS_REGION")?,
                subnets: list("ECS_SUBNET_IDS")?,
                security_groups: list("ECS_SECURITY_GROUP_IDS")?,
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
