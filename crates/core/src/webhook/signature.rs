//! `X-Hub-Signature-256`: HMAC-SHA256 of the raw body under the webhook secret.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::WebhookError;

/// Checks the header against the body in constant time (`Mac::verify_slice`),
/// so response timing leaks nothing about the expected signature.
pub fn verify_signature(
    secret: &[u8],
    body: &[u8],
    header: Option<&str>,
) -> Result<(), WebhookError> {
    let header = header.ok_or(WebhookError::MissingSignature)?;
    let hex_sig = header
        .strip_prefix("sha256=")
        .ok_or_else(|| WebhookError::MalformedSignature(shorten(header)))?;
    let sig =
        hex::decode(hex_sig).map_err(|_| WebhookError::MalformedSignature(shorten(header)))?;
    if sig.len() != 32 {
        return Err(WebhookError::MalformedSignature(shorten(header)));
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).map_err(|_| WebhookError::BadSignature)?;
    mac.update(body);
    mac.verify_slice(&sig)
        .map_err(|_| WebhookError::BadSignature)
}

/// The shortest webhook secret accepted, in bytes: GitHub's own advice is a
/// long random string, and the module generates 64 characters.
pub const MIN_SECRET_BYTES: usize = 32;

/// Values that mean "nobody set a secret" (the module's old placeholder among
/// them): HMAC keys anyone can guess.
const PLACEHOLDERS: &[&str] = &[
    "unset",
    "changeme",
    "change-me",
    "change_me",
    "placeholder",
    "secret",
    "todo",
    "none",
    "null",
    "default",
];

/// Whether `secret` is one of the values that mean "nobody set a secret"
/// (compared without case and surrounding blanks, repeated or not): the
/// webhook secret and the vote-link key (`approval::LinkKey`) refuse them.
pub fn is_placeholder(secret: &[u8]) -> bool {
    let text = String::from_utf8_lossy(secret);
    let folded = text.trim().to_ascii_lowercase();
    PLACEHOLDERS.iter().any(|p| {
        !folded.is_empty()
            && folded.len().is_multiple_of(p.len())
            && folded.as_bytes().chunks(p.len()).all(|c| c == p.as_bytes())
    })
}

/// Why a webhook secret must not be used as the HMAC key, or `None` when it may:
/// a placeholder (compared without case and surrounding blanks, repeated or not)
/// or fewer than [`MIN_SECRET_BYTES`] bytes. The secret itself is never quoted.
pub fn secret_problem(secret: &[u8]) -> Option<String> {
    if String::from_utf8_lossy(secret).trim().is_empty() {
        return Some("it is empty".into());
    }
    if is_placeholder(secret) {
        return Some("it holds a placeholder, not a secret".into());
    }
    if secret.len() < MIN_SECRET_BYTES {
        return Some(format!(
            "it is {} bytes long; at least {MIN_SECRET_BYTES} are required",
            secret.len()
        ));
    }
    None
}

/// The signature header as GitHub would compute it (for tests and tools).
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    match Hmac::<Sha256>::new_from_slice(secret) {
        Ok(mut mac) => {
            mac.update(body);
            format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
        }
        // HMAC takes keys of any length; this arm cannot be reached.
        Err(_) => String::new(),
    }
}

fn shorten(s: &str) -> String {
    s.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_githubs_documented_example() {
        // GitHub's docs: secret "It's a Secret to Everybody", body "Hello, World!".
        let header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        assert_eq!(
            sign(b"It's a Secret to Everybody", b"Hello, World!"),
            header
        );
        assert_eq!(
            verify_signature(
                b"It's a Secret to Everybody",
                b"Hello, World!",
                Some(header)
            ),
            Ok(())
        );
    }

    #[test]
    fn placeholders_and_short_secrets_are_refused() {
        assert_eq!(secret_problem(&[b'k'; 32]), None);
        for placeholder in [
            "unset",
            " UNSET\n",
            "changeme",
            "unsetunsetunsetunsetunsetunsetunset",
        ] {
            assert_eq!(
                secret_problem(placeholder.as_bytes()).as_deref(),
                Some("it holds a placeholder, not a secret"),
                "{placeholder:?}"
            );
        }
        assert_eq!(secret_problem(b"  ").as_deref(), Some("it is empty"));
        assert_eq!(
            secret_problem(b"local-webhook-secret").as_deref(),
            Some("it is 20 bytes long; at least 32 are required")
        );
    }

    #[test]
    fn rejects_missing_malformed_and_wrong_signatures() {
        let body = b"{}";
        let good = sign(b"s3cret", body);
        assert_eq!(
            verify_signature(b"s3cret", body, None),
            Err(WebhookError::MissingSignature)
        );
        assert!(matches!(
            verify_signature(b"s3cret", body, Some("sha1=abc")),
            Err(WebhookError::MalformedSignature(_))
        ));
        assert!(matches!(
            verify_signature(b"s3cret", body, Some("sha256=zz")),
            Err(WebhookError::MalformedSignature(_))
        ));
        assert_eq!(
            verify_signature(b"other", body, Some(&good)),
            Err(WebhookError::BadSignature)
        );
        assert_eq!(
            verify_signature(b"s3cret", b"{} ", Some(&good)),
            Err(WebhookError::BadSignature)
        );
    }
}
