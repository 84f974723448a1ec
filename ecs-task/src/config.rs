//! The task's configuration, from the environment the Terraform module sets on
//! the task definitions (shared by all subcommands) plus the per-task overrides
//! of the receiver (`live_ci_core::task::env`) and of the state machine
//! (`live_ci_stepfunctions::payload::task_env`). Every name read is in [`ENV_VARS`].

use live_ci_boot::settings::{Env, SettingsError};
use live_ci_core::approval::RunPages;
use live_ci_core::merge_lock::Scope;
use live_ci_core::path::RepoPath;
use live_ci_core::policy::PolicyCommand;
use live_ci_core::settings::ConfigError;
use live_ci_core::task::env as task;
use live_ci_core::terraform::{
    CommandTemplate, DEFAULT_APPLY_COMMAND, DEFAULT_PLAN_COMMAND, DEFAULT_SHOW_COMMAND, Phase,
};
use live_ci_core::webhook::FilePattern;
use live_ci_github::GitHubAuth;
use live_ci_metadb::MetadbConfig;
use live_ci_stepfunctions::payload::task_env;

use crate::cli::TaskCommand;

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

/// The metadb's actions through the RDS Data API (`live_ci_metadb::AWS_ACTIONS`).
const METADB_ACTIONS: [&str; 5] = [
    "rds-data:ExecuteStatement",
    "rds-data:BeginTransaction",
    "rds-data:CommitTransaction",
    "rds-data:RollbackTransaction",
    "secretsmanager:GetSecretValue",
];

/// What `pr-plan` calls: the GitHub token and status switches (SecureString:
/// `kms:Decrypt`), and the accounts' plan roles. Nothing else: it runs a pull
/// request's code.
pub const PR_PLAN_AWS_ACTIONS: &[&str] = &["ssm:GetParameter", "kms:Decrypt", "sts:AssumeRole"];

/// What `create-deploy-stack` calls (`sts:AssumeRole` on plan roles, for the
/// plan scan; `s3:PutObject` and S3's SSE-KMS `kms:GenerateDataKey` for the
/// run's packed checkout).
pub const CREATE_DEPLOY_STACK_AWS_ACTIONS: &[&str] = &[
    "ssm:GetParameter",
    "ssm:PutParameter",
    "kms:Decrypt",
    "kms:GenerateDataKey",
    "s3:PutObject",
    "lambda:InvokeFunction",
    "sts:AssumeRole",
    METADB_ACTIONS[0],
    METADB_ACTIONS[1],
    METADB_ACTIONS[2],
    METADB_ACTIONS[3],
    METADB_ACTIONS[4],
    "secretsmanager:PutSecretValue",
];

/// What `terra-run` calls (`kms:GenerateDataKey` through S3's SSE-KMS on
/// upload, `s3:GetObjectVersion` for the recorded plan version).
pub const TERRA_RUN_AWS_ACTIONS: &[&str] = &[
    "ssm:GetParameter",
    "kms:Decrypt",
    "kms:GenerateDataKey",
    "s3:PutObject",
    "s3:GetObject",
    "s3:GetObjectVersion",
    "states:SendTaskSuccess",
    "states:SendTaskFailure",
    "states:SendTaskHeartbeat",
    "sts:AssumeRole",
    METADB_ACTIONS[0],
    METADB_ACTIONS[1],
    METADB_ACTIONS[2],
    METADB_ACTIONS[3],
    METADB_ACTIONS[4],
];

/// What `drift` calls: the GitHub App's key or token (SecureString:
/// `kms:Decrypt`), the accounts' plan roles (`sts:AssumeRole`: the module
/// names only plan roles as its resources), its own metadb login (Data API
/// and its login secret) and the notification topic (a KMS-encrypted topic:
/// SNS asks the publisher's `kms:GenerateDataKey`). No apply role, no
/// merge-lock parameter write (`ssm:PutParameter`), no plan bucket, no
/// state machine: a drift check never deploys nor holds what a deploy needs.
pub const DRIFT_AWS_ACTIONS: &[&str] = &[
    "ssm:GetParameter",
    "kms:Decrypt",
    "sts:AssumeRole",
    "sns:Publish",
    "kms:GenerateDataKey",
    METADB_ACTIONS[0],
    METADB_ACTIONS[1],
    METADB_ACTIONS[2],
    METADB_ACTIONS[3],
    METADB_ACTIONS[4],
];

/// Each subcommand's actions, for its own task role in the Terraform module.
pub const JOB_AWS_ACTIONS: &[(&str, &[&str])] = &[
    ("pr-plan", PR_PLAN_AWS_ACTIONS),
    ("create-deploy-stack", CREATE_DEPLOY_STACK_AWS_ACTIONS),
    ("terra-run", TERRA_RUN_AWS_ACTIONS),
    ("drift", DRIFT_AWS_ACTIONS),
];

/// Every IAM action the binary calls (the union of [`JOB_AWS_ACTIONS`]).
pub const AWS_ACTIONS: &[&str] = &[
    "ssm:GetParameter",
    "ssm:PutParameter",
    "kms:Decrypt",
    "kms:GenerateDataKey",
    "sts:AssumeRole",
    "states:SendTaskSuccess",
    "states:SendTaskFailure",
    "states:SendTaskHeartbeat",
    "s3:PutObject",
    "s3:GetObject",
    "s3:GetObjectVersion",
    "lambda:InvokeFunction",
    "sns:Publish",
    METADB_ACTIONS[0],
    METADB_ACTIONS[1],
    METADB_ACTIONS[2],
    METADB_ACTIONS[3],
    METADB_ACTIONS[4],
    "secretsmanager:PutSecretValue",
];

/// How create-deploy-stack finds the affected units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanType {
    /// Changed files mapped onto the unit graph (no terraform run).
    Graph,
    /// `plan -detailed-exitcode` for every unit; changed ones and their dependents.
    Plan,
}

/// Every problem with the environment a subcommand found at start, so that one
/// failed start names all of them (the module sets the variables; a broken
/// deployment should not be fixed one restart at a time).
#[derive(Debug, PartialEq, Eq)]
pub struct ConfigErrors {
    /// The problems, read by the one settings reader every binary shares.
    pub settings: SettingsError,
    /// A terra-run's task token, when it was given: the task answers it with
    /// these problems, so the state machine does not wait out its heartbeat.
    pub task_token: Option<String>,
}

impl std::fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.settings.fmt(f)
    }
}

impl std::error::Error for ConfigErrors {}

/// A terraform command template; `subcommand` is the invocation that
/// receives live-ci's flags (`-out=`, `-destroy -target=`,
/// `-detailed-exitcode`, the apply's plan file).
fn template<F: Fn(&str) -> Option<String>>(
    check: &mut Env<F>,
    name: &'static str,
    default: &str,
    subcommand: &str,
) -> Option<CommandTemplate> {
    let text = check.or(name, default);
    let read = CommandTemplate::with_invocation(&text, subcommand).map_err(|reason| {
        ConfigError::Invalid {
            name,
            value: text.clone(),
            reason,
        }
    });
    check.keep(read)
}

