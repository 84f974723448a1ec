//! The task's configuration, from the environment the Terraform module sets on
//! the task definitions (shared by all subcommands) plus the per-task overrides
//! of the receiver (`live_ci_core::task::env`) and of the state machine
//! (`live_ci_workflow::payload::task_env`). Every name read is in [`ENV_VARS`].

use live_ci_core::settings::{ConfigError, Settings};
use live_ci_core::task::env as task;
use live_ci_core::terraform::{
    CommandTemplate, DEFAULT_APPLY_COMMAND, DEFAULT_PLAN_COMMAND, DEFAULT_SHOW_COMMAND, Phase,
};
use live_ci_core::webhook::FilePattern;
use live_ci_metadb::MetadbConfig;
use live_ci_workflow::payload::task_env;

/// Every environment variable [`Config::from_lookup`] may read.
pub const ENV_VARS: &[&str] = &[
    "REPO_FULL_NAME",
    "REPO_CLONE_URL",
    "GITHUB_API_URL",
    "GITHUB_TOKEN_SSM_KEY",
    "TRUNK_BRANCH",
    "FILE_PATH_PATTERN",
    "MERGE_LOCK_SSM_KEY",
    "COMMIT_STATUS_CONFIG_SSM_KEY",
    "ACCOUNT_PARENT_CFG",
    "SCAN_TYPE",
    "PLAN_COMMAND",
    "APPLY_COMMAND",
    "SHOW_COMMAND",
    "SKIP_UNCHANGED",
    crate::git_ssh::ENV,
    "MAX_PARALLEL",
    "FAIL_FAST",
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
    task::PR_NUMBER,
    task::COMMIT,
    task::BASE_REF,
    task::HEAD_REF,
    task::BASE_SHA,
    task::HEAD_SHA,
    task::DELIVERY_ID,
    task_env::PHASE,
    task_env::TASK_TOKEN,
    task_env::EXECUTION_ID,
    task_env::SFN_EXECUTION_ARN,
    task_env::CFG_PATH,
    task_env::COMMAND,
    task_env::ROLE_ARN,
    task_env::PLAN_ARTIFACT,
];

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
/// plan scan).
pub const CREATE_DEPLOY_STACK_AWS_ACTIONS: &[&str] = &[
    "ssm:GetParameter",
    "ssm:PutParameter",
    "kms:Decrypt",
    "lambda:InvokeFunction",
    "sts:AssumeRole",
    METADB_ACTIONS[0],
    METADB_ACTIONS[1],
    METADB_ACTIONS[2],
    METADB_ACTIONS[3],
    METADB_ACTIONS[4],
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

/// Each subcommand's actions, for its own task role in the Terraform module.
pub const JOB_AWS_ACTIONS: &[(&str, &[&str])] = &[
    ("pr-plan", PR_PLAN_AWS_ACTIONS),
    ("create-deploy-stack", CREATE_DEPLOY_STACK_AWS_ACTIONS),
    ("terra-run", TERRA_RUN_AWS_ACTIONS),
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
    METADB_ACTIONS[0],
    METADB_ACTIONS[1],
    METADB_ACTIONS[2],
    METADB_ACTIONS[3],
    METADB_ACTIONS[4],
];

/// How create-deploy-stack finds the affected units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanType {
    /// Changed files mapped onto the unit graph (no terraform run).
    Graph,
    /// `plan -detailed-exitcode` for every unit; changed ones and their dependents.
    Plan,
}

/// Settings every subcommand shares.
#[derive(Debug, Clone)]
pub struct Config {
    pub repository: Option<String>,
    /// What to clone: `REPO_CLONE_URL`, else the GitHub URL of the repository.
    pub clone_url: Option<String>,
    pub github_api_url: String,
    /// Without it, no commit statuses or comments are posted and clones are anonymous.
    pub github_token_param: Option<String>,
    pub trunk_branch: String,
    pub file_pattern: FilePattern,
    pub merge_lock_param: Option<String>,
    pub commit_status_config_param: Option<String>,
    /// The accounts JSON, parsed by create-deploy-stack so that a bad one is
    /// reported on the merge commit.
    pub accounts_json: Option<String>,
    pub scan_type: ScanType,
    pub plan_command: CommandTemplate,
    pub apply_command: CommandTemplate,
    /// Describes a saved plan as JSON (`terraform show -json`), run after every plan.
    pub show_command: CommandTemplate,
    /// A plan that changes nothing ends the deployment without approval or apply.
    pub skip_unchanged: bool,
    /// The deploy key for `git::ssh://` module sources (`GIT_SSH_KEY`, an ECS secret).
    pub git_ssh_key: Option<crate::git_ssh::SshKey>,
    pub max_parallel: u32,
    pub fail_fast: bool,
    pub trigger_sf_function: Option<String>,
    pub plan_bucket: Option<String>,
    pub log_group: Option<String>,
    pub log_stream_prefix: Option<String>,
    pub heartbeat_seconds: u64,
    pub region: Option<String>,
    pub ecs_metadata_uri: Option<String>,
    pub metadb: Option<MetadbConfig>,
    pub task: TaskInput,
}

