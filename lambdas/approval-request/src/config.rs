//! The Lambda's configuration, from the environment the Terraform module sets.

use live_ci_boot::settings::{Env, SettingsError};
use live_ci_core::approval::is_web_url;
use live_ci_core::notification::is_sns_topic_arn;
use live_ci_core::port::address_problem;
pub use live_ci_core::settings::ConfigError;
pub(crate) use live_ci_metadb::MetadbConfig;

/// Every environment variable [`Config::from_lookup`] reads (the metadb's
/// included), for the Terraform module's contract test.
pub const ENV_VARS: &[&str] = &[
    "VOTE_LINK_KEY_SSM_KEY",
    "TASK_TOKEN_KEY_ID",
    "APPROVAL_URL",
    "SES_FROM_ADDRESS",
    "SES_CONFIGURATION_SET",
    "APPROVAL_TIMEOUT_SECONDS",
    "REPO_FULL_NAME",
    "GITHUB_WEB_URL",
    "METADB_URL",
    "METADB_CLUSTER_ARN",
    "METADB_SECRET_ARN",
    "METADB_NAME",
    "NOTIFICATION_TOPIC_ARN",
];

/// The IAM actions the binary calls: the key (SecureString), the task token's
/// encryption, the mail, the metadb through the Data API.
pub const AWS_ACTIONS: &[&str] = &[
    "ssm:GetParameter",
    // The vote-link key is a SecureString.
    "kms:Decrypt",
    // The task token, under the task-token key (never decrypted here).
    "kms:Encrypt",
    "ses:SendEmail",
    // A voter SES refuses for good fails the approval state at once. Never
    // SendTaskSuccess: only the voters' decision completes it.
    "states:SendTaskFailure",
    "rds-data:ExecuteStatement",
    "rds-data:BeginTransaction",
    "rds-data:CommitTransaction",
    "rds-data:RollbackTransaction",
    "secretsmanager:GetSecretValue",
    // "approval pending" on the notifications topic (KMS-encrypted), when
    // notifications are on.
    "sns:Publish",
    "kms:GenerateDataKey",
];

/// What the handler needs (no AWS specifics).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSettings {
    /// The approval_response Function URL; links are `<url>/?t=<token>`.
    pub approval_url: String,
    /// The mails' sender (`SES_FROM_ADDRESS`), a verified SES identity.
    pub from_address: String,
    /// Links expire this long after the request: the state machine's
    /// Request Approval `TimeoutSeconds`.
    pub approval_timeout_secs: u64,
    /// `owner/name`, for the pull request and commit links.
    pub repository: String,
    /// GitHub's web base URL for those links, no trailing slash (`GITHUB_WEB_URL`,
    /// default `https://github.com`).
    pub github_web_url: String,
}

/// Everything `main.rs` wires.
#[derive(Debug, Clone)]
pub struct Config {
    /// What the handler reads.
    pub settings: RequestSettings,
    /// SSM parameter holding the vote links' signing key (`VOTE_LINK_KEY_SSM_KEY`).
    pub vote_link_key_param: String,
    /// The KMS key that encrypts task tokens (id, ARN or alias).
    pub task_token_key_id: String,
    /// The metadb's connection (Data API or direct).
    pub metadb: MetadbConfig,
    /// The SES configuration set the mails name (`SES_CONFIGURATION_SET`), if any.
    pub ses_configuration_set: Option<String>,
    /// The notifications topic (`NOTIFICATION_TOPIC_ARN`); `None`: off.
    pub notification_topic_arn: Option<String>,
}