/// The metadb connection, required: `METADB_URL`, or the Data API's
/// variables.
fn metadb<F: Fn(&str) -> Option<String>>(check: &mut Env<F>) -> Option<MetadbConfig> {
    let configured = ["METADB_URL", "METADB_CLUSTER_ARN"]
        .iter()
        .any(|k| check.optional(k).is_some());
    if configured {
        let read = MetadbConfig::from_settings(check.settings());
        check.keep(read)
    } else {
        check.problem(ConfigError::Missing("METADB_URL"))
    }
}

/// The config when nothing was wrong, else every problem found (without a
/// task token: [`Config::from_lookup`] adds terra-run's).
fn finish<T, F: Fn(&str) -> Option<String>>(
    check: Env<F>,
    value: Option<T>,
) -> Result<T, ConfigErrors> {
    check.finish(value).map_err(|settings| ConfigErrors {
        settings,
        task_token: None,
    })
}

/// A subcommand's config, read from any lookup (the process environment, or a
/// map in tests).
pub trait FromLookup: Sized {
    /// Reads this config, adding every problem to `check`.
    fn read<F: Fn(&str) -> Option<String>>(check: &mut Env<F>) -> Option<Self>;

    /// This config from `get`, or every problem with it.
    fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigErrors> {
        let mut check = Env::new(get);
        let value = Self::read(&mut check);
        finish(check, value)
    }
}

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

/// Private module sources over HTTPS (`crate::git_credentials`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleSources {
    /// `owner/name`, each of the live repository's owner.
    pub repositories: Vec<String>,
    /// Scheme, host and port of the git host.
    pub git_url: String,
    /// A fork's pull request plans with the token too (`MODULE_SOURCES_FOR_FORKS`).
    pub for_forks: bool,
}

/// Reads [`ModuleSources`]: only with a GitHub App (a personal token is never
/// given to repository code), and only repositories of the live
/// repository's owner (the installation's).
fn module_sources<F: Fn(&str) -> Option<String>>(
    check: &mut Env<F>,
    repository: Option<&str>,
    api_url: &str,
    app: bool,
) -> Option<Option<ModuleSources>> {
    let for_forks = check.settings().flag(MODULE_SOURCES_FOR_FORKS, false);
    let for_forks = check.keep(for_forks);
    let git_url = check
        .optional(MODULE_SOURCES_GIT_URL)
        .unwrap_or_else(|| github_web_url(api_url));
    let Some(list) = check.optional(MODULE_SOURCE_REPOSITORIES) else {
        return Some(None);
    };
    let invalid = |reason: String| ConfigError::Invalid {
        name: MODULE_SOURCE_REPOSITORIES,
        value: list.clone(),
        reason,
    };
    let owner = repository
        .and_then(|r| r.split_once('/'))
        .map_or("", |(o, _)| o);
    let repositories: Vec<String> = list
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_string)
        .collect();
    let read = if !app {
        Err(invalid(
            "needs a github app (GITHUB_APP_ID): a personal token is never given to repository code"
                .into(),
        ))
    } else if repositories.is_empty() {
        Err(invalid("lists no repository".into()))
    } else if let Some(bad) = repositories.iter().find(|r| {
        !r.split_once('/').is_some_and(|(o, n)| {
            o.eq_ignore_ascii_case(owner)
                && !n.is_empty()
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        })
    }) {
        Err(invalid(format!(
            "{bad:?} is not a repository of {owner:?}, the owner the github app is installed on"
        )))
    } else if !(git_url.starts_with("https://") || git_url.starts_with("http://")) {
        Err(ConfigError::Invalid {
            name: MODULE_SOURCES_GIT_URL,
            value: git_url.clone(),
            reason: "not an http(s) url".into(),
        })
    } else {
        Ok(ModuleSources {
            repositories,
            git_url,
            for_forks: for_forks.unwrap_or(false),
        })
    };
    check.keep(read).map(Some)
}

/// Settings every subcommand shares; each has a default or is optional.
#[derive(Debug, Clone)]
pub struct Common {
    /// `owner/name` on GitHub (`REPO_FULL_NAME`): statuses, comments and an App's token.
    pub repository: Option<String>,
    /// What to clone: `REPO_CLONE_URL`, else the GitHub URL of the repository.
    pub clone_url: String,
    /// GitHub's REST API (`GITHUB_API_URL`; api.github.com or an Enterprise server's).
    pub github_api_url: String,
    /// A token or a GitHub App (`live_ci_github::GitHubAuth`). Without one, no
    /// commit statuses or comments are posted and clones are anonymous.
    pub github: Option<GitHubAuth>,
    /// The branch merges deploy from (`TRUNK_BRANCH`, default `main`).
    pub trunk_branch: String,
    /// Which files are units' configurations (`FILE_PATH_PATTERN`).
    pub file_pattern: FilePattern,
    /// The SSM parameter holding the commit-status switches (`COMMIT_STATUS_CONFIG_SSM_KEY`).
    pub commit_status_config_param: Option<String>,
    /// How create-deploy-stack finds the affected units (`SCAN_TYPE`).
    pub scan_type: ScanType,
    /// Plans one unit (`PLAN_COMMAND`), live-ci's flags added to its `plan`.
    pub plan_command: CommandTemplate,
    /// Applies one unit's saved plan (`APPLY_COMMAND`).
    pub apply_command: CommandTemplate,
    /// Describes a saved plan as JSON (`terraform show -json`), run after every plan.
    pub show_command: CommandTemplate,
    /// A plan that changes nothing ends the deployment without approval or apply.
    pub skip_unchanged: bool,
    /// The deploy key for `git::ssh://` module sources (`GIT_SSH_KEY`, an ECS secret).
    pub git_ssh_key: Option<crate::git_ssh::SshKey>,
    /// The host keys SSH module sources must present (`SSH_KNOWN_HOSTS`;
    /// GitHub's published keys when unset or empty).
    pub ssh_known_hosts: crate::git_ssh::KnownHosts,
    /// The unprivileged uid/gid repository code runs as (`LIVE_CI_CHILD_UID`,
    /// `LIVE_CI_CHILD_GID`; the image sets both): `None` runs it as the task's
    /// own user.
    pub child_user: Option<crate::sandbox::ChildUser>,
    /// How many units plan at once (`MAX_PARALLEL`).
    pub max_parallel: u32,
    /// The first failed plan stops the others (`FAIL_FAST`, default off).
    pub fail_fast: bool,
    /// Units a merge removes are destroyed (from the range's start, dependents
    /// first); off, they are only named in a commit status.
    pub allow_destroy: bool,
    /// The module's `deploy_filters`, unparsed: a query that does not parse
    /// fails the run (naming its entry and column) rather than the task's start,
    /// so the error reaches the commit status.
    pub deploy_filters: Vec<String>,
    /// The directory of Rego policies judging every plan of pr-plan and
    /// terra-run (`POLICY_DIR`, read at the trunk before the change,
    /// `crate::policy`); unset, no policy runs.
    pub policy_dir: Option<RepoPath>,
    /// A plan the policies deny goes to the vote with its denials recorded
    /// instead of failing the unit; an approve then needs a reason
    /// (`POLICY_OVERRIDE`, default off).
    pub policy_override: bool,
    /// Another policy tool run after each plan on the plan's `show -json`
    /// file, as terraform runs (`POLICY_COMMAND`, `{plan_json}` required;
    /// unset or empty: none).
    pub policy_command: Option<PolicyCommand>,
    /// The CloudWatch log group of the task's output (`LOG_GROUP`), for the statuses' links.
    pub log_group: Option<String>,
    /// The awslogs stream prefix (`LOG_STREAM_PREFIX`), for the statuses' links.
    pub log_stream_prefix: Option<String>,
    /// How often a running command heartbeats its task token (`HEARTBEAT_SECONDS`, at least 1).
    pub heartbeat_seconds: u64,
    /// The AWS region of the log links (`AWS_REGION`).
    pub region: Option<String>,
    /// The ECS task metadata endpoint (v4), where the log stream's name is read.
    pub ecs_metadata_uri: Option<String>,
    /// Private module sources over HTTPS, when configured (GitHub App only).
    pub module_sources: Option<ModuleSources>,
}

