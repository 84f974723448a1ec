//! The receiver's configuration, from the environment the Terraform module sets.

use std::time::Duration;

use live_ci_aws::EcsConfig;
use live_ci_boot::settings::{Env, SettingsError};
use live_ci_core::task::TaskKind;
use live_ci_core::webhook::{FilePattern, TrustPolicy};
pub use live_ci_metadb::MetadbConfig;

/// How long a warm container keeps the webhook secret before reading it again.
pub const SECRET_TTL: Duration = Duration::from_secs(300);
/// How often at most a signature failure re-reads the secret, and how long an
/// unusable (placeholder, short) secret is kept before it is read again.
pub const SECRET_RETRY: Duration = Duration::from_secs(10);
/// How long a metadb call waits for a paused Aurora Serverless v2 cluster to
/// resume (`DatabaseResumingException`, retried with back-off) before it fails.
/// GitHub gives a delivery 10 s; the receiver's only metadb read (a "locked"
/// merge lock confirmed against its row) then answers the parameter's value, so
/// the delivery is still answered (200, the task started) well within them,
/// rather than 503 (GitHub does not redeliver by itself) or a timeout.
pub const METADB_RESUME_DEADLINE: Duration = Duration::from_secs(3);

/// What the handler itself needs (no AWS specifics).
#[derive(Debug, Clone)]
pub struct HandlerConfig {
    /// The live repository, `owner/name` (`REPO_FULL_NAME`); the router checks
    /// each event's repository against it.
    pub repository: String,
    /// The branch deploys merge into (`TRUNK_BRANCH`, default `main`).
    pub trunk_branch: String,
    /// Which changed files count as Terragrunt files (core's file pattern settings).
    pub file_pattern: FilePattern,
    /// SSM parameter holding the webhook secret (`GITHUB_WEBHOOK_SECRET_SSM_KEY`).
    pub webhook_secret_param: String,
    /// SSM parameter mirroring the merge lock (`MERGE_LOCK_SSM_KEY`).
    pub merge_lock_param: String,
    /// SSM parameter holding the commit-status switches (`COMMIT_STATUS_CONFIG_SSM_KEY`).
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
    /// What the handler reads.
    pub handler: HandlerConfig,
    /// The GitHub REST API's base URL (`GITHUB_API_URL`, default `https://api.github.com`).
    pub github_api_url: String,
    /// A token or a GitHub App (`live_ci_github::GitHubAuth`); one is required.
    pub github: GitHubAuth,
    /// The cluster, subnets and task definitions the pr-plan and
    /// create-deploy-stack tasks start with.
    pub ecs: EcsConfig,
    /// Where a "locked" merge lock parameter is confirmed (the lock row).
    pub metadb: MetadbConfig,
    /// approval_response's function name or ARN: vote comments on merged
    /// pull requests are handed to it. `None`: votes from GitHub are not
    /// enabled (no account lists `github_voters` and `voter_github_logins`
    /// maps nobody).
    pub approval_response_function: Option<String>,
}

pub use live_ci_core::settings::ConfigError;
use live_ci_github::GitHubAuth;

/// Every environment variable [`Config::from_lookup`] reads (`AWS_REGION` is set
/// by the Lambda runtime; the others by the Terraform module's `receiver_env`).
pub const ENV_VARS: &[&str] = &[
    "REPO_FULL_NAME",
    "TRUNK_BRANCH",
    "FILE_PATH_PATTERN",
    "GITHUB_API_URL",
    "GITHUB_WEBHOOK_SECRET_SSM_KEY",
    live_ci_github::TOKEN_PARAM,
    live_ci_github::APP_ID,
    live_ci_github::APP_INSTALLATION_ID,
    live_ci_github::APP_PRIVATE_KEY_PARAM,
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
    "METADB_URL",
    "METADB_CLUSTER_ARN",
    "METADB_SECRET_ARN",
    "METADB_NAME",
    "APPROVAL_RESPONSE_FUNCTION",
];

/// Every AWS action the receiver's code calls, for the IAM policy the Terraform
/// module gives it: the webhook secret, token, merge lock and status config
/// (`SsmParamStore::get`, SecureStrings decrypted with the module's key) and the
/// pr-plan / create-deploy-stack tasks (`EcsTaskLauncher`, which passes the
/// task's roles), and the metadb's lock row over the Data API (`DataApiMetadb`,
/// which reads the cluster's secret with the caller's permissions).
pub const AWS_ACTIONS: &[&str] = &[
    "ssm:GetParameter",
    "kms:Decrypt",
    "ecs:RunTask",
    "iam:PassRole",
    "rds-data:ExecuteStatement",
    "rds-data:BeginTransaction",
    "rds-data:CommitTransaction",
    "rds-data:RollbackTransaction",
    "secretsmanager:GetSecretValue",
    // Votes from the pull request: an asynchronous invoke of approval_response
    // only (the module scopes it to that function's ARN).
    "lambda:InvokeFunction",
];

