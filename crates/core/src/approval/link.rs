//! Signed vote links. A link carries one token: the execution id, the voter,
//! the vote, a SHA-256 of the Step Functions task token and an expiry, signed
//! with HMAC-SHA256 under the vote-link key (an SSM SecureString).
//!
//! Why each field is signed: the voter and vote so a link cannot be turned
//! into another voter's or the other choice; the task token hash so a link
//! mailed for one approval request cannot vote on a later one of the same
//! execution; the expiry (the approval timeout) so an old mail is worthless.
//!
//! Layout (then base64url without padding, so it needs no escaping in a URL):
//! `version(1) vote(1) expires_at(8, big-endian Unix seconds) token_hash(32)
//! len(1) execution_id len(1) voter mac(32)`. About 160 characters for a
//! typical execution id and address: short enough for any mail client.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::deploy::Vote;

const VERSION: u8 = 1;
/// Keeps a vote-link MAC from ever being valid as any other HMAC of the same key.
const DOMAIN: &[u8] = b"live-ci vote link\0";
const MAC_BYTES: usize = 32;
/// Bytes of the task-token hash in a link (all of SHA-256).
pub const TOKEN_HASH_BYTES: usize = 32;
/// The shortest vote-link key accepted: HMAC-SHA256's block-size security
/// needs 32 random bytes; a shorter secret is a configuration mistake.
pub const MIN_KEY_BYTES: usize = 32;

/// Why a token or key was refused. Every variant is a 403 for the voter; the
/// message says which check failed without echoing secrets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// The key is shorter than [`MIN_KEY_BYTES`]; holds its length in bytes.
    #[error("vote-link key is {0} bytes; at least 32 are required")]
    ShortKey(usize),
    /// A value that means "nobody set a key" (`unset`, `changeme`, …, also
    /// repeated to length): anyone could forge votes under it.
    #[error(
        "vote-link key holds a placeholder, not a key; set a random value of at least 32 characters"
    )]
    PlaceholderKey,
    /// The token does not decode as a link; holds what is wrong with it.
    #[error("malformed vote link: {0}")]
    Malformed(String),
    /// The MAC is not the key's for the payload: forged or altered.
    #[error("vote link signature does not match")]
    BadSignature,
    /// The link is past its expiry.
    #[error("vote link expired at {expired_at} (unix seconds)")]
    Expired {
        /// Unix seconds from which the link was refused.
        expired_at: u64,
    },
    /// A value cannot be encoded into a link.
    #[error("cannot sign a vote link: {field} {value:?} {reason}")]
    Unsignable {
        /// The field the value is for.
        field: &'static str,
        /// The value refused.
        value: String,
        /// Why it cannot be encoded.
        reason: &'static str,
    },
}

/// What a vote link says, once its signature is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VoteLink {
    /// The execution voted on.
    pub execution_id: String,
    /// The voter's e-mail address the link was mailed to.
    pub voter: String,
    /// The vote the link casts.
    pub vote: Vote,
    /// [`task_token_hash`] of the task token the approval request carried.
    pub task_token_hash: [u8; TOKEN_HASH_BYTES],
    /// Unix seconds; the link is refused from this instant on.
    pub expires_at: u64,
}

impl VoteLink {
    /// The task token hash as the metadb stores it (lowercase hex).
    pub fn task_token_hash_hex(&self) -> String {
        hex::encode(self.task_token_hash)
    }
}

/// SHA-256 of a task token. Links and the metadb compare hashes, so the token
/// itself (which completes the task) never appears in a mail.
pub fn task_token_hash(task_token: &str) -> [u8; TOKEN_HASH_BYTES] {
    Sha256::digest(task_token.as_bytes()).into()
}

/// [`task_token_hash`] as the metadb stores it (lowercase hex).
pub fn task_token_hash_hex(task_token: &str) -> String {
    hex::encode(task_token_hash(task_token))
}

/// The vote-link key. `Debug` never shows it.
#[derive(Clone)]
pub struct LinkKey(Vec<u8>);

impl std::fmt::Debug for LinkKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LinkKey({} bytes)", self.0.len())
    }
}