impl FromLookup for Common {
    fn read<F: Fn(&str) -> Option<String>>(check: &mut Env<F>) -> Option<Self> {
        let scan_type = scan_type(check);
        let max_parallel = max_parallel(check);
        let repository = check.optional("REPO_FULL_NAME");
        let github_api_url = check
            .settings()
            .or("GITHUB_API_URL", "https://api.github.com");
        let clone_url = match check.optional("REPO_CLONE_URL") {
            Some(url) => Some(url),
            None => match &repository {
                Some(r) => Some(github_clone_url(&github_api_url, r)),
                None => check.keep(Err(ConfigError::Missing("REPO_CLONE_URL"))),
            },
        };
        let file_pattern = check.settings().file_pattern();
        let file_pattern = check.keep(file_pattern);
        let plan_command = template(check, "PLAN_COMMAND", DEFAULT_PLAN_COMMAND, "plan");
        let apply_command = template(check, "APPLY_COMMAND", DEFAULT_APPLY_COMMAND, "apply");
        let show_command = template(check, "SHOW_COMMAND", DEFAULT_SHOW_COMMAND, "show");
        let skip_unchanged = check.settings().flag("SKIP_UNCHANGED", true);
        let skip_unchanged = check.keep(skip_unchanged);
        let fail_fast = check.settings().flag("FAIL_FAST", false);
        let fail_fast = check.keep(fail_fast);
        let allow_destroy = check.settings().flag("ALLOW_DESTROY", false);
        let allow_destroy = check.keep(allow_destroy);
        let deploy_filters = deploy_filters(check);
        let policy = policy_settings(check);
        let heartbeat_seconds = check.settings().number("HEARTBEAT_SECONDS", 60u64);
        let heartbeat_seconds = check.keep(heartbeat_seconds).map(|s| s.max(1));
        let github = GitHubAuth::from_settings(check.settings()).and_then(|auth| match auth {
            // An App's token is limited to the repository by name.
            Some(GitHubAuth::App { .. }) if repository.is_none() => {
                Err(ConfigError::Missing("REPO_FULL_NAME"))
            }
            auth => Ok(auth),
        });
        let github = check.keep(github);
        let app = matches!(github, Some(Some(GitHubAuth::App { .. })));
        let module_sources = module_sources(check, repository.as_deref(), &github_api_url, app);
        let child_user = crate::sandbox::ChildUser::from_settings(
            check.optional(crate::sandbox::CHILD_UID),
            check.optional(crate::sandbox::CHILD_GID),
        );
        let child_user = check.keep(child_user);
        let ssh_known_hosts = crate::git_ssh::KnownHosts::parse(
            check.optional(crate::git_ssh::KNOWN_HOSTS_ENV).as_deref(),
        );
        let ssh_known_hosts = check.keep(ssh_known_hosts);
        Some(Common {
            repository,
            clone_url: clone_url?,
            github_api_url,
            github: github?,
            trunk_branch: check.settings().or("TRUNK_BRANCH", "main"),
            file_pattern: file_pattern?,
            commit_status_config_param: check.optional("COMMIT_STATUS_CONFIG_SSM_KEY"),
            scan_type: scan_type?,
            plan_command: plan_command?,
            apply_command: apply_command?,
            show_command: show_command?,
            skip_unchanged: skip_unchanged?,
            git_ssh_key: check
                .optional(crate::git_ssh::ENV)
                .map(crate::git_ssh::SshKey::new),
            ssh_known_hosts: ssh_known_hosts?,
            child_user: child_user?,
            max_parallel: max_parallel?,
            fail_fast: fail_fast?,
            allow_destroy: allow_destroy?,
            deploy_filters: deploy_filters?,
            policy_dir: policy.0?,
            policy_override: policy.1?,
            policy_command: policy.2?,
            log_group: check.optional("LOG_GROUP"),
            log_stream_prefix: check.optional("LOG_STREAM_PREFIX"),
            heartbeat_seconds: heartbeat_seconds?,
            region: check.optional("AWS_REGION"),
            ecs_metadata_uri: check.optional("ECS_CONTAINER_METADATA_URI_V4"),
            module_sources: module_sources?,
        })
    }
}

/// `SCAN_TYPE`: `graph` (the default) or `plan`.
fn scan_type<F: Fn(&str) -> Option<String>>(check: &mut Env<F>) -> Option<ScanType> {
    match check.optional("SCAN_TYPE").as_deref() {
        None | Some("graph") => Some(ScanType::Graph),
        Some("plan") => Some(ScanType::Plan),
        Some(other) => check.keep(Err(ConfigError::Invalid {
            name: "SCAN_TYPE",
            value: other.to_string(),
            reason: "expected graph or plan".into(),
        })),
    }
}

/// `MAX_PARALLEL`: at least 1, 10 by default.
fn max_parallel<F: Fn(&str) -> Option<String>>(check: &mut Env<F>) -> Option<u32> {
    let max_parallel = match check.settings().number::<u32>("MAX_PARALLEL", 10) {
        Ok(0) => Err(ConfigError::Invalid {
            name: "MAX_PARALLEL",
            value: "0".into(),
            reason: "must be at least 1".into(),
        }),
        other => other,
    };
    check.keep(max_parallel)
}

