//! The one place a binary's GitHub client is built: a token or a GitHub App
//! (`GitHubAuth`, read from the environment), the secret read from Parameter
//! Store, statuses as check runs with an App (`live_ci_github::connect`). The
//! Lambdas take the client; the task takes the token its clones use too.

use live_ci_core::port::ParamStore;
use live_ci_github::{Credentials, GitHubAuth, GitHubClient, Job};

use crate::BootError;

/// `job`'s GitHub client of `repository`, authenticated as `auth` says.
pub async fn connect<P: ParamStore>(
    auth: &GitHubAuth,
    params: &P,
    api_url: &str,
    repository: &str,
    job: Job,
) -> Result<GitHubClient, BootError> {
    Ok(live_ci_github::connect(auth, params, api_url, repository, job).await?)
}

/// The task's GitHub client and the token its clones use: the static token,
/// or the job's installation token. Without credentials there is neither
/// (statuses go nowhere, clones are anonymous); without a repository a
/// static token only clones, and an App (whose token is limited to the
/// repository by name) is refused.
pub async fn connect_for_clones<P: ParamStore>(
    auth: Option<&GitHubAuth>,
    params: &P,
    api_url: &str,
    repository: Option<&str>,
    job: Job,
) -> Result<(Option<GitHubClient>, Option<String>), BootError> {
    let Some(auth) = auth else {
        return Ok((None, None));
    };
    let Some(repository) = repository else {
        return match auth.credentials(params).await? {
            Credentials::Token(token) => Ok((None, Some(token))),
            Credentials::App(_) => Err(BootError::AppWithoutRepository),
        };
    };
    let github = live_ci_github::connect(auth, params, api_url, repository, job)
        .await
        .map_err(BootError::Connect)?;
    // Not fatal: a terra-run may unpack the run's packed checkout and never
    // clone, and statuses are advisory; a clone without it fails by itself.
    let token = match github.git_token().await {
        Ok(token) => Some(token),
        Err(e) => {
            tracing::warn!(error = %e, "no github token for cloning");
            None
        }
    };
    Ok((Some(github), token))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::tests::OneParam;

    const API: &str = "http://127.0.0.1:9";

    fn token() -> GitHubAuth {
        GitHubAuth::Token {
            param: "/live-ci/github-token".into(),
        }
    }

    fn app() -> GitHubAuth {
        GitHubAuth::App {
            app_id: 1,
            installation_id: 2,
            private_key_param: "/live-ci/github-app-key".into(),
        }
    }

    /// No credentials: no client and anonymous clones, nothing read.
    #[tokio::test]
    async fn without_credentials_there_is_no_client_and_no_token() {
        let (github, token) =
            connect_for_clones(None, &OneParam("t"), API, Some("a/b"), Job::TerraRun)
                .await
                .unwrap();
        assert!(github.is_none() && token.is_none());
    }

    /// Without a repository a token only clones, and an App is refused.
    #[tokio::test]
    async fn without_a_repository_a_token_only_clones_and_an_app_is_refused() {
        let (github, clone) =
            connect_for_clones(Some(&token()), &OneParam("ghp_x"), API, None, Job::PrPlan)
                .await
                .unwrap();
        assert!(github.is_none());
        assert_eq!(clone.as_deref(), Some("ghp_x"));
        let err = connect_for_clones(Some(&app()), &OneParam("pem"), API, None, Job::PrPlan)
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "a github app needs REPO_FULL_NAME");
    }

    /// With a repository a token gives the client and clones with itself.
    #[tokio::test]
    async fn a_token_with_a_repository_gives_the_client_and_the_clone_token() {
        let (github, clone) = connect_for_clones(
            Some(&token()),
            &OneParam("ghp_x"),
            API,
            Some("acme/live"),
            Job::TerraRun,
        )
        .await
        .unwrap();
        assert!(github.is_some());
        assert_eq!(clone.as_deref(), Some("ghp_x"));
    }
}
