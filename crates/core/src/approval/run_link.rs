//! Signed run links: a read-only run page (approval-response) for a run id,
//! until an expiry, signed with HMAC-SHA256 under the run-link key — a key of
//! its own, not the vote-link key. Whoever mints run links (trigger-sf and the
//! terra-run task put them on commit statuses) holds only this key, so it can
//! never mint a vote link; and the MAC is domain-separated from vote links, so
//! even a deployment that gave both parameters the same value cannot have one
//! token verify as the other.
//!
//! Layout (base64url without padding): `version(1) expires_at(8, big-endian
//! Unix seconds) run_id(8, big-endian) mac(32)`: 66 characters.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::link::{LinkError, MIN_KEY_BYTES};
use crate::deploy::RunId;

const VERSION: u8 = 1;
/// Keeps a run-link MAC from ever being valid as a vote link's (whose domain
/// is `live-ci vote link\0`) or any other HMAC of the same key.
const DOMAIN: &[u8] = b"live-ci run link\0";
const MAC_BYTES: usize = 32;
const PAYLOAD_BYTES: usize = 1 + 8 + 8;

/// What a run link says, once its signature is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunLink {
    /// The run whose page the link opens.
    pub run_id: RunId,
    /// Unix seconds; the link is refused from this instant on.
    pub expires_at: u64,
}

/// The run-link key. `Debug` never shows it.
#[derive(Clone)]
pub struct RunLinkKey(Vec<u8>);

impl std::fmt::Debug for RunLinkKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RunLinkKey({} bytes)", self.0.len())
    }
}

impl RunLinkKey {
    /// The key from its secret bytes (the SSM parameter's value as UTF-8);
    /// the same refusals as the vote-link key.
    pub fn new(secret: &[u8]) -> Result<Self, LinkError> {
        if crate::webhook::is_placeholder(secret) {
            return Err(LinkError::PlaceholderKey);
        }
        if secret.len() < MIN_KEY_BYTES {
            return Err(LinkError::ShortKey(secret.len()));
        }
        Ok(RunLinkKey(secret.to_vec()))
    }

    fn mac(&self) -> Result<Hmac<Sha256>, LinkError> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0)
            .map_err(|_| LinkError::ShortKey(self.0.len()))?;
        mac.update(DOMAIN);
        Ok(mac)
    }

    /// The URL-safe token for `link`.
    pub fn sign(&self, link: &RunLink) -> Result<String, LinkError> {
        let mut payload = Vec::with_capacity(PAYLOAD_BYTES + MAC_BYTES);
        payload.push(VERSION);
        payload.extend_from_slice(&link.expires_at.to_be_bytes());
        payload.extend_from_slice(&link.run_id.to_be_bytes());
        let mut mac = self.mac()?;
        mac.update(&payload);
        payload.extend_from_slice(&mac.finalize().into_bytes());
        Ok(URL_SAFE_NO_PAD.encode(payload))
    }

    /// Checks `token` (signature first, in constant time, then the expiry
    /// against `now`, Unix seconds) and returns what it says.
    pub fn verify(&self, token: &str, now: u64) -> Result<RunLink, LinkError> {
        let malformed = |why: &str| LinkError::Malformed(why.to_string());
        if token.len() > 256 {
            return Err(malformed("token too long"));
        }
        let bytes = URL_SAFE_NO_PAD
            .decode(token.trim())
            .map_err(|_| malformed("token is not base64url"))?;
        if bytes.len() < MAC_BYTES + 1 {
            return Err(malformed("token too short"));
        }
        let (payload, sig) = bytes.split_at(bytes.len() - MAC_BYTES);
        let mut mac = self.mac()?;
        mac.update(payload);
        mac.verify_slice(sig).map_err(|_| LinkError::BadSignature)?;
        if payload.len() != PAYLOAD_BYTES || payload[0] != VERSION {
            return Err(malformed("unknown run link layout"));
        }
        let mut expires = [0u8; 8];
        expires.copy_from_slice(&payload[1..9]);
        let mut run = [0u8; 8];
        run.copy_from_slice(&payload[9..17]);
        let expires_at = u64::from_be_bytes(expires);
        if now >= expires_at {
            return Err(LinkError::Expired {
                expired_at: expires_at,
            });
        }
        Ok(RunLink {
            run_id: RunId::from_be_bytes(run),
            expires_at,
        })
    }
}

/// The run page's address: `base` (approval-response's Function URL) with the
/// token as parameter `r` (vote links use `t`).
pub fn run_page_url(base: &str, token: &str) -> String {
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}r={token}")
}

/// How long a run link on a commit status or the deploy comment opens the
/// page: long enough to look back at a deployment during a review cycle, short
/// enough that a link copied out of the repository goes dead.
pub const RUN_LINK_TTL_SECS: u64 = 14 * 24 * 3600;

