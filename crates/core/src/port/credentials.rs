//! The role-assumption port (AWS STS in production): the ECS task assumes the
//! unit's account role itself and hands the child process only the resulting
//! temporary credentials, never its own task-role credentials.

use std::fmt;
use std::future::Future;

use crate::deploy::UnixMillis;

/// Temporary credentials of an assumed role.
#[derive(Clone, PartialEq, Eq)]
pub struct TemporaryCredentials {
    /// The role these credentials act as (for messages and logs).
    pub role_arn: String,
    /// The AWS access key id.
    pub access_key_id: String,
    /// The secret key; never logged.
    pub secret_access_key: String,
    /// The STS session token; never logged.
    pub session_token: String,
    /// When the credentials stop working; `None` when STS did not say.
    pub expiration: Option<UnixMillis>,
}

// The secret parts never reach a log line through `{:?}`.
impl fmt::Debug for TemporaryCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TemporaryCredentials")
            .field("role_arn", &self.role_arn)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field("session_token", &"<redacted>")
            .field("expiration", &self.expiration)
            .finish()
    }
}

/// Assumes IAM roles for a named session.
pub trait RoleAssumer: Send + Sync {
    /// The adapter's error, classified retryable or permanent.
    type Error: crate::port::Classify;

    /// Temporary credentials of `role_arn` for a session named `session_name`
    /// ([`session_name`]), which CloudTrail shows.
    fn assume_role(
        &self,
        role_arn: &str,
        session_name: &str,
    ) -> impl Future<Output = Result<TemporaryCredentials, Self::Error>> + Send;
}

/// A session name STS accepts (2–64 of `[\w+=,.@-]`) derived from `label`,
/// so CloudTrail in the target account names the execution that acted.
pub fn session_name(label: &str) -> String {
    let mut name: String = format!("live-ci-{label}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_+=,.@-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    name.truncate(64);
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names_are_valid_for_sts() {
        assert_eq!(session_name("run-7-dev-app"), "live-ci-run-7-dev-app");
        assert_eq!(session_name("a/b c"), "live-ci-a-b-c");
        let long = session_name(&"x".repeat(100));
        assert_eq!(long.len(), 64);
    }

    #[test]
    fn debug_hides_the_secrets() {
        let c = TemporaryCredentials {
            role_arn: "arn:aws:iam::1:role/plan".into(),
            access_key_id: "ASIAKEY".into(),
            secret_access_key: "s3cr3t".into(),
            session_token: "tok3n".into(),
            expiration: None,
        };
        let shown = format!("{c:?}");
        assert!(shown.contains("ASIAKEY") && shown.contains("arn:aws:iam::1:role/plan"));
        assert!(
            !shown.contains("s3cr3t") && !shown.contains("tok3n"),
            "{shown}"
        );
    }
}
