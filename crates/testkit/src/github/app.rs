//! The fake's GitHub App side, as strict as GitHub: the App's JWT is verified
//! against its public key (RS256, `iss` = the App id, at most ten minutes
//! between `iat` and `exp`, not expired, not issued in the future), an
//! installation token covers only the repositories and permissions it was
//! asked for and only until it expires or is revoked, and every repository
//! request made with one is checked against what it covers — the fake's own
//! table, written from GitHub's documentation, not taken from the client's.

use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::{Map, Value};

/// The GitHub App the fake trusts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeApp {
    /// The App id: a JWT's `iss` must be it.
    pub app_id: u64,
    /// The one installation of the App on the repository; tokens are minted for it only.
    pub installation_id: u64,
    /// The App's public key, PEM (`openssl rsa -pubout`).
    pub public_key_pem: String,
}

/// How much clock skew GitHub forgives a JWT's `iat` in the future.
const IAT_SKEW: u64 = 60;
/// GitHub's longest JWT lifetime.
const MAX_JWT_SECONDS: u64 = 600;

#[derive(Deserialize)]
struct Claims {
    iat: u64,
    exp: u64,
    iss: String,
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Why GitHub would refuse `jwt` as `app`'s, or `None` when it accepts it.
pub(crate) fn refuse_jwt(app: Option<&FakeApp>, jwt: &str) -> Option<String> {
    let Some(app) = app else {
        return Some("no github app is configured on the fake (FakeGitHub::trust_app)".into());
    };
    let key = match DecodingKey::from_rsa_pem(app.public_key_pem.as_bytes()) {
        Ok(key) => key,
        Err(e) => return Some(format!("the fake's app public key: {e}")),
    };
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_required_spec_claims(&["exp", "iat", "iss"]);
    validation.set_issuer(&[app.app_id.to_string()]);
    validation.leeway = 0;
    let claims = match jsonwebtoken::decode::<Claims>(jwt, &key, &validation) {
        Ok(data) => data.claims,
        Err(e) => return Some(format!("A JSON web token could not be decoded: {e}")),
    };
    if claims.iss != app.app_id.to_string() {
        return Some(format!("the jwt's iss {:?} is not the app", claims.iss));
    }
    if claims.exp <= claims.iat || claims.exp - claims.iat > MAX_JWT_SECONDS {
        return Some(format!(
            "'Expiration time' claim ('exp') is too far in the future: iat {}, exp {}",
            claims.iat, claims.exp
        ));
    }
    if claims.iat > now() + IAT_SKEW {
        return Some(format!(
            "'Issued at' claim ('iat') must be an Integer representing a time in the past: {}",
            claims.iat
        ));
    }
    None
}

/// The permission a repository request needs, by GitHub's documentation:
/// `(permission, needs write)`. `None`: a request the fake does not serve.
/// `on_issue`: the request's issue number (or comment's) is a real issue,
/// whose comments only the issues permission reaches (a pull request's
/// conversation also takes pull_requests).
pub(crate) fn needs(
    method: &str,
    segments: &[&str],
    on_issue: bool,
) -> Option<(&'static str, bool)> {
    let thread = if on_issue { "issues" } else { "pull_requests" };
    Some(match (method, segments) {
        ("POST", ["statuses", _]) => ("statuses", true),
        ("POST", ["check-runs"]) | ("PATCH", ["check-runs", _]) => ("checks", true),
        ("GET", ["commits", _, "check-runs"]) => ("checks", false),
        ("GET", ["pulls", ..]) | ("GET", ["commits", _, "pulls"]) => ("pull_requests", false),
        ("GET", ["issues", _, "comments"]) | ("GET", ["issues", "comments", _]) => (thread, false),
        ("POST", ["issues", _, "comments"]) | ("PATCH", ["issues", "comments", _]) => {
            (thread, true)
        }
        ("GET", ["issues"]) => ("issues", false),
        ("POST", ["issues"]) | ("PATCH", ["issues", _]) => ("issues", true),
        ("GET", ["collaborators", _, "permission"]) => ("metadata", false),
        ("GET", ["branches", ..]) => ("contents", false),
        _ => return None,
    })
}

/// Whether a token's `permissions` cover `permission` (write covers read).
pub(crate) fn covers(permissions: &Map<String, Value>, permission: &str, write: bool) -> bool {
    match permissions.get(permission).and_then(Value::as_str) {
        Some("write") => true,
        Some("read") => !write,
        _ => false,
    }
}