impl Config {
    /// Reads the process environment ([`ENV_VARS`]), naming every problem at once.
    pub fn from_env() -> Result<Self, SettingsError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// The same, from any lookup (tests pass a map); every problem is named.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, SettingsError> {
        let mut env = Env::new(get);
        let approval_url = env.required("APPROVAL_URL");
        let approval_url = env.valid("APPROVAL_URL", approval_url, |url| {
            (!is_web_url(url) || url.contains(['?', '#']))
                .then(|| "expected an http(s) URL without query or fragment".into())
        });
        let from_address = env.required("SES_FROM_ADDRESS");
        let from_address = env.valid("SES_FROM_ADDRESS", from_address, |address| {
            address_problem(address).map(str::to_string)
        });
        let ses_configuration_set = env.optional_valid("SES_CONFIGURATION_SET", |set| {
            (set.is_empty()
                || set.len() > 64
                || !set
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .then(|| {
                "expected an SES configuration set name: 1 to 64 letters, digits, '_' or '-'".into()
            })
        });
        let approval_timeout_secs = approval_timeout(&mut env);
        let repository = env.required("REPO_FULL_NAME");
        let repository = env.valid("REPO_FULL_NAME", repository, |r| {
            (r.split('/').count() != 2 || r.split('/').any(str::is_empty))
                .then(|| "expected owner/name".into())
        });
        let github_web_url = Some(env.or("GITHUB_WEB_URL", "https://github.com"));
        let github_web_url = env.valid("GITHUB_WEB_URL", github_web_url, |url| {
            (!is_web_url(url)).then(|| "expected an http(s) URL".into())
        });
        let notification_topic_arn = env.optional_valid("NOTIFICATION_TOPIC_ARN", |arn| {
            (!is_sns_topic_arn(arn)).then(|| {
                "expected an sns topic arn (arn:<partition>:sns:<region>:<account>:<name>)".into()
            })
        });
        let vote_link_key_param = env.required("VOTE_LINK_KEY_SSM_KEY");
        let task_token_key_id = env.required("TASK_TOKEN_KEY_ID");
        let metadb = env.keep(MetadbConfig::from_settings(env.settings()));
        let config = (|| {
            Some(Config {
                settings: RequestSettings {
                    approval_url: approval_url?,
                    from_address: from_address?,
                    approval_timeout_secs: approval_timeout_secs?,
                    repository: repository?,
                    github_web_url: github_web_url?.trim_end_matches('/').to_string(),
                },
                vote_link_key_param: vote_link_key_param?,
                task_token_key_id: task_token_key_id?,
                metadb: metadb?,
                ses_configuration_set: ses_configuration_set?,
                notification_topic_arn: notification_topic_arn?,
            })
        })();
        env.finish(config)
    }
}

