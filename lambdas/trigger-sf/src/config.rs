//! The Lambda's configuration, from the environment the Terraform module sets.

use live_ci_aws::EcsConfig;
use live_ci_boot::settings::{Env, SettingsError};
use live_ci_core::approval::RunPages;
use live_ci_core::merge_lock::Scope;
use live_ci_core::task::TaskKind;
use live_ci_core::webhook::FilePattern;
pub use live_ci_metadb::MetadbConfig;

/// What the handler itself needs (no AWS specifics).
#[derive(Debug, Clone)]
pub struct HandlerConfig {
    /// The SSM parameter mirroring the merge lock (`MERGE_LOCK_SSM_KEY`), read
    /// by the receiver and written when a run hands the lock on.
    pub merge_lock_param: String,
    /// Which pull requests the held lock blocks (`MERGE_LOCK_SCOPE`, the
    /// module's `merge_lock_scope`; `repo` when unset).
    pub merge_lock_scope: Scope,
    /// The branch merges deploy from (`TRUNK_BRANCH`, `main` when unset):
    /// the sweep's trunk check reads its head, lock statuses go to pull
    /// requests against it.
    pub trunk_branch: String,
    /// Pull requests touching these files get the merge lock status.
    pub file_pattern: FilePattern,
    /// Executions claimed per call (the run's `max_parallel` caps it too).
    pub claim_limit: u32,
    /// A claim without an ARN this old lost its start; the sweep retries it.
    pub stale_claim_secs: u32,
    /// Running executions the sweep checks per invocation.
    pub sweep_limit: u32,
    /// Runs one invocation may finish in a row (each hands the lock on).
    pub max_runs_per_invocation: usize,
    /// Failed starts of one execution before it fails with the error
    /// (`MAX_START_ATTEMPTS`, the module's `max_start_attempts`).
    pub max_start_attempts: u32,
    /// The commit status config parameter (`CommitStatusConfig` JSON): its
    /// `Apply` switch turns the per-unit deploy and rollback statuses off.
    /// Without it every status is posted.
    pub commit_status_config_param: Option<String>,
    /// Signs the links of unit statuses to the read-only run page
    /// (approval-response); without it statuses link to the Step Functions
    /// console as before. Holds the run-link key, never the vote-link key.
    pub run_pages: Option<RunPages>,
    /// Write the deploy comment on the pull requests a run deploys
    /// (`deploy_comment.rs`); `main.rs` turns it on with a GitHub client.
    pub deploy_comments: bool,
    /// `owner/name` (`REPO_FULL_NAME`) as notifications name it; empty when unset.
    pub repository: String,
    /// GitHub's web address (`GITHUB_WEB_URL`): notifications link the pull
    /// request under it; without it they name its number only.
    pub github_web_url: Option<String>,
}

impl HandlerConfig {
    /// Defaults for everything but the merge lock parameter and the pattern.
    pub fn new(merge_lock_param: impl Into<String>, file_pattern: FilePattern) -> Self {
        HandlerConfig {
            merge_lock_param: merge_lock_param.into(),
            merge_lock_scope: Scope::Repo,
            trunk_branch: "main".into(),
            file_pattern,
            claim_limit: 100,
            stale_claim_secs: STALE_CLAIM_SECS,
            sweep_limit: 100,
            max_runs_per_invocation: 50,
            max_start_attempts: MAX_START_ATTEMPTS,
            commit_status_config_param: None,
            run_pages: None,
            deploy_comments: false,
            repository: String::new(),
            github_web_url: None,
        }
    }
}

