//! GitHub App authentication: the App's JWT (RS256), exchanged for an
//! installation token limited to the live repository and to one job's
//! permissions, cached until shortly before it expires and fetched again then
//! or when GitHub answers 401.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use live_ci_core::port::Classify;

use crate::error::GitHubError;
use crate::permissions::Job;

/// A token is fetched again this long before its `expires_at`: a request (or
/// a clone) started with it must not outlive it.
pub const REFRESH_MARGIN: Duration = Duration::from_secs(300);

/// The JWT's `iat` lies this far in the past, for clocks that run ahead of
/// GitHub's (GitHub's own advice).
pub const JWT_BACKDATE: Duration = Duration::from_secs(60);

/// The JWT's lifetime from `iat`; GitHub refuses more than 10 minutes.
pub const JWT_LIFETIME: Duration = Duration::from_secs(600);

/// Who the App is and the key it signs with.
#[derive(Clone)]
pub struct AppCredentials {
    /// The App's id (the JWT's `iss`).
    pub app_id: u64,
    /// The installation on the repository's owner whose tokens are minted.
    pub installation_id: u64,
    /// The App's private key, PEM (PKCS#1 as GitHub hands it out, or PKCS#8).
    pub private_key_pem: String,
}

impl std::fmt::Debug for AppCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppCredentials")
            .field("app_id", &self.app_id)
            .field("installation_id", &self.installation_id)
            .field("private_key_pem", &"<redacted>")
            .finish()
    }
}

#[derive(Serialize)]
struct Claims {
    iat: u64,
    exp: u64,
    iss: String,
}

/// A token and when to stop using it.
#[derive(Clone)]
struct Cached {
    token: String,
    refresh_at: SystemTime,
}

/// The App's signing key and one job's cached installation token.
pub(crate) struct AppAuth {
    pub(crate) app_id: u64,
    pub(crate) installation_id: u64,
    key: EncodingKey,
    /// The access-token request body: the repository and the job's permissions.
    request: Value,
    cache: Mutex<Option<Cached>>,
}

impl std::fmt::Debug for AppAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppAuth")
            .field("app_id", &self.app_id)
            .field("installation_id", &self.installation_id)
            .field("request", &self.request)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct AccessToken {
    token: String,
    expires_at: String,
}

impl AppAuth {
    /// Checks the key now, so a bad one fails the start, not the first status.
    pub(crate) fn new(
        credentials: &AppCredentials,
        repository_name: &str,
        job: Job,
    ) -> Result<Self, GitHubError> {
        Self::with_request(
            credentials,
            json!({
                "repositories": [repository_name],
                "permissions": job.token_permissions(),
            }),
        )
    }

    /// The App's auth for tokens asked for with `request` (`repositories`
    /// and `permissions`), cached apart from the job's own.
    pub(crate) fn with_request(
        credentials: &AppCredentials,
        request: Value,
    ) -> Result<Self, GitHubError> {
        let key =
            EncodingKey::from_rsa_pem(credentials.private_key_pem.as_bytes()).map_err(|e| {
                GitHubError::App {
                    app_id: credentials.app_id,
                    installation_id: credentials.installation_id,
                    message: format!("the private key is not an RSA key in PEM form: {e}"),
                    retryable: false,
                }
            })?;
        Ok(AppAuth {
            app_id: credentials.app_id,
            installation_id: credentials.installation_id,
            key,
            request,
            cache: Mutex::new(None),
        })
    }

    /// The App's JWT, valid from a minute ago for [`JWT_LIFETIME`].
    pub(crate) fn jwt(&self) -> Result<String, GitHubError> {
        let now = unix(SystemTime::now());
        let iat = now.saturating_sub(JWT_BACKDATE.as_secs());
        let claims = Claims {
            iat,
            exp: iat + JWT_LIFETIME.as_secs(),
            iss: self.app_id.to_string(),
        };
        jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &self.key)
            .map_err(|e| self.error(format!("cannot sign the app's jwt: {e}")))
    }

    /// The path of the token exchange.
    pub(crate) fn access_tokens_path(&self) -> String {
        format!("/app/installations/{}/access_tokens", self.installation_id)
    }

    pub(crate) fn request_body(&self) -> &Value {
        &self.request
    }

    /// Holds the cache while `fetch` runs, so concurrent requests wait for one
    /// exchange instead of each making their own.
    pub(crate) async fn get_or_fetch<F, Fut>(&self, fetch: F) -> Result<String, GitHubError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Value, GitHubError>>,
    {
        let mut cache = self.cache.lock().await;
        if let Some(c) = cache.as_ref().filter(|c| SystemTime::now() < c.refresh_at) {
            return Ok(c.token.clone());
        }
        let answer = fetch().await?;
        let AccessToken { token, expires_at } = serde_json::from_value(answer)
            .map_err(|e| self.error(format!("github's access token answer: {e}")))?;
        let expires = time::OffsetDateTime::parse(
            &expires_at,
            &time::format_description::well_known::Rfc3339,
        )
        .map_err(|e| self.error(format!("expires_at {expires_at:?}: {e}")))?;
        let expires =
            UNIX_EPOCH + Duration::from_secs(u64::try_from(expires.unix_timestamp()).unwrap_or(0));
        let refresh_at = expires.checked_sub(REFRESH_MARGIN).unwrap_or(UNIX_EPOCH);
        *cache = Some(Cached {
            token: token.clone(),
            refresh_at,
        });
        Ok(token)
    }

    /// Forgets `token` (GitHub refused it), unless another request already
    /// replaced it.
    pub(crate) async fn invalidate(&self, token: &str) {
        let mut cache = self.cache.lock().await;
        if cache.as_ref().is_some_and(|c| c.token == token) {
            *cache = None;
        }
    }

    pub(crate) fn error(&self, message: String) -> GitHubError {
        GitHubError::App {
            app_id: self.app_id,
            installation_id: self.installation_id,
            message,
            retryable: false,
        }
    }

    /// `cause` in the App's words, as retryable as it was.
    pub(crate) fn wrap(&self, context: &str, cause: GitHubError) -> GitHubError {
        GitHubError::App {
            app_id: self.app_id,
            installation_id: self.installation_id,
            message: format!("{context}: {cause}"),
            retryable: cause.kind() == live_ci_core::port::ErrorKind::Retryable,
        }
    }
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
