//! The approval links' signing keys, read from Parameter Store at a cold
//! start: a key that is too short or a placeholder fails the start with an
//! error naming the parameter (never quoting the value), so no link is
//! signed or checked under a key anyone could guess.

use live_ci_core::approval::{LinkError, LinkKey, RunLinkKey};
use live_ci_core::port::ParamStore;

use crate::BootError;

/// The vote links' signing key from parameter `name` of `params`.
pub async fn link_key_from<P: ParamStore>(params: &P, name: &str) -> Result<LinkKey, BootError> {
    let secret = params.get(name).await.map_err(|e| BootError::Param {
        name: name.to_string(),
        source: Box::new(e),
    })?;
    LinkKey::new(secret.as_bytes()).map_err(|source| BootError::LinkKey {
        name: name.to_string(),
        source,
    })
}

/// The run links' signing key from parameter `name` of `params`, refused as
/// [`link_key_from`] refuses a vote-link key. A key of its own: the Lambdas
/// that mint run links hold this one and not the vote-link key.
pub async fn run_link_key_from<P: ParamStore>(
    params: &P,
    name: &str,
) -> Result<RunLinkKey, BootError> {
    let secret = params.get(name).await.map_err(|e| BootError::Param {
        name: name.to_string(),
        source: Box::new(e),
    })?;
    RunLinkKey::new(secret.as_bytes()).map_err(|e| BootError::RunLinkKey {
        name: name.to_string(),
        reason: match e {
            LinkError::ShortKey(n) => format!("is {n} bytes; at least 32 are required"),
            LinkError::PlaceholderKey => {
                "holds a placeholder, not a key; set a random value of at least 32 characters"
                    .to_string()
            }
            other => other.to_string(),
        },
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::tests::OneParam;
    /// Both vote-link Lambdas read their key through `link_key_from`: the
    /// module's old placeholder, a repeated placeholder and a short key fail
    /// the cold start naming the parameter and not the value.
    #[tokio::test]
    async fn a_placeholder_or_short_vote_link_key_fails_the_cold_start() {
        let name = "/live-ci/vote-link-key";
        for (value, reason) in [
            ("unset", "holds a placeholder"),
            ("changemechangemechangemechangeme", "holds a placeholder"),
            ("0123456789abcdef", "is 16 bytes; at least 32 are required"),
        ] {
            let err = link_key_from(&OneParam(value), name).await.unwrap_err();
            let text = err.to_string();
            assert!(
                text.starts_with(&format!("parameter {name:?}: vote-link key")),
                "{text}"
            );
            assert!(text.contains(reason), "{text}");
            assert!(!text.contains(value), "the error quotes the key: {text}");
        }
        let key = link_key_from(&OneParam("a-random-key-0123456789abcdefghijk"), name).await;
        assert!(key.is_ok());
    }

    /// The run-link key is refused like the vote-link key, naming itself.
    #[tokio::test]
    async fn a_placeholder_or_short_run_link_key_fails_the_cold_start() {
        let name = "/live-ci/run-link-key";
        for (value, reason) in [
            ("unset", "holds a placeholder"),
            ("changemechangemechangemechangeme", "holds a placeholder"),
            ("0123456789abcdef", "is 16 bytes; at least 32 are required"),
        ] {
            let err = run_link_key_from(&OneParam(value), name).await.unwrap_err();
            let text = err.to_string();
            assert!(
                text.starts_with(&format!("parameter {name:?}: run-link key {reason}")),
                "{text}"
            );
            assert!(!text.contains(value), "the error quotes the key: {text}");
        }
        let key = run_link_key_from(&OneParam("a-random-key-0123456789abcdefghijk"), name).await;
        assert!(key.is_ok());
    }
}
