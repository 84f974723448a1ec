//! The artifact-store port (S3 in AWS): saved Terraform plans, written by the
//! plan task and read back by the apply task, so what was approved is applied.

use std::future::Future;

/// Opaque blobs by key in one bucket.
pub trait ArtifactStore: Send + Sync {
    type Error: std::error::Error + Send + Sync + 'static;

    /// Stores `bytes` at `key` (overwriting).
    fn put(
        &self,
        key: &str,
        bytes: Vec<u8>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// The bytes at `key`; `None` when there is no such object.
    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Vec<u8>>, Self::Error>> + Send;

    /// How the artifact is named in payloads (`s3://bucket/key`).
    fn uri(&self, key: &str) -> String;

    /// The key of a `uri` this store produced; `None` for another store's uri.
    fn key_of(&self, uri: &str) -> Option<String>;
}