/// `DEPLOY_FILTERS`: a JSON list of filter expressions, kept unparsed (a
/// query that does not parse fails the run, not the task's start).
fn deploy_filters<F: Fn(&str) -> Option<String>>(check: &mut Env<F>) -> Option<Vec<String>> {
    let read = match check.optional(DEPLOY_FILTERS) {
        None => Ok(Vec::new()),
        Some(json) => {
            serde_json::from_str::<Vec<String>>(&json).map_err(|e| ConfigError::Invalid {
                name: DEPLOY_FILTERS,
                value: json.clone(),
                reason: format!("expected a json list of strings: {e}"),
            })
        }
    };
    check.keep(read)
}

/// `POLICY_DIR`, `POLICY_OVERRIDE` and `POLICY_COMMAND`, each read (and
/// each error kept) whatever the others hold.
#[allow(clippy::type_complexity)]
fn policy_settings<F: Fn(&str) -> Option<String>>(
    check: &mut Env<F>,
) -> (
    Option<Option<RepoPath>>,
    Option<bool>,
    Option<Option<PolicyCommand>>,
) {
    let policy_dir = match check.optional("POLICY_DIR") {
        None => Some(None),
        Some(dir) => {
            let read = RepoPath::new(dir.trim().trim_end_matches('/'))
                .map(Some)
                .map_err(|e| ConfigError::Invalid {
                    name: "POLICY_DIR",
                    value: dir.clone(),
                    reason: e.to_string(),
                });
            check.keep(read)
        }
    };
    let policy_override = check.settings().flag(POLICY_OVERRIDE, false);
    let policy_override = check.keep(policy_override);
    let policy_command = match check.optional(POLICY_COMMAND) {
        None => Some(None),
        Some(t) if t.trim().is_empty() => Some(None),
        Some(t) => {
            let read = PolicyCommand::new(&t)
                .map(Some)
                .map_err(|reason| ConfigError::Invalid {
                    name: POLICY_COMMAND,
                    value: t.clone(),
                    reason,
                });
            check.keep(read)
        }
    };
    (policy_dir, policy_override, policy_command)
}

/// `LIVE_CI_PR_NUMBER`, `#` allowed.
fn pr_number<F: Fn(&str) -> Option<String>>(check: &mut Env<F>) -> Option<Option<u64>> {
    let Some(v) = check.optional(task::PR_NUMBER) else {
        return Some(None);
    };
    let read = v
        .trim()
        .trim_start_matches('#')
        .parse()
        .map_err(|_| ConfigError::Invalid {
            name: task::PR_NUMBER,
            value: v.clone(),
            reason: "not a pull request number".into(),
        });
    check.keep(read).map(Some)
}

/// `create-deploy-stack`: a merge commit (from the receiver, or from
/// trigger_sf's sweep) becomes a run.
#[derive(Debug, Clone)]
pub struct CreateDeployStackConfig {
    /// What every subcommand shares.
    pub common: Common,
    /// The merge commit to deploy (`LIVE_CI_COMMIT`).
    pub commit: String,
    /// `None` when trigger_sf's sweep launched a trunk head no webhook announced.
    pub pr_number: Option<u64>,
    /// The pull request's base branch (`LIVE_CI_BASE_REF`).
    pub base_ref: Option<String>,
    /// The pull request's head branch (`LIVE_CI_HEAD_REF`).
    pub head_ref: Option<String>,
    /// The base commit the pull request was merged onto: the range's start when
    /// it is an ancestor and no started run gives one (`LIVE_CI_BASE_SHA`).
    pub base_sha: Option<String>,
    /// The pull request's head and the webhook delivery (for tracing a run back).
    pub head_sha: Option<String>,
    /// The webhook delivery that started this task (`LIVE_CI_DELIVERY_ID`).
    pub delivery_id: Option<String>,
    /// The Lambda the new run is handed to (`TRIGGER_SF_FUNCTION_NAME`).
    pub trigger_sf_function: String,
    /// The SSM parameter mirroring the merge lock (`MERGE_LOCK_SSM_KEY`).
    pub merge_lock_param: String,
    /// Which pull requests the held lock blocks (`MERGE_LOCK_SCOPE`).
    pub merge_lock_scope: Scope,
    /// The accounts JSON, parsed by create-deploy-stack so that a bad one is
    /// reported on the merge commit.
    pub accounts_json: String,
}

impl FromLookup for CreateDeployStackConfig {
    fn read<F: Fn(&str) -> Option<String>>(check: &mut Env<F>) -> Option<Self> {
        let common = Common::read(check);
        let pr_number = pr_number(check);
        let commit = check.required(task::COMMIT);
        let trigger_sf_function = check.required("TRIGGER_SF_FUNCTION_NAME");
        let merge_lock_param = check.required("MERGE_LOCK_SSM_KEY");
        let scope = check.settings().merge_lock_scope();
        let merge_lock_scope = check.keep(scope);
        let accounts_json = check.required("ACCOUNT_PARENT_CFG");
        Some(CreateDeployStackConfig {
            common: common?,
            commit: commit?,
            pr_number: pr_number?,
            base_ref: check.optional(task::BASE_REF),
            head_ref: check.optional(task::HEAD_REF),
            base_sha: check.optional(task::BASE_SHA),
            head_sha: check.optional(task::HEAD_SHA),
            delivery_id: check.optional(task::DELIVERY_ID),
            trigger_sf_function: trigger_sf_function?,
            merge_lock_param: merge_lock_param?,
            merge_lock_scope: merge_lock_scope?,
            accounts_json: accounts_json?,
        })
    }
}

/// The phase terra-run runs; an apply names the saved plan it applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PhaseInput {
    /// Plans the unit and saves the plan.
    Plan,
    /// Applies the saved plan at `plan_artifact` (`LIVE_CI_PLAN_ARTIFACT`).
    Apply {
        /// The saved plan's address.
        plan_artifact: String,
    },
}

impl PhaseInput {
    /// The core's phase, without the plan's address.
    pub fn phase(&self) -> Phase {
        match self {
            PhaseInput::Plan => Phase::Plan,
            PhaseInput::Apply { .. } => Phase::Apply,
        }
    }
}

/// `terra-run`: one plan or apply of one unit, for the state machine.
#[derive(Debug, Clone)]
pub struct TerraRunConfig {
    /// What every subcommand shares.
    pub common: Common,
    /// The state machine's token this task answers (`LIVE_CI_TASK_TOKEN`).
    pub task_token: String,
    /// Plan or apply (`LIVE_CI_PHASE`).
    pub phase: PhaseInput,
    /// The metadb execution (one unit of one run) this task runs (`LIVE_CI_EXECUTION_ID`).
    pub execution_id: String,
    /// The state machine's copy of the record's command (the record wins).
    pub command: Option<String>,
    /// The state machine's copy of the unit's role (must repeat the record's).
    pub role_arn: Option<String>,
    /// The state machine's execution and the unit (the record is the truth).
    pub sfn_execution_arn: Option<String>,
    /// The state machine's copy of the unit's path (the record is the truth).
    pub cfg_path: Option<String>,
    /// The run-link key's parameter and the run page's address
    /// (`RUN_LINK_KEY_SSM_KEY`, `RUN_PAGE_URL`: both or neither); `main.rs`
    /// reads the key into [`TerraRunConfig::run_pages`].
    pub run_pages_param: Option<(String, String)>,
    /// Signs the statuses' links to the read-only run page; without it they
    /// link to the task's logs as before.
    pub run_pages: Option<RunPages>,
}

