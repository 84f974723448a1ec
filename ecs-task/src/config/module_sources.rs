//! Private module sources over HTTPS: which repositories' token the
//! repository code may get, and on which git host.

use live_ci_boot::settings::Env;
use live_ci_core::settings::ConfigError;

use super::common::github_web_url;
use super::names::{MODULE_SOURCE_REPOSITORIES, MODULE_SOURCES_FOR_FORKS, MODULE_SOURCES_GIT_URL};

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
pub(super) fn module_sources<F: Fn(&str) -> Option<String>>(
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
