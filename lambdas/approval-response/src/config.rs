//! The Lambda's configuration, from the environment the Terraform module sets.

use live_ci_boot::settings::{Env, SettingsError};
use live_ci_core::account::Accounts;
pub use live_ci_core::settings::ConfigError;
use live_ci_core::voter_identity::VoterLogins;
use live_ci_github::GitHubAuth;

use crate::GitHubVoting;
pub(crate) use live_ci_metadb::MetadbConfig;

/// Every environment variable [`Config::from_lookup`] reads (the metadb's
/// included), for the Terraform module's contract test.
pub const ENV_VARS: &[&str] = &[
    "VOTE_LINK_KEY_SSM_KEY",
    "RUN_LINK_KEY_SSM_KEY",
    "TASK_TOKEN_KEY_ID",
    "PLAN_BUCKET",
    "METADB_URL",
    "METADB_CLUSTER_ARN",
    "METADB_SECRET_ARN",
    "METADB_NAME",
    // Votes from the pull request (issue 29): all unset, the receiver
    // invokes nothing and the function counts mailed votes only.
    "REPO_FULL_NAME",
    "GITHUB_API_URL",
    live_ci_github::TOKEN_PARAM,
    live_ci_github::APP_ID,
    live_ci_github::APP_INSTALLATION_ID,
    live_ci_github::APP_PRIVATE_KEY_PARAM,
    "ACCOUNT_PARENT_CFG",
    // One person, one vote: `jsonencode(var.voter_github_logins)`, the mail
    // voters' GitHub logins (unset: `{}`, nobody is mapped).
    "VOTER_GITHUB_LOGINS",
];

/// The IAM actions the binary calls: the two link keys (SecureStrings) and the task
/// token's ciphertext (both `kms:Decrypt`), the decision back to Step Functions, the metadb through the Data API. A rejection is a
/// SendTaskSuccess with `"decision": "reject"`, so SendTaskFailure is not used.
pub const AWS_ACTIONS: &[&str] = &[
    "ssm:GetParameter",
    // The vote-link key is a SecureString; the task token is encrypted under
    // the task-token key, which only this role may decrypt with.
    "kms:Decrypt",
    "states:SendTaskSuccess",
    // The saved plan's sealed JSON (`<plan key>.json`) for the page; never
    // the plan file itself.
    "s3:GetObject",
    "rds-data:ExecuteStatement",
    "rds-data:BeginTransaction",
    "rds-data:CommitTransaction",
    "rds-data:RollbackTransaction",
    "secretsmanager:GetSecretValue",
];

/// What counting votes from the pull request needs: the repository, GitHub
/// (the comment, the merge commit, team membership, the reply) and each
/// account's `github_voters`.
#[derive(Debug, Clone)]
pub struct GitHubVotesConfig {
    /// `owner/name` (`REPO_FULL_NAME`): the only repository whose comments
    /// count.
    pub repository: String,
    /// GitHub's REST endpoint (`GITHUB_API_URL`, GitHub Enterprise's too).
    pub api_url: String,
    /// A token or a GitHub App, whichever the module configured.
    pub auth: GitHubAuth,
    /// `jsonencode(var.account_parent_cfg)`, as the ECS tasks get it.
    pub accounts_json: String,
    /// `jsonencode(var.voter_github_logins)` (`{}` when unset): parsed by
    /// `live_ci_core::voter_identity::VoterLogins`.
    pub voter_logins_json: String,
}

impl GitHubVotesConfig {
    /// The accounts and the voters' logins, parsed and checked against each
    /// other: a cold start with either unusable fails naming its variable.
    pub fn voting(&self) -> Result<GitHubVoting, live_ci_core::CoreError> {
        let accounts = Accounts::from_json("ACCOUNT_PARENT_CFG", &self.accounts_json)?;
        let logins = VoterLogins::from_json("VOTER_GITHUB_LOGINS", &self.voter_logins_json)?;
        logins.check_against("VOTER_GITHUB_LOGINS", &accounts)?;
        Ok(GitHubVoting {
            repository: self.repository.clone(),
            accounts,
            logins,
        })
    }
}

/// Everything `main.rs` wires.
#[derive(Debug, Clone)]
pub struct Config {
    /// The SSM parameter holding the key vote links are signed with.
    pub vote_link_key_param: String,
    /// The run-link key (read-only run pages); not the vote-link key.
    pub run_link_key_param: String,
    /// The KMS key that encrypted the task tokens (id, ARN or alias).
    pub task_token_key_id: String,
    /// The bucket terra-run saves plans (and their JSON) in.
    pub plan_bucket: String,
    /// Where approvals and votes are kept (a URL or the Data API).
    pub metadb: MetadbConfig,
    /// `None` (no `REPO_FULL_NAME`): votes come by mail only.
    pub github_votes: Option<GitHubVotesConfig>,
}