/// Everything `main.rs` wires.
#[derive(Debug, Clone)]
pub struct Config {
    /// What the handler itself reads at every invocation.
    pub handler: HandlerConfig,
    /// The deploy state machine the units' executions start in
    /// (`STATE_MACHINE_ARN`).
    pub state_machine_arn: String,
    /// PostgreSQL directly (`METADB_URL`) or Aurora over the Data API.
    pub metadb: MetadbConfig,
    /// Without a token or App (`live_ci_github::GitHubAuth`) no merge lock
    /// statuses are posted.
    pub github: Option<GitHubAuth>,
    /// The REST API's base (`GITHUB_API_URL`; GitHub Enterprise sets its own).
    pub github_api_url: String,
    /// `owner/name` (`REPO_FULL_NAME`): required with GitHub credentials,
    /// whose client and statuses are scoped to it.
    pub repository: Option<String>,
    /// Where the sweep launches create-deploy-stack for a trunk head the
    /// metadb does not know; without a cluster it does not look at the trunk.
    pub ecs: Option<EcsConfig>,
    /// A head is launched at most once per this many seconds
    /// (`TRUNK_SWEEP_COOLDOWN_SECONDS`): longer than create-deploy-stack takes.
    pub trunk_sweep_cooldown_secs: u32,
    /// Deploy trunk heads no merged pull request produced
    /// (`DEPLOY_DIRECT_PUSHES`, the module's `deploy_direct_pushes`).
    pub deploy_direct_pushes: bool,
    /// The run-link key's parameter and the run page's address
    /// (`RUN_LINK_KEY_SSM_KEY`, `RUN_PAGE_URL`: both or neither); `main.rs`
    /// reads the key into [`HandlerConfig::run_pages`].
    pub run_pages: Option<(String, String)>,
    /// The notifications topic (`NOTIFICATION_TOPIC_ARN`); `None`: off.
    pub notification_topic_arn: Option<String>,
}

/// The default age after which a claim counts as stale.
const STALE_CLAIM_SECS: u32 = 300;
/// The default number of starts a claim gets before it fails.
const MAX_START_ATTEMPTS: u32 = 5;

/// The default cool-down between two launches for the same trunk head.
pub const TRUNK_SWEEP_COOLDOWN_SECS: u32 = 900;

pub use live_ci_core::settings::ConfigError;
use live_ci_github::GitHubAuth;

/// Every environment variable [`Config::from_lookup`] reads: `METADB_URL` or
/// the three Data API variables, the rest as the Terraform module's
/// `trigger_sf_env` sets them.
pub const ENV_VARS: &[&str] = &[
    "MERGE_LOCK_SSM_KEY",
    "MERGE_LOCK_SCOPE",
    "FILE_PATH_PATTERN",
    "TRUNK_BRANCH",
    "STALE_CLAIM_SECONDS",
    "MAX_START_ATTEMPTS",
    "METADB_URL",
    "METADB_CLUSTER_ARN",
    "METADB_SECRET_ARN",
    "METADB_NAME",
    live_ci_github::TOKEN_PARAM,
    live_ci_github::APP_ID,
    live_ci_github::APP_INSTALLATION_ID,
    live_ci_github::APP_PRIVATE_KEY_PARAM,
    "REPO_FULL_NAME",
    "STATE_MACHINE_ARN",
    "GITHUB_API_URL",
    "COMMIT_STATUS_CONFIG_SSM_KEY",
    "TRUNK_SWEEP_COOLDOWN_SECONDS",
    "DEPLOY_DIRECT_PUSHES",
    "AWS_REGION",
    "ECS_CLUSTER_ARN",
    "ECS_SUBNET_IDS",
    "ECS_SECURITY_GROUP_IDS",
    "ECS_ASSIGN_PUBLIC_IP",
    "CREATE_DEPLOY_STACK_TASK_DEFINITION_ARN",
    "CREATE_DEPLOY_STACK_CONTAINER_NAME",
    "CREATE_DEPLOY_STACK_LOG_GROUP",
    "CREATE_DEPLOY_STACK_LOG_STREAM_PREFIX",
    "DRIFT_TASK_DEFINITION_ARN",
    "DRIFT_CONTAINER_NAME",
    "DRIFT_LOG_GROUP",
    "DRIFT_LOG_STREAM_PREFIX",
    "RUN_LINK_KEY_SSM_KEY",
    "RUN_PAGE_URL",
    "GITHUB_WEB_URL",
    "NOTIFICATION_TOPIC_ARN",
];

/// Every AWS action trigger_sf's code calls, for the IAM policy the Terraform
/// module gives it: the token (`SsmParamStore::get`, decrypted) and the merge
/// lock (`put`), `SfnEngine` (start, and describe to tell a repeated start from
/// a conflict and to sweep), and the metadb over the Data API (`DataApiMetadb`,
/// which reads the cluster's secret with the caller's permissions), and the
/// sweep's create-deploy-stack launch (`EcsTaskLauncher`, passing the task's
/// roles).
pub const AWS_ACTIONS: &[&str] = &[
    "ssm:GetParameter",
    "ssm:PutParameter",
    "kms:Decrypt",
    "states:StartExecution",
    "states:DescribeExecution",
    "ecs:RunTask",
    "iam:PassRole",
    "rds-data:ExecuteStatement",
    "rds-data:BeginTransaction",
    "rds-data:CommitTransaction",
    "rds-data:RollbackTransaction",
    "secretsmanager:GetSecretValue",
    // "run finished" and "run failed" on the notifications topic
    // (KMS-encrypted), when notifications are on.
    "sns:Publish",
    "kms:GenerateDataKey",
];