/// The per-task overrides (receiver and state machine), all optional here;
/// each subcommand requires its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskInput {
    pub pr_number: Option<u64>,
    pub commit: Option<String>,
    pub base_ref: Option<String>,
    pub head_ref: Option<String>,
    pub base_sha: Option<String>,
    pub head_sha: Option<String>,
    pub delivery_id: Option<String>,
    pub phase: Option<Phase>,
    pub task_token: Option<String>,
    pub execution_id: Option<String>,
    pub sfn_execution_arn: Option<String>,
    pub cfg_path: Option<String>,
    pub command: Option<String>,
    pub role_arn: Option<String>,
    pub plan_artifact: Option<String>,
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// The same, from any lookup (tests pass a map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let env = Settings::new(get);
        let opt = |k: &'static str| env.opt(k);
        // The subcommand whose invocation receives live-ci's flags (`-out=`,
        // `-destroy -target=`, `-detailed-exitcode`, the apply's plan file).
        let template = |name: &'static str, default: &str, subcommand: &str| {
            let text = env.or(name, default);
            CommandTemplate::with_invocation(&text, subcommand).map_err(|reason| {
                ConfigError::Invalid {
                    name,
                    value: text.clone(),
                    reason,
                }
            })
        };
        let scan_type = match opt("SCAN_TYPE").as_deref() {
            None | Some("graph") => ScanType::Graph,
            Some("plan") => ScanType::Plan,
            Some(other) => {
                return Err(ConfigError::Invalid {
                    name: "SCAN_TYPE",
                    value: other.to_string(),
                    reason: "expected graph or plan".into(),
                });
            }
        };
        let max_parallel: u32 = env.number("MAX_PARALLEL", 10)?;
        if max_parallel == 0 {
            return Err(ConfigError::Invalid {
                name: "MAX_PARALLEL",
                value: "0".into(),
                reason: "must be at least 1".into(),
            });
        }
        let metadb = if ["METADB_URL", "METADB_CLUSTER_ARN"]
            .iter()
            .any(|k| opt(k).is_some())
        {
            Some(MetadbConfig::from_settings(&env)?)
        } else {
            None
        };
        let repository = opt("REPO_FULL_NAME");
        let github_api_url = env.or("GITHUB_API_URL", "https://api.github.com");
        let clone_url = opt("REPO_CLONE_URL").or_else(|| {
            repository
                .as_ref()
                .map(|r| github_clone_url(&github_api_url, r))
        });
        let pr_number = match opt(task::PR_NUMBER) {
            None => None,
            Some(v) => Some(v.trim().trim_start_matches('#').parse().map_err(|_| {
                ConfigError::Invalid {
                    name: task::PR_NUMBER,
                    value: v.clone(),
                    reason: "not a pull request number".into(),
                }
            })?),
        };
        let phase = match opt(task_env::PHASE) {
            None => None,
            Some(v) => Some(Phase::parse(&v).map_err(|reason| ConfigError::Invalid {
                name: task_env::PHASE,
                value: v.clone(),
                reason,
            })?),
        };
        Ok(Config {
            file_pattern: env.file_pattern()?,
            github_token_param: opt("GITHUB_TOKEN_SSM_KEY"),
            trunk_branch: env.or("TRUNK_BRANCH", "main"),
            merge_lock_param: opt("MERGE_LOCK_SSM_KEY"),
            commit_status_config_param: opt("COMMIT_STATUS_CONFIG_SSM_KEY"),
            accounts_json: opt("ACCOUNT_PARENT_CFG"),
            scan_type,
            plan_command: template("PLAN_COMMAND", DEFAULT_PLAN_COMMAND, "plan")?,
            apply_command: template("APPLY_COMMAND", DEFAULT_APPLY_COMMAND, "apply")?,
            show_command: template("SHOW_COMMAND", DEFAULT_SHOW_COMMAND, "show")?,
            skip_unchanged: env.flag("SKIP_UNCHANGED", true)?,
            git_ssh_key: opt(crate::git_ssh::ENV).map(crate::git_ssh::SshKey::new),
            max_parallel,
            fail_fast: env.flag("FAIL_FAST", false)?,
            trigger_sf_function: opt("TRIGGER_SF_FUNCTION_NAME"),
            plan_bucket: opt("PLAN_BUCKET"),
            log_group: opt("LOG_GROUP"),
            log_stream_prefix: opt("LOG_STREAM_PREFIX"),
            heartbeat_seconds: env.number("HEARTBEAT_SECONDS", 60)?.max(1),
            region: opt("AWS_REGION"),
            ecs_metadata_uri: opt("ECS_CONTAINER_METADATA_URI_V4"),
            metadb,
            repository,
            clone_url,
            github_api_url,
            task: TaskInput {
                pr_number,
                commit: opt(task::COMMIT),
                base_ref: opt(task::BASE_REF),
                head_ref: opt(task::HEAD_REF),
                base_sha: opt(task::BASE_SHA),
                head_sha: opt(task::HEAD_SHA),
                delivery_id: opt(task::DELIVERY_ID),
                phase,
                task_token: opt(task_env::TASK_TOKEN),
                execution_id: opt(task_env::EXECUTION_ID),
                sfn_execution_arn: opt(task_env::SFN_EXECUTION_ARN),
                cfg_path: opt(task_env::CFG_PATH),
                command: opt(task_env::COMMAND),
                role_arn: opt(task_env::ROLE_ARN),
                plan_artifact: opt(task_env::PLAN_ARTIFACT),
            },
        })
    }

    /// A setting a subcommand cannot do without.
    pub fn require<'a, T>(value: &'a Option<T>, name: &'static str) -> Result<&'a T, ConfigError> {
        value.as_ref().ok_or(ConfigError::Missing(name))
    }
}