impl LinkKey {
    /// The key from its secret bytes (the SSM parameter's value as UTF-8).
    pub fn new(secret: &[u8]) -> Result<Self, LinkError> {
        if crate::webhook::is_placeholder(secret) {
            return Err(LinkError::PlaceholderKey);
        }
        if secret.len() < MIN_KEY_BYTES {
            return Err(LinkError::ShortKey(secret.len()));
        }
        Ok(LinkKey(secret.to_vec()))
    }

    /// HMAC takes keys of any length, so the error arm is unreachable in
    /// practice; it is mapped rather than unwrapped.
    fn mac(&self) -> Result<Hmac<Sha256>, LinkError> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0)
            .map_err(|_| LinkError::ShortKey(self.0.len()))?;
        mac.update(DOMAIN);
        Ok(mac)
    }

    /// The URL-safe token for `link`.
    pub fn sign(&self, link: &VoteLink) -> Result<String, LinkError> {
        let field = |field, value: &str, reason| LinkError::Unsignable {
            field,
            value: value.to_string(),
            reason,
        };
        let exec = link.execution_id.as_bytes();
        let voter = link.voter.as_bytes();
        if exec.is_empty() || exec.len() > 255 {
            return Err(field(
                "execution_id",
                &link.execution_id,
                "must be 1 to 255 bytes",
            ));
        }
        if voter.is_empty() || voter.len() > 255 {
            return Err(field("voter", &link.voter, "must be 1 to 255 bytes"));
        }
        let mut payload = Vec::with_capacity(44 + exec.len() + voter.len() + MAC_BYTES);
        payload.push(VERSION);
        payload.push(match link.vote {
            Vote::Approve => 0,
            Vote::Reject => 1,
        });
        payload.extend_from_slice(&link.expires_at.to_be_bytes());
        payload.extend_from_slice(&link.task_token_hash);
        payload.push(exec.len() as u8);
        payload.extend_from_slice(exec);
        payload.push(voter.len() as u8);
        payload.extend_from_slice(voter);
        let mut mac = self.mac()?;
        mac.update(&payload);
        payload.extend_from_slice(&mac.finalize().into_bytes());
        Ok(URL_SAFE_NO_PAD.encode(payload))
    }

    /// Checks `token` and returns what it says. The signature is checked (in
    /// constant time) before any field is read, then the expiry against
    /// `now` (Unix seconds).
    pub fn verify(&self, token: &str, now: u64) -> Result<VoteLink, LinkError> {
        let malformed = |why: &str| LinkError::Malformed(why.to_string());
        if token.len() > 1024 {
            return Err(malformed("token too long"));
        }
        let bytes = URL_SAFE_NO_PAD
            .decode(token.trim())
            .map_err(|_| malformed("token is not base64url"))?;
        if bytes.len() < 44 + 2 + MAC_BYTES {
            return Err(malformed("token too short"));
        }
        let (payload, sig) = bytes.split_at(bytes.len() - MAC_BYTES);
        let mut mac = self.mac()?;
        mac.update(payload);
        mac.verify_slice(sig).map_err(|_| LinkError::BadSignature)?;
        // Authentic from here on: a malformed layout means a key shared with
        // another format version, reported as such.
        if payload[0] != VERSION {
            return Err(malformed("unknown token version"));
        }
        let vote = match payload[1] {
            0 => Vote::Approve,
            1 => Vote::Reject,
            _ => return Err(malformed("unknown vote")),
        };
        let mut expires = [0u8; 8];
        expires.copy_from_slice(&payload[2..10]);
        let expires_at = u64::from_be_bytes(expires);
        let mut task_token_hash = [0u8; TOKEN_HASH_BYTES];
        task_token_hash.copy_from_slice(&payload[10..10 + TOKEN_HASH_BYTES]);
        let rest = &payload[10 + TOKEN_HASH_BYTES..];
        let (execution_id, rest) = take_str(rest).ok_or_else(|| malformed("bad execution id"))?;
        let (voter, rest) = take_str(rest).ok_or_else(|| malformed("bad voter"))?;
        if !rest.is_empty() {
            return Err(malformed("trailing bytes"));
        }
        if now >= expires_at {
            return Err(LinkError::Expired {
                expired_at: expires_at,
            });
        }
        Ok(VoteLink {
            execution_id,
            voter,
            vote,
            task_token_hash,
            expires_at,
        })
    }
}