impl Config {
    /// Read from the process environment the Terraform module sets.
    pub fn from_env() -> Result<Self, SettingsError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// The same, from any lookup (tests pass a map); every problem is named.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, SettingsError> {
        let mut env = Env::new(get);
        let vote_link_key_param = env.required("VOTE_LINK_KEY_SSM_KEY");
        let run_link_key_param = env.required("RUN_LINK_KEY_SSM_KEY");
        let task_token_key_id = env.required("TASK_TOKEN_KEY_ID");
        let plan_bucket = env.required("PLAN_BUCKET");
        let metadb = env.keep(MetadbConfig::from_settings(env.settings()));
        let github_votes = match env.optional("REPO_FULL_NAME") {
            None => Some(None),
            Some(repository) => github_votes(&mut env, repository).map(Some),
        };
        let config = (|| {
            Some(Config {
                vote_link_key_param: vote_link_key_param?,
                run_link_key_param: run_link_key_param?,
                task_token_key_id: task_token_key_id?,
                plan_bucket: plan_bucket?,
                metadb: metadb?,
                github_votes: github_votes?,
            })
        })();
        env.finish(config)
    }
}

/// Votes from the pull request of `repository`: GitHub is then required.
fn github_votes<F: Fn(&str) -> Option<String>>(
    env: &mut Env<F>,
    repository: String,
) -> Option<GitHubVotesConfig> {
    let auth = match env.keep(GitHubAuth::from_settings(env.settings())) {
        Some(Some(auth)) => Some(auth),
        Some(None) => env.problem(ConfigError::Missing(live_ci_github::TOKEN_PARAM)),
        None => None,
    };
    let accounts_json = env.required("ACCOUNT_PARENT_CFG");
    Some(GitHubVotesConfig {
        repository,
        api_url: env.or("GITHUB_API_URL", "https://api.github.com"),
        auth: auth?,
        accounts_json: accounts_json?,
        voter_logins_json: env.or("VOTER_GITHUB_LOGINS", "{}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn reads_the_environment_and_nothing_outside_env_vars() {
        let seen = RefCell::new(Vec::<String>::new());
        let c = Config::from_lookup(|k| {
            seen.borrow_mut().push(k.to_string());
            match k {
                "VOTE_LINK_KEY_SSM_KEY" => Some("/live-ci/vote-link-key".into()),
                "RUN_LINK_KEY_SSM_KEY" => Some("/live-ci/run-link-key".into()),
                "TASK_TOKEN_KEY_ID" => Some("alias/live-ci-task-tokens".into()),
                "PLAN_BUCKET" => Some("live-ci-plans".into()),
                "METADB_CLUSTER_ARN" | "METADB_SECRET_ARN" | "METADB_NAME" => Some("x".into()),
                "REPO_FULL_NAME" => Some("acme/live".into()),
                "ACCOUNT_PARENT_CFG" => Some("[]".into()),
                k if k == live_ci_github::TOKEN_PARAM => Some("/live-ci/github-token".into()),
                _ => None,
            }
        })
        .unwrap();
        assert_eq!(c.vote_link_key_param, "/live-ci/vote-link-key");
        assert_eq!(c.run_link_key_param, "/live-ci/run-link-key");
        assert_eq!(c.task_token_key_id, "alias/live-ci-task-tokens");
        assert_eq!(c.plan_bucket, "live-ci-plans");
        let votes = c.github_votes.unwrap();
        assert_eq!(votes.repository, "acme/live");
        assert_eq!(votes.accounts_json, "[]");
        assert_eq!(votes.voter_logins_json, "{}");
        let seen = seen.into_inner();
        for name in &seen {
            assert!(ENV_VARS.contains(&name.as_str()), "{name} not in ENV_VARS");
        }
        for name in ENV_VARS {
            assert!(
                seen.iter().any(|s| s == name),
                "{name} listed but never read"
            );
        }
        for action in live_ci_metadb::AWS_ACTIONS {
            assert!(AWS_ACTIONS.contains(action), "{action}");
        }
    }

    /// Every missing variable is named at once, not the first only.
    #[test]
    fn every_missing_variable_is_named() {
        assert_eq!(
            Config::from_lookup(|_| None).unwrap_err().problems,
            [
                ConfigError::Missing("VOTE_LINK_KEY_SSM_KEY"),
                ConfigError::Missing("RUN_LINK_KEY_SSM_KEY"),
                ConfigError::Missing("TASK_TOKEN_KEY_ID"),
                ConfigError::Missing("PLAN_BUCKET"),
                ConfigError::Missing("METADB_CLUSTER_ARN"),
            ]
        );
        // Votes from the pull request need GitHub and the accounts.
        let err = Config::from_lookup(|k| match k {
            "REPO_FULL_NAME" => Some("acme/live".into()),
            "METADB_URL" => Some("postgres://x".into()),
            "VOTE_LINK_KEY_SSM_KEY"
            | "RUN_LINK_KEY_SSM_KEY"
            | "TASK_TOKEN_KEY_ID"
            | "PLAN_BUCKET" => Some("x".into()),
            _ => None,
        })
        .unwrap_err();
        assert_eq!(
            err.problems,
            [
                ConfigError::Missing(live_ci_github::TOKEN_PARAM),
                ConfigError::Missing("ACCOUNT_PARENT_CFG"),
            ]
        );
    }
}
