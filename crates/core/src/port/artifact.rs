//! The artifact-store port (S3 in AWS): saved Terraform plans, written by the
//! plan task and read back by the apply task, so what was approved is applied.
//! The plan task records each saved plan's SHA-256 and object version
//! ([`SavedPlan`]) in the metadb; the apply task reads exactly that version
//! and refuses any other content. A run's packed checkout
//! ([`CachedCheckout`]) lives in the same store: create-deploy-stack uploads
//! it once, and every terra-run of the run unpacks it instead of fetching the
//! commit from the repository.

use std::future::Future;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A saved plan as the plan task stored it: what the apply must find.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedPlan {
    /// The plan file's key in the artifact store.
    pub key: String,
    /// Lowercase hex SHA-256 of the plan file.
    pub sha256: String,
    /// The store's version of the object (S3 versioning); `None` when the
    /// store does not version (then only the hash protects the plan).
    pub version_id: Option<String>,
    /// Lowercase hex SHA-256 of the plan's sealed `show -json`
    /// ([`crate::plan_view::seal`], stored at [`crate::plan_view::json_key`]),
    /// recorded with the plan so the approval page shows exactly this plan;
    /// `None` for plans saved before it was kept.
    #[serde(default)]
    pub json_sha256: Option<String>,
}

/// A run's checkout packed by create-deploy-stack, as recorded on the run:
/// terra-run unpacks only content whose SHA-256 is this one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CachedCheckout {
    /// The archive's key in the artifact store ([`checkout_key`]).
    pub key: String,
    /// Lowercase hex SHA-256 of the archive.
    pub sha256: String,
}

impl CachedCheckout {
    /// The record of an archive of `commit_id` with content `bytes`, at its
    /// content-addressed key ([`checkout_key`]).
    pub fn of(commit_id: &str, bytes: &[u8]) -> Self {
        let sha256 = sha256_hex(bytes);
        CachedCheckout {
            key: checkout_key(commit_id, &sha256),
            sha256,
        }
    }

    /// Why this record cannot be stored, if it cannot: an empty key or a
    /// digest that is not 64 lowercase hex digits.
    pub fn problem(&self) -> Option<String> {
        if self.key.trim().is_empty() {
            return Some("key is empty".into());
        }
        if self.sha256.len() != 64
            || !self
                .sha256
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Some(format!(
                "sha256 {:?} is not 64 lowercase hex digits",
                self.sha256
            ));
        }
        None
    }
}

/// Where a run's packed checkout is stored: by commit and content, so a
/// redelivered merge that packs again never changes the bytes at a key a run
/// already recorded.
pub fn checkout_key(commit_id: &str, sha256: &str) -> String {
    format!("checkouts/{commit_id}/{sha256}.tar")
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Opaque blobs by key in one bucket.
pub trait ArtifactStore: Send + Sync {
    /// The adapter's error, classified retryable or permanent.
    type Error: crate::port::Classify;

    /// Stores `bytes` at `key` (overwriting); returns the new object version
    /// when the store versions objects.
    fn put(
        &self,
        key: &str,
        bytes: Vec<u8>,
    ) -> impl Future<Output = Result<Option<String>, Self::Error>> + Send;

    /// The bytes at `key`; `None` when there is no such object.
    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Vec<u8>>, Self::Error>> + Send;

    /// The bytes of one version of `key` (`None`: the current one); `None`
    /// when there is no such object or version.
    fn get_version(
        &self,
        key: &str,
        version_id: Option<&str>,
    ) -> impl Future<Output = Result<Option<Vec<u8>>, Self::Error>> + Send;

    /// How the artifact is named in payloads (`s3://bucket/key`).
    fn uri(&self, key: &str) -> String;

    /// The key of a `uri` this store produced; `None` for another store's uri.
    fn key_of(&self, uri: &str) -> Option<String>;
}