/// The HTTPS clone URL of `owner/name` on github.com or a GitHub Enterprise
/// server (`https://HOST/api/v3` → `https://HOST/owner/name.git`).
pub fn github_clone_url(api_url: &str, repository: &str) -> String {
    let api = api_url.trim_end_matches('/');
    let host = if api == "https://api.github.com" {
        "https://github.com".to_string()
    } else {
        api.trim_end_matches("/api/v3").to_string()
    };
    format!("{host}/{repository}.git")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::{BTreeSet, HashMap};

    #[test]
    fn reads_nothing_outside_env_vars() {
        let read = RefCell::new(BTreeSet::new());
        // Every variable set, so every optional branch is taken; then again
        // without METADB_URL, for the Data API branch.
        let lookup = |without: &'static str| {
            let read = &read;
            move |k: &str| {
                read.borrow_mut().insert(k.to_string());
                if k == without {
                    return None;
                }
                Some(match k {
                    "MAX_PARALLEL" | "HEARTBEAT_SECONDS" | "LIVE_CI_PR_NUMBER" => "3".to_string(),
                    "FAIL_FAST" | "SKIP_UNCHANGED" => "true".into(),
                    "SHOW_COMMAND" => "terraform show -json {plan_file}".into(),
                    "SCAN_TYPE" => "plan".into(),
                    "LIVE_CI_PHASE" => "apply".into(),
                    "FILE_PATH_PATTERN" => r"\.tf$".into(),
                    "PLAN_COMMAND" => "terraform plan".into(),
                    "APPLY_COMMAND" => "terraform apply {plan_file}".into(),
                    _ => format!("value-of-{k}"),
                })
            }
        };
        let config = Config::from_lookup(lookup("none")).unwrap();
        assert_eq!(config.scan_type, ScanType::Plan);
        assert_eq!(config.task.phase, Some(Phase::Apply));
        let data_api = Config::from_lookup(lookup("METADB_URL")).unwrap();
        assert!(matches!(
            data_api.metadb,
            Some(MetadbConfig::DataApi { .. })
        ));
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

    #[test]
    fn defaults_and_bad_values_name_the_variable() {
        let c = Config::from_lookup(lookup(&[("REPO_FULL_NAME", "acme/live")])).unwrap();
        assert_eq!(c.scan_type, ScanType::Graph);
        assert_eq!(c.max_parallel, 10);
        assert_eq!(
            c.clone_url.as_deref(),
            Some("https://github.com/acme/live.git")
        );
        assert!(c.metadb.is_none());
        assert_eq!(c.plan_command.as_str(), DEFAULT_PLAN_COMMAND);
        assert_eq!(c.show_command.as_str(), DEFAULT_SHOW_COMMAND);
        assert!(c.skip_unchanged);
        let err = Config::from_lookup(lookup(&[("SKIP_UNCHANGED", "maybe")])).unwrap_err();
        assert!(err.to_string().contains("SKIP_UNCHANGED"), "{err}");
        let err = Config::from_lookup(lookup(&[("SCAN_TYPE", "diff")])).unwrap_err();
        assert!(err.to_string().contains("SCAN_TYPE=\"diff\""), "{err}");
        let err =
            Config::from_lookup(lookup(&[("PLAN_COMMAND", "terraform plan {dir}")])).unwrap_err();
        assert!(err.to_string().contains("\"{dir}\""), "{err}");
        // A placeholder the quoting would not protect is refused, naming the template.
        let err = Config::from_lookup(lookup(&[(
            "PLAN_COMMAND",
            "terraform plan -var=\"unit={cfg_path}\"",
        )]))
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("environment variable PLAN_COMMAND=")
                && err.contains("is inside quotes"),
            "{err}"
        );
        let err = Config::from_lookup(lookup(&[("APPLY_COMMAND", "./apply.sh {plan_file}")]))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("environment variable APPLY_COMMAND=")
                && err.contains("no `terraform apply`"),
            "{err}"
        );
        let err = Config::from_lookup(lookup(&[("MAX_PARALLEL", "0")])).unwrap_err();
        assert!(err.to_string().contains("MAX_PARALLEL"), "{err}");
        let err = Config::from_lookup(lookup(&[("METADB_CLUSTER_ARN", "arn:c")])).unwrap_err();
        assert_eq!(err, ConfigError::Missing("METADB_SECRET_ARN"));
        assert_eq!(
            github_clone_url("https://ghe.example.com/api/v3/", "a/b"),
            "https://ghe.example.com/a/b.git"
        );
    }
}
