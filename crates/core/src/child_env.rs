//! The environment of the plan/apply child process, built from an allow-list:
//! the child runs the pull request's or the merged commit's code (terraform
//! `external` data sources, terragrunt `run_cmd`, custom providers), so it gets
//! what terraform needs — the assumed role's temporary credentials, the region,
//! `TF_*` / `TG_*`, `PATH`, `HOME`, the plugin cache — and nothing of the task's
//! own power: not its GitHub token, metadb settings, task token, accounts JSON
//! or container credentials.

use crate::port::TemporaryCredentials;

/// Variables passed through from the task's environment by exact name: the
/// basics a shell and terraform need, none of them a secret.
pub const INHERITED: &[&str] = &[
    "PATH",
    "HOME",
    "TMPDIR",
    "LANG",
    "LC_ALL",
    "TZ",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
];

/// Variables passed through by prefix: terraform's (`TF_CLI_CONFIG_FILE`,
/// `TF_PLUGIN_CACHE_DIR`, `TF_VAR_*`, …), terragrunt's, and the SDK endpoint
/// overrides (`AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_<SERVICE>`) that point
/// providers at LocalStack in the local cloud.
pub const INHERITED_PREFIXES: &[&str] = &["TF_", "TG_", "AWS_ENDPOINT_URL"];

/// Names never passed, even if a prefix above matched them: a defence against
/// an operator naming a secret like a terraform variable.
pub const NEVER: &[&str] = &[
    "ACCOUNT_PARENT_CFG",
    "GITHUB_TOKEN_SSM_KEY",
    "LIVE_CI_TASK_TOKEN",
    "METADB_URL",
    "METADB_CLUSTER_ARN",
    "METADB_SECRET_ARN",
    "METADB_NAME",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
];

/// Whether the task's variable `name` may reach the child.
pub fn inherits(name: &str) -> bool {
    if NEVER.contains(&name) || name.starts_with("AWS_CONTAINER_") {
        return false;
    }
    INHERITED.contains(&name) || INHERITED_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The child's whole environment: the allowed part of `parent`, the role's
/// temporary credentials (when a role was assumed), then `extra` (the
/// `LIVE_CI_*` facts the templates may use), later entries winning.
pub fn child_env(
    parent: impl IntoIterator<Item = (String, String)>,
    credentials: Option<&TemporaryCredentials>,
    extra: &[(String, String)],
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = parent.into_iter().filter(|(k, _)| inherits(k)).collect();
    if let Some(c) = credentials {
        env.push(("AWS_ACCESS_KEY_ID".into(), c.access_key_id.clone()));
        env.push(("AWS_SECRET_ACCESS_KEY".into(), c.secret_access_key.clone()));
        env.push(("AWS_SESSION_TOKEN".into(), c.session_token.clone()));
    }
    env.extend(extra.iter().cloned());
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(names: &[&str]) -> Vec<(String, String)> {
        names
            .iter()
            .map(|n| (n.to_string(), format!("value-of-{n}")))
            .collect()
    }

    #[test]
    fn keeps_what_terraform_needs_and_drops_the_tasks_secrets() {
        let parent = pairs(&[
            "PATH",
            "HOME",
            "TF_PLUGIN_CACHE_DIR",
            "TF_CLI_CONFIG_FILE",
            "TG_NON_INTERACTIVE",
            "AWS_REGION",
            "AWS_ENDPOINT_URL",
            "GITHUB_TOKEN_SSM_KEY",
            "METADB_URL",
            "METADB_SECRET_ARN",
            "LIVE_CI_TASK_TOKEN",
            "ACCOUNT_PARENT_CFG",
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "REPO_FULL_NAME",
            "PLAN_BUCKET",
        ]);
        let creds = TemporaryCredentials {
            role_arn: "arn:aws:iam::1:role/plan".into(),
            access_key_id: "ASIAROLE".into(),
            secret_access_key: "role-secret".into(),
            session_token: "role-token".into(),
            expiration: None,
        };
        let extra = vec![("LIVE_CI_CFG_PATH".to_string(), "dev/app".to_string())];
        let env = child_env(parent, Some(&creds), &extra);
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "PATH",
                "HOME",
                "TF_PLUGIN_CACHE_DIR",
                "TF_CLI_CONFIG_FILE",
                "TG_NON_INTERACTIVE",
                "AWS_REGION",
                "AWS_ENDPOINT_URL",
                "AWS_ACCESS_KEY_ID",
                "AWS_SECRET_ACCESS_KEY",
                "AWS_SESSION_TOKEN",
                "LIVE_CI_CFG_PATH",
            ]
        );
        // The task's own keys are replaced by the role's, never passed.
        assert!(env.contains(&("AWS_ACCESS_KEY_ID".into(), "ASIAROLE".into())));
        assert!(!env.iter().any(|(_, v)| v == "value-of-AWS_ACCESS_KEY_ID"));
        // Without a role the child gets no credentials at all.
        let bare = child_env(pairs(&["AWS_SECRET_ACCESS_KEY", "PATH"]), None, &[]);
        assert_eq!(bare, pairs(&["PATH"]));
    }

    #[test]
    fn never_wins_over_the_prefixes() {
        assert!(inherits("TF_VAR_region"));
        assert!(inherits("AWS_ENDPOINT_URL_S3"));
        assert!(!inherits("AWS_CONTAINER_ANYTHING"));
        assert!(!inherits("GITHUB_TOKEN"));
        assert!(!inherits("LIVE_CI_TASK_TOKEN"));
    }
}