/// A length-prefixed UTF-8 string and what follows it.
fn take_str(bytes: &[u8]) -> Option<(String, &[u8])> {
    let (&len, rest) = bytes.split_first()?;
    let len = usize::from(len);
    if len == 0 || rest.len() < len {
        return None;
    }
    let s = std::str::from_utf8(&rest[..len]).ok()?;
    Some((s.to_string(), &rest[len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn link() -> VoteLink {
        VoteLink {
            execution_id: "run-1-c8c5-dev-baz-729".into(),
            voter: "alice@example.com".into(),
            vote: Vote::Approve,
            task_token_hash: task_token_hash("AQCEAAAAKgAAAAMAAAAA-token"),
            expires_at: 2_000,
        }
    }

    #[test]
    fn round_trips_and_is_url_safe_and_short() {
        let key = LinkKey::new(KEY).unwrap();
        let token = key.sign(&link()).unwrap();
        assert!(
            token
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "{token}"
        );
        assert!(token.len() < 200, "{}", token.len());
        assert_eq!(key.verify(&token, 1_999).unwrap(), link());
    }

    #[test]
    fn refuses_expired_tampered_and_foreign_tokens() {
        let key = LinkKey::new(KEY).unwrap();
        let token = key.sign(&link()).unwrap();
        assert_eq!(
            key.verify(&token, 2_000),
            Err(LinkError::Expired { expired_at: 2_000 })
        );
        // Another key.
        let other = LinkKey::new(b"fedcba9876543210fedcba9876543210").unwrap();
        assert_eq!(other.verify(&token, 0), Err(LinkError::BadSignature));
        // Every single-byte change of the signed bytes is caught.
        let bytes = URL_SAFE_NO_PAD.decode(&token).unwrap();
        for i in 0..bytes.len() {
            let mut t = bytes.clone();
            t[i] ^= 0x01;
            let r = key.verify(&URL_SAFE_NO_PAD.encode(&t), 0);
            assert!(matches!(r, Err(LinkError::BadSignature)), "byte {i}: {r:?}");
        }
        // The vote, the voter and the task token are each covered.
        for change in [
            (|l: &mut VoteLink| l.vote = Vote::Reject) as fn(&mut VoteLink),
            |l| l.voter = "mallory@example.com".into(),
            |l| l.task_token_hash = task_token_hash("another token"),
            |l| l.expires_at = 9_999,
        ] {
            let mut l = link();
            change(&mut l);
            let forged = key.sign(&l).unwrap();
            assert_ne!(forged, token);
            // Splicing the old signature onto the new fields fails.
            let mut spliced = URL_SAFE_NO_PAD.decode(&forged).unwrap();
            let n = spliced.len();
            let sig = URL_SAFE_NO_PAD.decode(&token).unwrap();
            spliced[n - 32..].copy_from_slice(&sig[sig.len() - 32..]);
            assert_eq!(
                key.verify(&URL_SAFE_NO_PAD.encode(&spliced), 0),
                Err(LinkError::BadSignature)
            );
        }
        assert!(matches!(
            key.verify("not a token!", 0),
            Err(LinkError::Malformed(_))
        ));
        assert!(matches!(key.verify("", 0), Err(LinkError::Malformed(_))));
    }

    #[test]
    fn keys_must_be_long_and_fields_signable() {
        assert_eq!(LinkKey::new(b"short").unwrap_err(), LinkError::ShortKey(5));
        for placeholder in [
            &b"unset"[..],
            b" CHANGEME ",
            b"changemechangemechangemechangeme",
            b"placeholderplaceholderplaceholder",
        ] {
            let err = LinkKey::new(placeholder).unwrap_err();
            assert_eq!(err, LinkError::PlaceholderKey);
            assert_eq!(
                err.to_string(),
                "vote-link key holds a placeholder, not a key; set a random value of at least 32 characters"
            );
        }
        assert_eq!(
            format!("{:?}", LinkKey::new(KEY).unwrap()),
            "LinkKey(32 bytes)"
        );
        let mut l = link();
        l.voter = String::new();
        let err = LinkKey::new(KEY).unwrap().sign(&l).unwrap_err();
        assert!(err.to_string().contains("voter"), "{err}");
    }
}