/// What a minter of run links holds: the run-link key (never the vote-link
/// key) and the page's address.
#[derive(Debug, Clone)]
pub struct RunPages {
    /// The key links are signed with.
    pub key: RunLinkKey,
    /// approval-response's Function URL.
    pub base_url: String,
    /// How long a minted link stays valid, in seconds ([`RUN_LINK_TTL_SECS`]).
    pub ttl_secs: u64,
}

impl RunPages {
    /// The signed page address of `run_id`, valid from `now` (Unix seconds)
    /// for `ttl_secs`; `None` only if signing fails (it cannot for this
    /// fixed layout, but a status must never fail for its link).
    pub fn url(&self, run_id: RunId, now: u64) -> Option<String> {
        let link = RunLink {
            run_id,
            expires_at: now.saturating_add(self.ttl_secs),
        };
        self.key
            .sign(&link)
            .ok()
            .map(|token| run_page_url(&self.base_url, &token))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::{LinkKey, VoteLink, task_token_hash};
    use crate::deploy::Vote;

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn link() -> RunLink {
        RunLink {
            run_id: 42,
            expires_at: 2_000,
        }
    }

    #[test]
    fn round_trips_and_refuses_expired_and_tampered_tokens() {
        let key = RunLinkKey::new(KEY).unwrap();
        let token = key.sign(&link()).unwrap();
        assert_eq!(token.len(), 66, "{token}");
        assert_eq!(key.verify(&token, 1_999).unwrap(), link());
        assert_eq!(
            key.verify(&token, 2_000),
            Err(LinkError::Expired { expired_at: 2_000 })
        );
        let bytes = URL_SAFE_NO_PAD.decode(&token).unwrap();
        for i in 0..bytes.len() {
            let mut t = bytes.clone();
            t[i] ^= 0x01;
            let r = key.verify(&URL_SAFE_NO_PAD.encode(&t), 0);
            assert_eq!(r, Err(LinkError::BadSignature), "byte {i}");
        }
        let other = RunLinkKey::new(b"fedcba9876543210fedcba9876543210").unwrap();
        assert_eq!(other.verify(&token, 0), Err(LinkError::BadSignature));
        assert!(matches!(key.verify("", 0), Err(LinkError::Malformed(_))));
        assert_eq!(
            format!("{key:?}"),
            "RunLinkKey(32 bytes)",
            "the key never shows"
        );
        assert_eq!(
            RunLinkKey::new(b"changemechangemechangemechangeme").unwrap_err(),
            LinkError::PlaceholderKey
        );
    }

    /// Even under one secret, a vote token is no run token and a run token no
    /// vote token: the MACs are taken over different domains.
    #[test]
    fn vote_and_run_tokens_never_verify_as_each_other_even_under_one_secret() {
        let run_key = RunLinkKey::new(KEY).unwrap();
        let vote_key = LinkKey::new(KEY).unwrap();
        let vote = vote_key
            .sign(&VoteLink {
                execution_id: "run-42-x".into(),
                voter: "alice@example.com".into(),
                vote: Vote::Approve,
                task_token_hash: task_token_hash("token"),
                expires_at: 2_000,
            })
            .unwrap();
        assert_eq!(run_key.verify(&vote, 0), Err(LinkError::BadSignature));
        let run = run_key.sign(&link()).unwrap();
        // Shorter than any vote token: refused before its MAC is even taken.
        assert!(
            matches!(
                vote_key.verify(&run, 0),
                Err(LinkError::Malformed(_) | LinkError::BadSignature)
            ),
            "a run token verified as a vote token"
        );
        // A run payload MACed under the vote domain (what a minter holding the
        // same bytes would produce with the vote code) is refused too.
        let mut forged = URL_SAFE_NO_PAD.decode(&run).unwrap();
        let n = forged.len();
        let mut mac = Hmac::<Sha256>::new_from_slice(KEY).unwrap();
        mac.update(b"live-ci vote link\0");
        mac.update(&forged[..n - MAC_BYTES]);
        forged[n - MAC_BYTES..].copy_from_slice(&mac.finalize().into_bytes());
        assert_eq!(
            run_key.verify(&URL_SAFE_NO_PAD.encode(&forged), 0),
            Err(LinkError::BadSignature)
        );
    }

    #[test]
    fn the_page_url_carries_the_token_as_r() {
        assert_eq!(
            run_page_url("https://x.lambda-url.aws/", "abc"),
            "https://x.lambda-url.aws/?r=abc"
        );
        assert_eq!(
            run_page_url("https://x/?a=1", "abc"),
            "https://x/?a=1&r=abc"
        );
    }
}