impl FromLookup for TerraRunConfig {
    fn read<F: Fn(&str) -> Option<String>>(check: &mut Env<F>) -> Option<Self> {
        let common = Common::read(check);
        let task_token = check.required(task_env::TASK_TOKEN);
        let phase = match check.required(task_env::PHASE) {
            None => None,
            Some(v) => {
                let read = Phase::parse(&v).map_err(|reason| ConfigError::Invalid {
                    name: task_env::PHASE,
                    value: v.clone(),
                    reason,
                });
                match check.keep(read)? {
                    Phase::Plan => Some(PhaseInput::Plan),
                    Phase::Apply => check
                        .required(task_env::PLAN_ARTIFACT)
                        .map(|plan_artifact| PhaseInput::Apply { plan_artifact }),
                }
            }
        };
        let execution_id = check.required(task_env::EXECUTION_ID);
        let run_pages_param = match (
            check.optional(RUN_LINK_KEY_SSM_KEY),
            check.optional(RUN_PAGE_URL),
        ) {
            (Some(key), Some(url)) => Some(Some((key, url))),
            (None, None) => Some(None),
            (Some(_), None) => check.keep(Err(ConfigError::Missing(RUN_PAGE_URL))),
            (None, Some(_)) => check.keep(Err(ConfigError::Missing(RUN_LINK_KEY_SSM_KEY))),
        };
        Some(TerraRunConfig {
            common: common?,
            task_token: task_token?,
            phase: phase?,
            execution_id: execution_id?,
            command: check.optional(task_env::COMMAND),
            role_arn: check.optional(task_env::ROLE_ARN),
            sfn_execution_arn: check.optional(task_env::SFN_EXECUTION_ARN),
            cfg_path: check.optional(task_env::CFG_PATH),
            run_pages_param: run_pages_param?,
            run_pages: None,
        })
    }
}

/// `pr-plan`: the plans of a pull request's affected units.
#[derive(Debug, Clone)]
pub struct PrPlanConfig {
    /// What every subcommand shares.
    pub common: Common,
    /// The pull request planned (`LIVE_CI_PR_NUMBER`).
    pub pr_number: u64,
    /// The pull request's head commit, planned (`LIVE_CI_COMMIT`).
    pub commit: String,
    /// The branch the pull request merges into, compared against (`LIVE_CI_BASE_REF`).
    pub base_ref: String,
    /// Without it, every unit plans with the task's own credentials.
    pub accounts_json: Option<String>,
    /// The receiver started this plan for a trusted head by itself
    /// (`LIVE_CI_HEAD_TRUSTED`), not for a maintainer's `/live-ci plan`.
    pub head_trusted: bool,
}

impl FromLookup for PrPlanConfig {
    fn read<F: Fn(&str) -> Option<String>>(check: &mut Env<F>) -> Option<Self> {
        let common = Common::read(check);
        let pr_number = match pr_number(check) {
            Some(None) => check.keep(Err(ConfigError::Missing(task::PR_NUMBER))),
            other => other.flatten(),
        };
        let commit = check.required(task::COMMIT);
        let base_ref = check.required(task::BASE_REF);
        Some(PrPlanConfig {
            common: common?,
            pr_number: pr_number?,
            commit: commit?,
            base_ref: base_ref?,
            accounts_json: check.optional("ACCOUNT_PARENT_CFG"),
            head_trusted: check
                .optional(task::HEAD_TRUSTED)
                .is_some_and(|v| v.trim() == "true"),
        })
    }
}

/// `drift`: a scheduled check of every unit on the trunk head (issue 32
/// item 4). Plans with the accounts' plan roles only; never a lock, never an
/// apply.
#[derive(Debug, Clone)]
pub struct DriftConfig {
    /// What every subcommand shares.
    pub common: Common,
    /// Without it, every unit plans with the task's own credentials.
    pub accounts_json: Option<String>,
}

impl FromLookup for DriftConfig {
    fn read<F: Fn(&str) -> Option<String>>(check: &mut Env<F>) -> Option<Self> {
        let common = Common::read(check);
        Some(DriftConfig {
            common: common?,
            accounts_json: check.optional("ACCOUNT_PARENT_CFG"),
        })
    }
}

/// The task's whole configuration for the subcommand it was started with,
/// including what `main` wires (the metadb, the plan bucket); built before
/// anything is done.
#[derive(Debug, Clone)]
pub enum Config {
    /// A merged pull request becomes a run: the metadb's migrator, the run's
    /// packed checkout in the plan bucket.
    CreateDeployStack {
        /// The metadb, as the migrator.
        metadb: MetadbConfig,
        /// terra-run's login secret, which this migrator fills (Data API
        /// only: a direct connection's terra-run keeps the URL it is given).
        terra_run_secret: Option<String>,
        /// The drift job's login secret, filled the same way.
        drift_secret: Option<String>,
        /// Where the run's packed checkout is stored (the plan bucket).
        plan_bucket: String,
        /// The job's own settings.
        job: CreateDeployStackConfig,
    },
    /// One plan or apply of one unit, its plans kept in the plan bucket.
    TerraRun {
        /// The metadb, as terra-run's restricted login.
        metadb: MetadbConfig,
        /// Where the saved plans and the packed checkouts are.
        plan_bucket: String,
        /// The job's own settings.
        job: TerraRunConfig,
    },
    /// pr-plan runs a pull request's code: it never opens the metadb (its
    /// role has no `rds-data` actions and no secret of it), whatever
    /// `METADB_*` the task's environment shares with the other subcommands.
    PrPlan {
        /// The job's own settings.
        job: PrPlanConfig,
    },
    /// drift logs in as its own restricted login (the module gives it that
    /// login's secret or URL, never the master's) and publishes to the
    /// notification topic when one is configured.
    Drift {
        /// The metadb, as drift's restricted login.
        metadb: MetadbConfig,
        /// The SNS topic told of drift (`NOTIFICATION_TOPIC_ARN`); none: no notice.
        notification_topic: Option<String>,
        /// The job's own settings.
        job: DriftConfig,
    },
    /// `contract` reads no environment.
    Contract,
}

impl Config {
    /// `command`'s configuration from the process environment, or every problem with it.
    pub fn from_env(command: TaskCommand) -> Result<Self, ConfigErrors> {
        Self::from_lookup(command, |k| std::env::var(k).ok())
    }

