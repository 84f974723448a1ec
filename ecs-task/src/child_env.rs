//! The environment of the plan/apply child process, built from an allow-list:
//! the child runs the pull request's or the merged commit's code (terraform
//! `external` data sources, terragrunt `run_cmd`, custom providers), so it gets
//! what terraform needs — the assumed role's temporary credentials, the region,
//! `TF_*` / `TG_*`, `PATH`, `HOME`, the plugin cache — and nothing of the task's
//! own power: not its GitHub token, metadb settings, task token, accounts JSON
//! or container credentials.

use live_ci_core::port::TemporaryCredentials;

/// Variables passed through from the task's environment by exact name: the
/// basics a shell and terraform need, none of them a secret.
pub(crate) const INHERITED: &[&str] = &[
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
pub(crate) const INHERITED_PREFIXES: &[&str] = &["TF_", "TG_", "AWS_ENDPOINT_URL"];

/// Names never passed, even if a prefix above matched them: a defence against
/// an operator naming a secret like a terraform variable.
pub(crate) const NEVER: &[&str] = &[
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

/// The task's variable (set by the module's `child_environment_passthrough`)
/// listing more names the child may get: comma-separated, a trailing `*` making
/// an entry a prefix (`HTTPS_PROXY,NO_PROXY,DATADOG_*`). It is for what
/// terraform's providers need beyond AWS (proxies, Datadog, Cloudflare, Vault
/// tokens…), which the allow-list alone would drop; everything it names is
/// readable by the repository's code. It never reaches the child itself.
pub const PASSTHROUGH_ENV: &str = "CHILD_ENV_PASSTHROUGH";

/// Whether `name` may never be passed whatever the passthrough says: live-ci's
/// own settings and secrets, and any credentials but the assumed role's.
fn forbidden(name: &str) -> bool {
    NEVER.contains(&name)
        || name == PASSTHROUGH_ENV
        || name.starts_with("AWS_CONTAINER_")
        || name.starts_with("LIVE_CI_")
        || name.starts_with("GITHUB_")
        || name.starts_with("GIT_SSH")
        || name.starts_with("ECS_")
}

/// The names and prefixes [`PASSTHROUGH_ENV`] adds to the allow-list. Entries
/// naming what is [`forbidden`] are dropped here too (the module refuses them
/// first, naming them), so no spelling of the list widens what live-ci keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Passthrough {
    names: Vec<String>,
    prefixes: Vec<String>,
}

impl Passthrough {
    /// Parses `HTTPS_PROXY,NO_PROXY,DATADOG_*`; blanks are ignored.
    pub fn parse(spec: &str) -> Self {
        let mut out = Self::default();
        for entry in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            match entry.strip_suffix('*') {
                Some(prefix) if !prefix.is_empty() && !forbidden(prefix) => {
                    out.prefixes.push(prefix.to_string())
                }
                Some(_) => {}
                None if !forbidden(entry) => out.names.push(entry.to_string()),
                None => {}
            }
        }
        out
    }

    fn allows(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
            || self.prefixes.iter().any(|p| name.starts_with(p.as_str()))
    }
}

/// Whether the task's variable `name` may reach the child, with the names and
/// prefixes of `passthrough` allowed too.
pub(crate) fn inherits_with(name: &str, passthrough: &Passthrough) -> bool {
    if forbidden(name) {
        return false;
    }
    INHERITED.contains(&name)
        || INHERITED_PREFIXES.iter().any(|p| name.starts_with(p))
        || passthrough.allows(name)
}

/// The child's whole environment: the allowed part of `parent` (with the
/// names its [`PASSTHROUGH_ENV`] adds), the role's temporary credentials (when
/// a role was assumed), then `extra` (the `LIVE_CI_*` facts the templates may
/// use), later entries winning.
pub fn child_env(
    parent: impl IntoIterator<Item = (String, String)>,
    credentials: Option<&TemporaryCredentials>,
    extra: &[(String, String)],
) -> Vec<(String, String)> {
    let parent: Vec<(String, String)> = parent.into_iter().collect();
    let passthrough = parent
        .iter()
        .find(|(k, _)| k == PASSTHROUGH_ENV)
        .map(|(_, v)| Passthrough::parse(v))
        .unwrap_or_default();
    let mut env: Vec<(String, String)> = parent
        .into_iter()
        .filter(|(k, _)| inherits_with(k, &passthrough))
        .collect();
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

    /// What reaches a child with no passthrough configured.
    fn inherits(name: &str) -> bool {
        inherits_with(name, &Passthrough::default())
    }

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
    fn the_passthrough_adds_names_and_prefixes_but_never_livecis_own() {
        let parent = pairs(&[
            "PATH",
            "HTTPS_PROXY",
            "NO_PROXY",
            "DATADOG_API_KEY",
            "DATADOG_APP_KEY",
            "CLOUDFLARE_API_TOKEN",
            "GIT_SSH_KEY",
            "LIVE_CI_TASK_TOKEN",
            "METADB_SECRET_ARN",
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_APP_PRIVATE_KEY_SSM_PARAMETER",
        ]);
        let mut with_spec = parent.clone();
        with_spec.push((
            PASSTHROUGH_ENV.to_string(),
            " HTTPS_PROXY, NO_PROXY ,DATADOG_*,GIT_SSH_KEY,LIVE_CI_*,METADB_SECRET_ARN,AWS_*,GITHUB_*,*,,".to_string(),
        ));
        let names = |env: Vec<(String, String)>| -> Vec<String> {
            env.into_iter().map(|(k, _)| k).collect()
        };
        assert_eq!(
            names(child_env(with_spec, None, &[])),
            [
                "PATH",
                "HTTPS_PROXY",
                "NO_PROXY",
                "DATADOG_API_KEY",
                "DATADOG_APP_KEY"
            ],
            "the listed names and prefixes pass; live-ci's own, other credentials, a bare * and the list itself do not"
        );
        // Without the list (the default) nothing beyond the allow-list passes.
        assert_eq!(names(child_env(parent, None, &[])), ["PATH"]);
        // AWS_* as a prefix still cannot pass the task's keys or container credentials.
        let aws = Passthrough::parse("AWS_*");
        assert!(!inherits_with("AWS_SECRET_ACCESS_KEY", &aws));
        assert!(!inherits_with("AWS_CONTAINER_CREDENTIALS_FULL_URI", &aws));
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