/// `APPROVAL_TIMEOUT_SECONDS`, required and at least 1: the state machine's
/// approval timeout.
fn approval_timeout<F: Fn(&str) -> Option<String>>(env: &mut Env<F>) -> Option<u64> {
    const NAME: &str = "APPROVAL_TIMEOUT_SECONDS";
    let Some(value) = env.optional(NAME) else {
        return env.problem(ConfigError::Missing(NAME));
    };
    match env.number(NAME, 0u64)? {
        0 => env.problem(ConfigError::Invalid {
            name: NAME,
            value,
            reason: "must be at least 1 (the state machine's approval timeout)".into(),
        }),
        secs => Some(secs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::HashMap;

    const GOOD: &[(&str, &str)] = &[
        ("VOTE_LINK_KEY_SSM_KEY", "/live-ci/vote-link-key"),
        ("TASK_TOKEN_KEY_ID", "alias/live-ci-task-tokens"),
        ("APPROVAL_URL", "https://abc.lambda-url.us-west-2.on.aws/"),
        ("SES_FROM_ADDRESS", "live-ci@example.com"),
        ("APPROVAL_TIMEOUT_SECONDS", "86400"),
        ("REPO_FULL_NAME", "acme/infrastructure-live"),
        ("METADB_URL", "postgres://x"),
    ];

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    fn with(overrides: &[(&str, &str)]) -> Result<Config, SettingsError> {
        let mut pairs: Vec<(&str, &str)> = GOOD
            .iter()
            .filter(|(k, _)| !overrides.iter().any(|(o, _)| o == k))
            .copied()
            .collect();
        pairs.extend(overrides.iter().filter(|(_, v)| !v.is_empty()).copied());
        Config::from_lookup(lookup(&pairs))
    }

    #[test]
    fn reads_the_environment() {
        let c = with(&[]).unwrap();
        assert_eq!(c.settings.approval_timeout_secs, 86_400);
        assert_eq!(c.settings.github_web_url, "https://github.com");
        assert_eq!(c.vote_link_key_param, "/live-ci/vote-link-key");
        assert_eq!(c.task_token_key_id, "alias/live-ci-task-tokens");
        assert_eq!(
            c.metadb,
            MetadbConfig::Postgres {
                url: "postgres://x".into()
            }
        );
        let c = with(&[("GITHUB_WEB_URL", "https://github.example.com/")]).unwrap();
        assert_eq!(c.settings.github_web_url, "https://github.example.com");
        assert_eq!(c.ses_configuration_set, None);
        let c = with(&[("SES_CONFIGURATION_SET", "live-ci_mail-1")]).unwrap();
        assert_eq!(c.ses_configuration_set.as_deref(), Some("live-ci_mail-1"));
    }

    #[test]
    fn bad_values_are_named_and_quoted() {
        for (name, value) in [
            ("APPROVAL_URL", "ftp://x"),
            ("APPROVAL_URL", "https://x/?a=b"),
            ("SES_FROM_ADDRESS", "not-an-address"),
            ("APPROVAL_TIMEOUT_SECONDS", "0"),
            ("APPROVAL_TIMEOUT_SECONDS", "a day"),
            ("REPO_FULL_NAME", "acme"),
            ("GITHUB_WEB_URL", "github.com"),
            ("SES_CONFIGURATION_SET", "has space"),
            ("SES_CONFIGURATION_SET", "a/b"),
        ] {
            let err = with(&[(name, value)]).unwrap_err().to_string();
            assert!(
                err.contains(name) && err.contains(&format!("{value:?}")),
                "{err}"
            );
        }
        for name in [
            "VOTE_LINK_KEY_SSM_KEY",
            "TASK_TOKEN_KEY_ID",
            "APPROVAL_URL",
            "SES_FROM_ADDRESS",
            "APPROVAL_TIMEOUT_SECONDS",
            "REPO_FULL_NAME",
        ] {
            assert_eq!(
                with(&[(name, "")]).unwrap_err().problems,
                [ConfigError::Missing(name)]
            );
        }
    }

    /// Every problem is named at once, not the first only.
    #[test]
    fn two_missing_variables_are_both_named() {
        let err = with(&[("VOTE_LINK_KEY_SSM_KEY", ""), ("APPROVAL_URL", "")]).unwrap_err();
        assert_eq!(
            err.problems,
            [
                ConfigError::Missing("APPROVAL_URL"),
                ConfigError::Missing("VOTE_LINK_KEY_SSM_KEY")
            ]
        );
        assert_eq!(
            err.to_string(),
            "environment variable APPROVAL_URL is not set; \
             environment variable VOTE_LINK_KEY_SSM_KEY is not set"
        );
    }

    #[test]
    fn reads_no_variable_outside_env_vars() {
        let seen = RefCell::new(Vec::<String>::new());
        let _ = Config::from_lookup(|k| {
            seen.borrow_mut().push(k.to_string());
            lookup(GOOD)(k)
        });
        // Without METADB_URL the Data API variables are read too.
        let _ = Config::from_lookup(|k| {
            seen.borrow_mut().push(k.to_string());
            match k {
                "METADB_URL" => None,
                "METADB_CLUSTER_ARN" | "METADB_SECRET_ARN" | "METADB_NAME" => Some("x".into()),
                _ => lookup(GOOD)(k),
            }
        });
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
        for name in live_ci_metadb::ENV_VARS {
            assert!(ENV_VARS.contains(name), "{name}");
        }
        for action in live_ci_metadb::AWS_ACTIONS {
            assert!(AWS_ACTIONS.contains(action), "{action}");
        }
    }
}