    /// The same, from any lookup (tests pass a map).
    pub fn from_lookup(
        command: TaskCommand,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigErrors> {
        let mut check = Env::new(get);
        let config = match command {
            TaskCommand::CreateDeployStack => {
                let job = CreateDeployStackConfig::read(&mut check);
                let metadb = metadb(&mut check);
                let terra_run_secret = check.optional(METADB_TERRA_RUN_SECRET_ARN);
                let drift_secret = check.optional(METADB_DRIFT_SECRET_ARN);
                let plan_bucket = check.required("PLAN_BUCKET");
                (|| {
                    Some(Config::CreateDeployStack {
                        metadb: metadb?,
                        terra_run_secret,
                        drift_secret,
                        plan_bucket: plan_bucket?,
                        job: job?,
                    })
                })()
            }
            TaskCommand::TerraRun => {
                let job = TerraRunConfig::read(&mut check);
                let metadb = metadb(&mut check);
                let plan_bucket = check.required("PLAN_BUCKET");
                (|| {
                    Some(Config::TerraRun {
                        metadb: metadb?,
                        plan_bucket: plan_bucket?,
                        job: job?,
                    })
                })()
            }
            // No metadb, even when METADB_* is set: see `Config::PrPlan`.
            TaskCommand::PrPlan => PrPlanConfig::read(&mut check).map(|job| Config::PrPlan { job }),
            TaskCommand::Drift => {
                let job = DriftConfig::read(&mut check);
                let metadb = metadb(&mut check);
                let notification_topic = check
                    .optional(live_ci_aws::NOTIFICATION_TOPIC_ENV)
                    .filter(|arn| !arn.trim().is_empty());
                (|| {
                    Some(Config::Drift {
                        metadb: metadb?,
                        notification_topic,
                        job: job?,
                    })
                })()
            }
            TaskCommand::Contract => Some(Config::Contract),
        };
        let task_token = match command {
            TaskCommand::TerraRun => check.optional(task_env::TASK_TOKEN),
            _ => None,
        };
        finish(check, config).map_err(|errors| ConfigErrors {
            task_token,
            ..errors
        })
    }

    /// The settings every subcommand shares (`None` for `contract`).
    pub fn common(&self) -> Option<&Common> {
        match self {
            Config::CreateDeployStack { job, .. } => Some(&job.common),
            Config::TerraRun { job, .. } => Some(&job.common),
            Config::PrPlan { job, .. } => Some(&job.common),
            Config::Drift { job, .. } => Some(&job.common),
            Config::Contract => None,
        }
    }
}

/// The HTTPS clone URL of `owner/name` on github.com or a GitHub Enterprise
/// server (`https://HOST/api/v3` → `https://HOST/owner/name.git`).
pub fn github_clone_url(api_url: &str, repository: &str) -> String {
    format!("{}/{repository}.git", github_web_url(api_url))
}

/// The web (and git) host of a GitHub API: github.com for api.github.com,
/// `https://HOST` for GitHub Enterprise's `https://HOST/api/v3`.
pub fn github_web_url(api_url: &str) -> String {
    let api = api_url.trim_end_matches('/');
    if api == "https://api.github.com" {
        "https://github.com".to_string()
    } else {
        api.trim_end_matches("/api/v3").to_string()
    }
}

impl Config {
    /// The private module sources this subcommand's repository code may
    /// read: create-deploy-stack, terra-run and drift run merged code;
    /// pr-plan a trusted head's, or a fork's only with `MODULE_SOURCES_FOR_FORKS`.
    pub fn module_sources(&self) -> Option<&ModuleSources> {
        let sources = self.common()?.module_sources.as_ref()?;
        match self {
            Config::CreateDeployStack { .. } | Config::TerraRun { .. } | Config::Drift { .. } => {
                Some(sources)
            }
            Config::PrPlan { job } => (job.head_trusted || sources.for_forks).then_some(sources),
            Config::Contract => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::{BTreeSet, HashMap};

    /// A policy command without `{plan_json}` is refused at start-up,
    /// naming POLICY_COMMAND and quoting the template; empty means none.
    #[test]
    fn a_policy_command_without_its_placeholder_is_refused_at_start() {
        let err = common(&[(POLICY_COMMAND, "checkov -f plan.json")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("POLICY_COMMAND"), "{err}");
        assert!(
            err.contains("lacks the placeholder {plan_json}")
                && err.contains("\"checkov -f plan.json\""),
            "{err}"
        );
        let none = common(&[(POLICY_COMMAND, "")]).unwrap();
        assert_eq!(none.policy_command, None);
        assert!(!none.policy_override, "off by default");
        let on = common(&[
            (POLICY_COMMAND, "checkov -f {plan_json}"),
            (POLICY_OVERRIDE, "true"),
        ])
        .unwrap();
        assert!(on.policy_command.is_some() && on.policy_override);
    }

    #[test]
    fn reads_nothing_outside_env_vars() {
        let read = RefCell::new(BTreeSet::new());
        // Every variable set but the GitHub App's (a token and an App at
        // once is refused) and the module sources (an App's only), so every
        // optional branch is taken; then again without METADB_URL and the
        // token, for the Data API, App and module-source branches, and with
        // the plan phase.
        let lookup = |without: &'static [&'static str], phase: &'static str| {
            let read = &read;
            move |k: &str| {
                read.borrow_mut().insert(k.to_string());
                if without.contains(&k) {
                    return None;
                }
                Some(match k {
                    "MAX_PARALLEL" | "HEARTBEAT_SECONDS" | "LIVE_CI_PR_NUMBER" => "3".to_string(),
                    "LIVE_CI_CHILD_UID" | "LIVE_CI_CHILD_GID" => "10002".to_string(),
                    "FAIL_FAST" | "SKIP_UNCHANGED" | "ALLOW_DESTROY" => "true".into(),
                    "SHOW_COMMAND" => "terraform show -json {plan_file}".into(),
                    "SCAN_TYPE" => "plan".into(),
                    "LIVE_CI_PHASE" => phase.into(),
                    "FILE_PATH_PATTERN" => r"\.tf$".into(),
                    "PLAN_COMMAND" => "terraform plan".into(),
                    "APPLY_COMMAND" => "terraform apply {plan_file}".into(),
                    "GITHUB_APP_ID" | "GITHUB_APP_INSTALLATION_ID" => "7".into(),
                    "REPO_FULL_NAME" => "acme/live".into(),
                    "MODULE_SOURCE_REPOSITORIES" => "acme/modules, acme/shared".into(),
                    "MODULE_SOURCES_GIT_URL" => "https://git.example.com".into(),
                    "MODULE_SOURCES_FOR_FORKS" => "true".into(),
                    "SSH_KNOWN_HOSTS" => "git.example.com ssh-ed25519 AAAA".into(),
                    "DEPLOY_FILTERS" => r#"["./dev/**"]"#.into(),
                    "MERGE_LOCK_SCOPE" => "units".into(),
                    POLICY_OVERRIDE => "true".into(),
                    POLICY_COMMAND => "checkov -f {plan_json}".into(),
                    _ => format!("value-of-{k}"),
                })
            }
        };
        for command in [
            TaskCommand::CreateDeployStack,
            TaskCommand::TerraRun,
            TaskCommand::PrPlan,
            TaskCommand::Drift,
        ] {
            const TOKEN: &[&str] = &[
                live_ci_github::APP_ID,
                live_ci_github::APP_INSTALLATION_ID,
                live_ci_github::APP_PRIVATE_KEY_PARAM,
                MODULE_SOURCE_REPOSITORIES,
            ];
            let config = Config::from_lookup(command, lookup(TOKEN, "apply")).unwrap();
            assert_eq!(config.common().unwrap().scan_type, ScanType::Plan);
            let data_api = Config::from_lookup(
                command,
                lookup(&["METADB_URL", live_ci_github::TOKEN_PARAM], "plan"),
            )
            .unwrap();
            assert!(matches!(
                data_api.common().unwrap().github,
                Some(GitHubAuth::App { app_id: 7, .. })
            ));
            assert_eq!(
                data_api.module_sources().map(|m| m.repositories.clone()),
                Some(vec!["acme/modules".to_string(), "acme/shared".to_string()])
            );
            if let Config::TerraRun { metadb, job, .. } = data_api {
                assert!(matches!(metadb, MetadbConfig::DataApi { .. }));
                assert_eq!(job.phase, PhaseInput::Plan);
            }
            if let Config::TerraRun { job, .. } = config {
                assert_eq!(
                    job.phase,
                    PhaseInput::Apply {
                        plan_artifact: "value-of-LIVE_CI_PLAN_ARTIFACT".into()
                    }
                );
            }
        }
        let read = read.into_inner();
        let known: BTreeSet<String> = ENV_VARS.iter().map(|s| s.to_string()).collect();
        let outside: Vec<&String> = read.difference(&known).collect();
        assert!(outside.is_empty(), "read but not in ENV_VARS: {outside:?}");
        // And ENV_VARS lists nothing that is never read.
        let unread: Vec<&String> = known.difference(&read).collect();
        assert!(unread.is_empty(), "in ENV_VARS but never read: {unread:?}");
        assert!(AWS_ACTIONS.contains(&"states:SendTaskSuccess"));
        assert!(AWS_ACTIONS.contains(&"lambda:InvokeFunction"));
    }

    /// terra-run's run pages: the key's parameter and the page's address
    /// come together or not at all.
    #[test]
    fn run_pages_need_both_the_key_and_the_address() {
        let base = [
            ("REPO_FULL_NAME", "acme/live"),
            ("METADB_URL", "postgres://x"),
            ("PLAN_BUCKET", "b"),
            ("LIVE_CI_PHASE", "plan"),
            ("LIVE_CI_TASK_TOKEN", "t"),
            ("LIVE_CI_EXECUTION_ID", "e"),
        ];
        let read = |extra: &[(&str, &str)]| {
            let pairs: Vec<(&str, &str)> = base.iter().chain(extra).copied().collect();
            Config::from_lookup(TaskCommand::TerraRun, lookup(&pairs))
        };
        let Ok(Config::TerraRun { job, .. }) = read(&[
            (RUN_LINK_KEY_SSM_KEY, "/live-ci/run-link-key"),
            (RUN_PAGE_URL, "https://pages.example/"),
        ]) else {
            panic!("terra-run with run pages")
        };
        assert_eq!(
            job.run_pages_param,
            Some((
                "/live-ci/run-link-key".to_string(),
                "https://pages.example/".to_string()
            ))
        );
        assert!(job.run_pages.is_none(), "main.rs reads the key");
        let Ok(Config::TerraRun { job, .. }) = read(&[]) else {
            panic!("terra-run without run pages")
        };
        assert_eq!(job.run_pages_param, None);
        let err = read(&[(RUN_LINK_KEY_SSM_KEY, "/k")]).unwrap_err();
        assert_eq!(err.settings.problems, [ConfigError::Missing(RUN_PAGE_URL)]);
        let err = read(&[(RUN_PAGE_URL, "https://p/")]).unwrap_err();
        assert_eq!(
            err.settings.problems,
            [ConfigError::Missing(RUN_LINK_KEY_SSM_KEY)]
        );
    }

    #[test]
    fn a_subcommand_names_every_missing_or_bad_variable_at_once() {
        let missing = |command, pairs: &[(&str, &str)]| -> Vec<ConfigError> {
            Config::from_lookup(command, lookup(pairs))
                .unwrap_err()
                .settings
                .problems
        };
        let bad = |name: &'static str, value: &str| ConfigError::Invalid {
            name,
            value: value.into(),
            reason: String::new(),
        };
        // Reasons vary; compare names and values.
        let names = |errors: Vec<ConfigError>| -> Vec<ConfigError> {
            errors
                .into_iter()
                .map(|e| match e {
                    ConfigError::Invalid { name, value, .. } => bad(name, &value),
                    other => other,
                })
                .collect()
        };
        assert_eq!(
            names(missing(
                TaskCommand::CreateDeployStack,
                &[("SCAN_TYPE", "diff"), ("MAX_PARALLEL", "0")]
            )),
            vec![
                bad("SCAN_TYPE", "diff"),
                bad("MAX_PARALLEL", "0"),
                ConfigError::Missing("REPO_CLONE_URL"),
                ConfigError::Missing("LIVE_CI_COMMIT"),
                ConfigError::Missing("TRIGGER_SF_FUNCTION_NAME"),
                ConfigError::Missing("MERGE_LOCK_SSM_KEY"),
                ConfigError::Missing("ACCOUNT_PARENT_CFG"),
                ConfigError::Missing("METADB_URL"),
                ConfigError::Missing("PLAN_BUCKET"),
            ]
        );
        let repo = ("REPO_FULL_NAME", "acme/live");
        assert_eq!(
            names(missing(
                TaskCommand::TerraRun,
                &[
                    repo,
                    ("LIVE_CI_PHASE", "apply"),
                    ("METADB_CLUSTER_ARN", "c")
                ]
            )),
            vec![
                ConfigError::Missing("LIVE_CI_TASK_TOKEN"),
                ConfigError::Missing("LIVE_CI_PLAN_ARTIFACT"),
                ConfigError::Missing("LIVE_CI_EXECUTION_ID"),
                ConfigError::Missing("METADB_SECRET_ARN"),
                ConfigError::Missing("PLAN_BUCKET"),
            ]
        );
        assert_eq!(
            names(missing(
                TaskCommand::PrPlan,
                &[repo, ("LIVE_CI_PR_NUMBER", "x1")]
            )),
            vec![
                bad("LIVE_CI_PR_NUMBER", "x1"),
                ConfigError::Missing("LIVE_CI_COMMIT"),
                ConfigError::Missing("LIVE_CI_BASE_REF"),
            ]
        );
        assert_eq!(
            names(missing(
                TaskCommand::PrPlan,
                &[repo, ("LIVE_CI_COMMIT", "c")]
            )),
            vec![
                ConfigError::Missing("LIVE_CI_PR_NUMBER"),
                ConfigError::Missing("LIVE_CI_BASE_REF"),
            ]
        );
        // A terra-run keeps its token, to answer it with the problems.
        let err = Config::from_lookup(
            TaskCommand::TerraRun,
            lookup(&[repo, ("LIVE_CI_TASK_TOKEN", "tok")]),
        )
        .unwrap_err();
        assert_eq!(err.task_token.as_deref(), Some("tok"));
        // One message naming all of them.
        let text = Config::from_lookup(TaskCommand::PrPlan, lookup(&[repo]))
            .unwrap_err()
            .to_string();
        assert_eq!(
            text,
            "environment variable LIVE_CI_PR_NUMBER is not set; \
             environment variable LIVE_CI_COMMIT is not set; \
             environment variable LIVE_CI_BASE_REF is not set"
        );
        // pr-plan needs no metadb and no plan bucket; contract reads nothing.
        let pr = Config::from_lookup(
            TaskCommand::PrPlan,
            lookup(&[
                repo,
                ("LIVE_CI_PR_NUMBER", "#7"),
                ("LIVE_CI_COMMIT", "c"),
                ("LIVE_CI_BASE_REF", "main"),
            ]),
        )
        .unwrap();
        assert!(matches!(
            pr,
            Config::PrPlan {
                job: PrPlanConfig { pr_number: 7, .. }
            }
        ));
        assert!(matches!(
            Config::from_lookup(TaskCommand::Contract, |_| None),
            Ok(Config::Contract)
        ));
    }

