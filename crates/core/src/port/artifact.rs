//! The artifact-store port (S3 in AWS): saved Terraform plans, written by the
//! plan task and read back by the apply task, so what was approved is applied.
//! The plan task records each saved plan's SHA-256 and object version
//! ([`SavedPlan`]) in the metadb; the apply task reads exactly that version
//! and refuses any other content.

use std::future::Future;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A saved plan as the plan task stored it: what the apply must find.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedPlan {
    pub key: String,
    /// Lowercase hex SHA-256 of the plan file.
    pub sha256: String,
    /// The store's version of the object (S3 versioning); `None` when the
    /// store does not version (then only the hash protects the plan).
    pub version_id: Option<String>,
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Opaque blobs by key in one bucket.
pub trait ArtifactStore: Send + Sync {
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