impl Config {
    /// Reads the process environment ([`ENV_VARS`]), naming every problem at once.
    pub fn from_env() -> Result<Self, SettingsError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// The same, from any lookup (tests pass a map); every problem is named.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, SettingsError> {
        let mut env = Env::new(get);
        let file_pattern = env.keep(env.settings().file_pattern());
        let max_body_bytes = env.number("MAX_BODY_BYTES", 5 * 1024 * 1024);
        let trust = env
            .parsed("PR_PLAN_AUTHOR_ASSOCIATIONS", TrustPolicy::parse_json)
            .map(Option::unwrap_or_default);
        let repository = env.required("REPO_FULL_NAME");
        let webhook_secret_param = env.required("GITHUB_WEBHOOK_SECRET_SSM_KEY");
        let merge_lock_param = env.required("MERGE_LOCK_SSM_KEY");
        let commit_status_config_param = env.required("COMMIT_STATUS_CONFIG_SSM_KEY");
        let github = match env.keep(GitHubAuth::from_settings(env.settings())) {
            Some(Some(auth)) => Some(auth),
            Some(None) => env.problem(ConfigError::Missing(live_ci_github::TOKEN_PARAM)),
            None => None,
        };
        let kinds = [TaskKind::PrPlan, TaskKind::CreateDeployStack];
        let ecs = env.keep(EcsConfig::from_settings(env.settings(), &kinds));
        let metadb = env.keep(MetadbConfig::from_settings(env.settings()));
        let config = (|| {
            Some(Config {
                handler: HandlerConfig {
                    repository: repository?,
                    trunk_branch: env.or("TRUNK_BRANCH", "main"),
                    file_pattern: file_pattern?,
                    webhook_secret_param: webhook_secret_param?,
                    merge_lock_param: merge_lock_param?,
                    commit_status_config_param: commit_status_config_param?,
                    max_body_bytes: max_body_bytes?,
                    trust: trust?,
                    secret_ttl: SECRET_TTL,
                    secret_retry: SECRET_RETRY,
                },
                github_api_url: env.or("GITHUB_API_URL", "https://api.github.com"),
                github: github?,
                ecs: ecs?,
                metadb: metadb?,
                approval_response_function: env.optional("APPROVAL_RESPONSE_FUNCTION"),
            })
        })();
        env.finish(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use live_ci_core::settings::RecordingLookup;

    #[test]
    fn reads_exactly_the_declared_variables() {
        // Unset: the recording lookup's "1" is no JSON list of associations.
        // Both metadb branches: the URL, and the Data API without it.
        // Both GitHub branches: a token, and an App without it.
        let lookup = RecordingLookup::without(&["PR_PLAN_AUTHOR_ASSOCIATIONS"]);
        // Both set is refused; the refusal still reads every variable.
        Config::from_lookup(|k| lookup.get(k)).unwrap_err();
        let token = RecordingLookup::without(&[
            "PR_PLAN_AUTHOR_ASSOCIATIONS",
            live_ci_github::APP_ID,
            live_ci_github::APP_INSTALLATION_ID,
            live_ci_github::APP_PRIVATE_KEY_PARAM,
        ]);
        let c = Config::from_lookup(|k| token.get(k)).unwrap();
        assert!(matches!(c.github, GitHubAuth::Token { .. }));
        let data_api = RecordingLookup::without(&[
            "PR_PLAN_AUTHOR_ASSOCIATIONS",
            "METADB_URL",
            live_ci_github::TOKEN_PARAM,
        ]);
        let c = Config::from_lookup(|k| data_api.get(k)).unwrap();
        assert!(matches!(c.metadb, MetadbConfig::DataApi { .. }));
        assert!(matches!(c.github, GitHubAuth::App { app_id: 1, .. }));
        let declared: std::collections::BTreeSet<String> =
            ENV_VARS.iter().map(|s| s.to_string()).collect();
        let asked: std::collections::BTreeSet<String> = lookup
            .asked()
            .union(&data_api.asked())
            .cloned()
            .chain(token.asked())
            .collect();
        assert_eq!(asked, declared, "ENV_VARS is out of date");
    }

    #[test]
    fn a_missing_variable_is_named() {
        let lookup = RecordingLookup::without(&[
            "CREATE_DEPLOY_STACK_LOG_GROUP",
            "PR_PLAN_AUTHOR_ASSOCIATIONS",
            live_ci_github::TOKEN_PARAM,
        ]);
        let err = Config::from_lookup(|k| lookup.get(k)).unwrap_err();
        assert_eq!(
            err.problems,
            [ConfigError::Missing("CREATE_DEPLOY_STACK_LOG_GROUP")]
        );
    }

    /// Every problem is named at once, not the first only.
    #[test]
    fn two_missing_variables_are_both_named() {
        let lookup = RecordingLookup::without(&[
            "REPO_FULL_NAME",
            "CREATE_DEPLOY_STACK_LOG_GROUP",
            "PR_PLAN_AUTHOR_ASSOCIATIONS",
            live_ci_github::TOKEN_PARAM,
        ]);
        let err = Config::from_lookup(|k| lookup.get(k)).unwrap_err();
        assert_eq!(
            err.problems,
            [
                ConfigError::Missing("REPO_FULL_NAME"),
                ConfigError::Missing("CREATE_DEPLOY_STACK_LOG_GROUP"),
            ]
        );
        assert_eq!(
            err.to_string(),
            "environment variable REPO_FULL_NAME is not set; \
             environment variable CREATE_DEPLOY_STACK_LOG_GROUP is not set"
        );
    }
}