    #[test]
    fn the_binarys_actions_are_the_union_of_its_jobs() {
        let union: BTreeSet<&str> = JOB_AWS_ACTIONS
            .iter()
            .flat_map(|(_, a)| a.iter().copied())
            .collect();
        let all: BTreeSet<&str> = AWS_ACTIONS.iter().copied().collect();
        assert_eq!(union, all);
        assert_eq!(METADB_ACTIONS.as_slice(), live_ci_metadb::AWS_ACTIONS);
        // pr-plan runs untrusted code: no metadb, no Step Functions, no plans.
        for action in PR_PLAN_AWS_ACTIONS {
            assert!(
                !["rds-data:", "states:", "s3:", "secretsmanager:"]
                    .iter()
                    .any(|p| action.starts_with(p)),
                "{action}"
            );
        }
    }

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    /// The shared settings with a repository and `pairs`.
    fn common(pairs: &[(&str, &str)]) -> Result<Common, ConfigErrors> {
        let mut all = vec![("REPO_FULL_NAME", "acme/live")];
        all.extend_from_slice(pairs);
        Common::from_lookup(lookup(&all))
    }

    #[test]
    fn module_sources_need_an_app_and_the_installations_owner() {
        let app = [
            ("GITHUB_APP_ID", "12"),
            ("GITHUB_APP_INSTALLATION_ID", "34"),
            ("GITHUB_APP_PRIVATE_KEY_SSM_KEY", "/k"),
        ];
        let with = |extra: &[(&str, &str)], app_too: bool| {
            let mut pairs: Vec<(&str, &str)> = if app_too { app.to_vec() } else { vec![] };
            pairs.extend_from_slice(extra);
            common(&pairs)
        };
        let c = with(&[(MODULE_SOURCE_REPOSITORIES, "acme/modules")], true).unwrap();
        assert_eq!(
            c.module_sources,
            Some(ModuleSources {
                repositories: vec!["acme/modules".into()],
                git_url: "https://github.com".into(),
                for_forks: false,
            })
        );
        let ghe = with(
            &[
                (MODULE_SOURCE_REPOSITORIES, "acme/modules"),
                ("GITHUB_API_URL", "https://ghe.example.com/api/v3"),
            ],
            true,
        )
        .unwrap();
        assert_eq!(
            ghe.module_sources.unwrap().git_url,
            "https://ghe.example.com"
        );
        assert_eq!(with(&[], true).unwrap().module_sources, None);
        let err =
            |extra: &[(&str, &str)], app_too: bool| with(extra, app_too).unwrap_err().to_string();
        assert_eq!(
            err(
                &[
                    (MODULE_SOURCE_REPOSITORIES, "acme/modules"),
                    ("GITHUB_TOKEN_SSM_KEY", "/t")
                ],
                false
            ),
            "environment variable MODULE_SOURCE_REPOSITORIES=\"acme/modules\": needs a github app (GITHUB_APP_ID): a personal token is never given to repository code"
        );
        assert_eq!(
            err(&[(MODULE_SOURCE_REPOSITORIES, "acme/modules,evil/x")], true),
            "environment variable MODULE_SOURCE_REPOSITORIES=\"acme/modules,evil/x\": \"evil/x\" is not a repository of \"acme\", the owner the github app is installed on"
        );
    }