impl Config {
    /// Reads the process environment; every problem is named at once.
    pub fn from_env() -> Result<Self, SettingsError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// The same, from any lookup (tests pass a map); every problem is named.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, SettingsError> {
        let mut env = Env::new(get);
        let handler = handler_config(&mut env);
        let metadb = env.keep(MetadbConfig::from_settings(env.settings()));
        let github = env.keep(GitHubAuth::from_settings(env.settings()));
        let repository = env.optional("REPO_FULL_NAME");
        if matches!(github, Some(Some(_))) && repository.is_none() {
            env.problem::<()>(ConfigError::Missing("REPO_FULL_NAME"));
        }
        let ecs = match env.optional("ECS_CLUSTER_ARN") {
            // The drift task only when the module's drift schedule is on.
            Some(_) => {
                let kinds: &[TaskKind] = if env.optional("DRIFT_TASK_DEFINITION_ARN").is_some() {
                    &[TaskKind::CreateDeployStack, TaskKind::Drift]
                } else {
                    &[TaskKind::CreateDeployStack]
                };
                env.keep(EcsConfig::from_settings(env.settings(), kinds))
                    .map(Some)
            }
            None => Some(None),
        };
        // The trunk head comes from GitHub: a cluster without a token is a
        // half-configured sweep, refused rather than silently skipped.
        if matches!(ecs, Some(Some(_))) && matches!(github, Some(None)) {
            env.problem::<()>(ConfigError::Missing(live_ci_github::TOKEN_PARAM));
        }
        let trunk_sweep_cooldown_secs =
            env.number("TRUNK_SWEEP_COOLDOWN_SECONDS", TRUNK_SWEEP_COOLDOWN_SECS);
        let deploy_direct_pushes = env.flag("DEPLOY_DIRECT_PUSHES", false);
        let run_pages = match (
            env.optional("RUN_LINK_KEY_SSM_KEY"),
            env.optional("RUN_PAGE_URL"),
        ) {
            (Some(key), Some(url)) => Some(Some((key, url))),
            (None, None) => Some(None),
            (Some(_), None) => env.problem(ConfigError::Missing("RUN_PAGE_URL")),
            (None, Some(_)) => env.problem(ConfigError::Missing("RUN_LINK_KEY_SSM_KEY")),
        };
        let state_machine_arn = env.required("STATE_MACHINE_ARN");
        let config = (|| {
            let mut handler = handler?;
            handler.repository = repository.clone().unwrap_or_default();
            // Set by the module; a value that is no https URL only drops the
            // link (a notification's links are checked when it is sanitized).
            handler.github_web_url = env
                .optional("GITHUB_WEB_URL")
                .map(|url| url.trim_end_matches('/').to_string());
            Some(Config {
                // Set by the module; a wrong ARN fails each publish, a warning.
                notification_topic_arn: env.optional("NOTIFICATION_TOPIC_ARN"),
                run_pages: run_pages?,
                handler,
                ecs: ecs?,
                trunk_sweep_cooldown_secs: trunk_sweep_cooldown_secs?,
                deploy_direct_pushes: deploy_direct_pushes?,
                state_machine_arn: state_machine_arn?,
                metadb: metadb?,
                github: github?,
                github_api_url: env.or("GITHUB_API_URL", "https://api.github.com"),
                repository,
            })
        })();
        env.finish(config)
    }
}

