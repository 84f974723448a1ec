//! The Lambda's configuration, from the environment the Terraform module sets.

use live_ci_core::approval::is_web_url;
use live_ci_core::notification::is_sns_topic_arn;
use live_ci_core::port::address_problem;
pub use live_ci_core::settings::ConfigError;
use live_ci_core::settings::Settings;
pub use live_ci_metadb::MetadbConfig;

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
    pub from_address: String,
    /// Links expire this long after the request: the state machine's
    /// Request Approval `TimeoutSeconds`.
    pub approval_timeout_secs: u64,
    /// `owner/name`, for the pull request and commit links.
    pub repository: String,
    pub github_web_url: String,
}

/// Everything `main.rs` wires.
#[derive(Debug, Clone)]
pub struct Config {
    pub settings: RequestSettings,
    pub vote_link_key_param: String,
    /// The KMS key that encrypts task tokens (id, ARN or alias).
    pub task_token_key_id: String,
    pub metadb: MetadbConfig,
    /// The SES configuration set the mails name (`SES_CONFIGURATION_SET`), if any.
    pub ses_configuration_set: Option<String>,
    /// The notifications topic (`NOTIFICATION_TOPIC_ARN`); `None`: off.
    pub notification_topic_arn: Option<String>,
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// The same, from any lookup (tests pass a map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let env = Settings::new(get);
        let invalid = |name: &'static str, value: &str, reason: &str| ConfigError::Invalid {
            name,
            value: value.to_string(),
            reason: reason.to_string(),
        };
        let approval_url = env.req("APPROVAL_URL")?;
        if !is_web_url(&approval_url) || approval_url.contains(['?', '#']) {
            return Err(invalid(
                "APPROVAL_URL",
                &approval_url,
                "expected an http(s) URL without query or fragment",
            ));
        }
        let from_address = env.req("SES_FROM_ADDRESS")?;
        if let Some(problem) = address_problem(&from_address) {
            return Err(invalid("SES_FROM_ADDRESS", &from_address, problem));
        }
        let ses_configuration_set = env.opt("SES_CONFIGURATION_SET");
        if let Some(set) = &ses_configuration_set
            && (set.is_empty()
                || set.len() > 64
                || !set
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        {
            return Err(invalid(
                "SES_CONFIGURATION_SET",
                set,
                "expected an SES configuration set name: 1 to 64 letters, digits, '_' or '-'",
            ));
        }
        let approval_timeout_secs = env.number("APPROVAL_TIMEOUT_SECONDS", 0u64)?;
        if approval_timeout_secs == 0 {
            return match env.opt("APPROVAL_TIMEOUT_SECONDS") {
                None => Err(ConfigError::Missing("APPROVAL_TIMEOUT_SECONDS")),
                Some(v) => Err(invalid(
                    "APPROVAL_TIMEOUT_SECONDS",
                    &v,
                    "must be at least 1 (the state machine's approval timeout)",
                )),
            };
        }
        let repository = env.req("REPO_FULL_NAME")?;
        if repository.split('/').count() != 2 || repository.split('/').any(str::is_empty) {
            return Err(invalid(
                "REPO_FULL_NAME",
                &repository,
                "expected owner/name",
            ));
        }
        let github_web_url = env.or("GITHUB_WEB_URL", "https://github.com");
        if !is_web_url(&github_web_url) {
            return Err(invalid(
                "GITHUB_WEB_URL",
                &github_web_url,
                "expected an http(s) URL",
            ));
        }
        let notification_topic_arn = env.opt("NOTIFICATION_TOPIC_ARN");
        if let Some(arn) = &notification_topic_arn
            && !is_sns_topic_arn(arn)
        {
            return Err(invalid(
                "NOTIFICATION_TOPIC_ARN",
                arn,
                "expected an sns topic arn (arn:<partition>:sns:<region>:<account>:<name>)",
            ));
        }
        Ok(Config {
            settings: RequestSettings {
                approval_url,
                from_address,
                approval_timeout_secs,
                repository,
                github_web_url: github_web_url.trim_end_matches('/').to_string(),
            },
            vote_link_key_param: env.req("VOTE_LINK_KEY_SSM_KEY")?,
            task_token_key_id: env.req("TASK_TOKEN_KEY_ID")?,
            metadb: MetadbConfig::from_settings(&env)?,
            ses_configuration_set,
            notification_topic_arn,
        })
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

    fn with(overrides: &[(&str, &str)]) -> Result<Config, ConfigError> {
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
            assert_eq!(with(&[(name, "")]).unwrap_err(), ConfigError::Missing(name));
        }
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
