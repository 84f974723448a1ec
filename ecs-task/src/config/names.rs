//! The names of the environment variables the task reads: [`ENV_VARS`] lists
//! every one, and the names used in more than one place are constants here.

use live_ci_core::task::env as task;
use live_ci_stepfunctions::payload::task_env;

/// Every environment variable [`Config::from_lookup`] may read.
pub const ENV_VARS: &[&str] = &[
    "REPO_FULL_NAME",
    "REPO_CLONE_URL",
    "GITHUB_API_URL",
    live_ci_github::TOKEN_PARAM,
    live_ci_github::APP_ID,
    live_ci_github::APP_INSTALLATION_ID,
    live_ci_github::APP_PRIVATE_KEY_PARAM,
    "TRUNK_BRANCH",
    "FILE_PATH_PATTERN",
    "MERGE_LOCK_SSM_KEY",
    "MERGE_LOCK_SCOPE",
    "COMMIT_STATUS_CONFIG_SSM_KEY",
    "ACCOUNT_PARENT_CFG",
    "SCAN_TYPE",
    "PLAN_COMMAND",
    "APPLY_COMMAND",
    "SHOW_COMMAND",
    "SKIP_UNCHANGED",
    crate::git_ssh::ENV,
    crate::git_ssh::KNOWN_HOSTS_ENV,
    crate::sandbox::CHILD_UID,
    crate::sandbox::CHILD_GID,
    "MAX_PARALLEL",
    "FAIL_FAST",
    "ALLOW_DESTROY",
    DEPLOY_FILTERS,
    "POLICY_DIR",
    POLICY_OVERRIDE,
    POLICY_COMMAND,
    "TRIGGER_SF_FUNCTION_NAME",
    "PLAN_BUCKET",
    "LOG_GROUP",
    "LOG_STREAM_PREFIX",
    "HEARTBEAT_SECONDS",
    "AWS_REGION",
    "ECS_CONTAINER_METADATA_URI_V4",
    "METADB_URL",
    "METADB_CLUSTER_ARN",
    "METADB_SECRET_ARN",
    "METADB_NAME",
    METADB_TERRA_RUN_SECRET_ARN,
    METADB_DRIFT_SECRET_ARN,
    live_ci_aws::NOTIFICATION_TOPIC_ENV,
    task::PR_NUMBER,
    task::COMMIT,
    task::BASE_REF,
    task::HEAD_REF,
    task::BASE_SHA,
    task::HEAD_SHA,
    task::DELIVERY_ID,
    task::HEAD_TRUSTED,
    MODULE_SOURCE_REPOSITORIES,
    MODULE_SOURCES_GIT_URL,
    MODULE_SOURCES_FOR_FORKS,
    task_env::PHASE,
    task_env::TASK_TOKEN,
    task_env::EXECUTION_ID,
    task_env::SFN_EXECUTION_ARN,
    task_env::CFG_PATH,
    task_env::COMMAND,
    task_env::ROLE_ARN,
    task_env::PLAN_ARTIFACT,
    RUN_LINK_KEY_SSM_KEY,
    RUN_PAGE_URL,
];

/// The module's `deploy_filters`: a JSON list of filter queries that narrow
/// what pr-plan plans and create-deploy-stack deploys (`crate::filters`).
pub const DEPLOY_FILTERS: &str = "DEPLOY_FILTERS";

/// The module's `policy_override` (`crate::policy`).
pub const POLICY_OVERRIDE: &str = "POLICY_OVERRIDE";

/// The module's `policy_command` (`crate::policy`).
pub const POLICY_COMMAND: &str = "POLICY_COMMAND";

/// terra-run's run-link key parameter: its statuses link to the read-only run
/// page, signed with this key (never the vote-link key).
pub const RUN_LINK_KEY_SSM_KEY: &str = "RUN_LINK_KEY_SSM_KEY";

/// The run page's address (approval-response's Function URL).
pub const RUN_PAGE_URL: &str = "RUN_PAGE_URL";

/// create-deploy-stack (the migrator) sets terra-run's own metadb login: this
/// is the secret holding its password (`live_ci_metadb::provision_terra_run_login`).
pub const METADB_TERRA_RUN_SECRET_ARN: &str = "METADB_TERRA_RUN_SECRET_ARN";

/// create-deploy-stack (the migrator) sets the drift job's own metadb login
/// too: the secret holding its password (`live_ci_metadb::provision_login`).
pub const METADB_DRIFT_SECRET_ARN: &str = "METADB_DRIFT_SECRET_ARN";

/// The repositories terraform may read private module sources from
/// (`owner/name`, comma-separated; the module's `module_source_repositories`).
pub const MODULE_SOURCE_REPOSITORIES: &str = "MODULE_SOURCE_REPOSITORIES";

/// The git host the module-source token is for: scheme, host and port.
/// Default: the web host of `GITHUB_API_URL` (github.com, or a GitHub
/// Enterprise host).
pub const MODULE_SOURCES_GIT_URL: &str = "MODULE_SOURCES_GIT_URL";

/// `true`: a maintainer's `/live-ci plan` of a fork's (or an untrusted
/// author's) code gets the module-source token too (default false).
pub const MODULE_SOURCES_FOR_FORKS: &str = "MODULE_SOURCES_FOR_FORKS";