/// The handler's own settings: the merge lock, the trunk, claims and starts.
fn handler_config<F: Fn(&str) -> Option<String>>(env: &mut Env<F>) -> Option<HandlerConfig> {
    let file_pattern = env.keep(env.settings().file_pattern());
    let merge_lock_param = env.required("MERGE_LOCK_SSM_KEY");
    let merge_lock_scope = env.keep(env.settings().merge_lock_scope());
    let trunk_branch = env.optional("TRUNK_BRANCH");
    let stale_claim_secs = env.number("STALE_CLAIM_SECONDS", STALE_CLAIM_SECS);
    let max_start_attempts = match env.number("MAX_START_ATTEMPTS", MAX_START_ATTEMPTS) {
        Some(0) => env.problem(ConfigError::Invalid {
            name: "MAX_START_ATTEMPTS",
            value: "0".into(),
            reason: "must be at least 1".into(),
        }),
        read => read,
    };
    let commit_status_config_param = env.optional("COMMIT_STATUS_CONFIG_SSM_KEY");
    let mut handler = HandlerConfig::new(merge_lock_param?, file_pattern?);
    handler.merge_lock_scope = merge_lock_scope?;
    if let Some(trunk) = trunk_branch {
        handler.trunk_branch = trunk;
    }
    handler.stale_claim_secs = stale_claim_secs?;
    handler.max_start_attempts = max_start_attempts?;
    handler.commit_status_config_param = commit_status_config_param;
    Some(handler)
}

#[cfg(test)]
mod tests {
    use super::*;
    use live_ci_core::settings::RecordingLookup;
    use std::collections::{BTreeSet, HashMap};

    #[test]
    fn reads_exactly_the_declared_variables() {
        // Both metadb branches: the URL, and the Data API without it; both
        // GitHub branches: a token, and an App without it.
        let direct = RecordingLookup::without(&[
            live_ci_github::APP_ID,
            live_ci_github::APP_INSTALLATION_ID,
            live_ci_github::APP_PRIVATE_KEY_PARAM,
        ]);
        let c = Config::from_lookup(|k| direct.get(k)).unwrap();
        assert!(matches!(c.github, Some(GitHubAuth::Token { .. })));
        let data_api = RecordingLookup::without(&["METADB_URL", live_ci_github::TOKEN_PARAM]);
        let c = Config::from_lookup(|k| data_api.get(k)).unwrap();
        assert!(matches!(c.metadb, MetadbConfig::DataApi { .. }));
        assert!(matches!(c.github, Some(GitHubAuth::App { .. })));
        // A token and an App at once is refused.
        let both = RecordingLookup::without(&[]);
        Config::from_lookup(|k| both.get(k)).unwrap_err();
        let asked: BTreeSet<String> = direct.asked().union(&data_api.asked()).cloned().collect();
        let declared: BTreeSet<String> = ENV_VARS.iter().map(|s| s.to_string()).collect();
        assert_eq!(asked, declared, "ENV_VARS is out of date");
    }

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn reads_the_environment() {
        let c = Config::from_lookup(lookup(&[
            ("MERGE_LOCK_SSM_KEY", "/ci/lock"),
            ("STATE_MACHINE_ARN", "arn:sm"),
            ("METADB_URL", "postgres://x"),
            ("STALE_CLAIM_SECONDS", "60"),
        ]))
        .unwrap();
        assert_eq!(c.handler.merge_lock_param, "/ci/lock");
        assert_eq!(c.handler.stale_claim_secs, 60);
        assert_eq!(
            c.metadb,
            MetadbConfig::Postgres {
                url: "postgres://x".into()
            }
        );
        assert!(c.github.is_none());
        assert!(
            !c.deploy_direct_pushes,
            "direct pushes are not deployed by default"
        );
        let err = Config::from_lookup(lookup(&[
            ("MERGE_LOCK_SSM_KEY", "/ci/lock"),
            ("STATE_MACHINE_ARN", "arn:sm"),
        ]))
        .unwrap_err();
        assert_eq!(err.problems, [ConfigError::Missing("METADB_CLUSTER_ARN")]);
        let err = Config::from_lookup(lookup(&[
            ("MERGE_LOCK_SSM_KEY", "/ci/lock"),
            ("STALE_CLAIM_SECONDS", "soon"),
        ]))
        .unwrap_err();
        assert!(err.to_string().contains("\"soon\""), "{err}");
    }

    /// Every problem is named at once, not the first only.
    #[test]
    fn two_missing_variables_are_both_named() {
        let err = Config::from_lookup(lookup(&[("METADB_URL", "postgres://x")])).unwrap_err();
        assert_eq!(
            err.problems,
            [
                ConfigError::Missing("MERGE_LOCK_SSM_KEY"),
                ConfigError::Missing("STATE_MACHINE_ARN"),
            ]
        );
        assert_eq!(
            err.to_string(),
            "environment variable MERGE_LOCK_SSM_KEY is not set; \
             environment variable STATE_MACHINE_ARN is not set"
        );
    }
}
