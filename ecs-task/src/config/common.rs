//! The settings every subcommand shares ([`Common`]) and their readers.

use live_ci_boot::settings::Env;
use live_ci_core::path::RepoPath;
use live_ci_core::policy::PolicyCommand;
use live_ci_core::settings::ConfigError;
use live_ci_core::terraform::{
    CommandTemplate, DEFAULT_APPLY_COMMAND, DEFAULT_PLAN_COMMAND, DEFAULT_SHOW_COMMAND,
};
use live_ci_core::webhook::FilePattern;
use live_ci_github::GitHubAuth;

use super::module_sources::{ModuleSources, module_sources};
use super::names::{DEPLOY_FILTERS, POLICY_COMMAND, POLICY_OVERRIDE};
use super::read::{FromLookup, template};

/// How create-deploy-stack finds the affected units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanType {
    /// Changed files mapped onto the unit graph (no terraform run).
    Graph,
    /// `plan -detailed-exitcode` for every unit; changed ones and their dependents.
    Plan,
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
        let (github, module_sources) = github_auth(check, repository.as_deref(), &github_api_url);
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

/// The GitHub token or App, then the private module sources it may give
/// repository code (an App only).
#[allow(clippy::type_complexity)]
fn github_auth<F: Fn(&str) -> Option<String>>(
    check: &mut Env<F>,
    repository: Option<&str>,
    api_url: &str,
) -> (Option<Option<GitHubAuth>>, Option<Option<ModuleSources>>) {
    let github = GitHubAuth::from_settings(check.settings()).and_then(|auth| match auth {
        // An App's token is limited to the repository by name.
        Some(GitHubAuth::App { .. }) if repository.is_none() => {
            Err(ConfigError::Missing("REPO_FULL_NAME"))
        }
        auth => Ok(auth),
    });
    let github = check.keep(github);
    let app = matches!(github, Some(Some(GitHubAuth::App { .. })));
    (github, module_sources(check, repository, api_url, app))
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