    #[test]
    fn defaults_and_bad_values_name_the_variable() {
        let c = Common::from_lookup(lookup(&[("REPO_FULL_NAME", "acme/live")])).unwrap();
        assert_eq!(c.scan_type, ScanType::Graph);
        assert_eq!(c.max_parallel, 10);
        assert_eq!(c.clone_url, "https://github.com/acme/live.git");
        assert_eq!(c.plan_command.as_str(), DEFAULT_PLAN_COMMAND);
        assert_eq!(c.show_command.as_str(), DEFAULT_SHOW_COMMAND);
        assert!(c.skip_unchanged);
        let err = common(&[("SKIP_UNCHANGED", "maybe")]).unwrap_err();
        assert!(err.to_string().contains("SKIP_UNCHANGED"), "{err}");
        let err = common(&[("SCAN_TYPE", "diff")]).unwrap_err();
        assert!(err.to_string().contains("SCAN_TYPE=\"diff\""), "{err}");
        let err = common(&[("PLAN_COMMAND", "terraform plan {dir}")]).unwrap_err();
        assert!(err.to_string().contains("\"{dir}\""), "{err}");
        // A placeholder the quoting would not protect is refused, naming the template.
        let err = common(&[("PLAN_COMMAND", "terraform plan -var=\"unit={cfg_path}\"")])
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("environment variable PLAN_COMMAND=")
                && err.contains("is inside quotes"),
            "{err}"
        );
        let err = common(&[("APPLY_COMMAND", "./apply.sh {plan_file}")])
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("environment variable APPLY_COMMAND=")
                && err.contains("no `terraform apply`"),
            "{err}"
        );
        let err = common(&[("MAX_PARALLEL", "0")]).unwrap_err();
        assert!(err.to_string().contains("MAX_PARALLEL"), "{err}");
        assert_eq!(
            github_clone_url("https://ghe.example.com/api/v3/", "a/b"),
            "https://ghe.example.com/a/b.git"
        );
    }
}
