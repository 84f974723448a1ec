//! S3 as the core's [`ArtifactStore`]: saved plans in one bucket, named
//! `s3://bucket/key` in payloads.

use aws_sdk_s3::Client;
use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;
use live_ci_core::port::ArtifactStore;

use live_ci_core::port::ErrorKind;

use crate::error::{AwsError, Failure};

/// Saved plans in one S3 bucket.
#[derive(Debug, Clone)]
pub struct S3ArtifactStore {
    client: Client,
    bucket: String,
}

impl S3ArtifactStore {
    /// A store of objects in `bucket`.
    pub fn new(client: Client, bucket: impl Into<String>) -> Self {
        S3ArtifactStore {
            client,
            bucket: bucket.into(),
        }
    }

    /// The bucket's name.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }
}

impl ArtifactStore for S3ArtifactStore {
    type Error = AwsError;

    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<Option<String>, AwsError> {
        let out = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .body(ByteStream::from(bytes))
            .send()
            .await
            .map_err(|e| AwsError::S3 {
                operation: "put-object",
                uri: self.uri(key),
                message: Failure::sdk(e),
            })?;
        // An unversioned bucket answers no id (or the literal "null").
        Ok(out.version_id.filter(|v| !v.is_empty() && v != "null"))
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, AwsError> {
        self.get_version(key, None).await
    }

    async fn get_version(
        &self,
        key: &str,
        version_id: Option<&str>,
    ) -> Result<Option<Vec<u8>>, AwsError> {
        let err = |message: Failure| AwsError::S3 {
            operation: "get-object",
            uri: match version_id {
                Some(v) => format!("{}?versionId={v}", self.uri(key)),
                None => self.uri(key),
            },
            message,
        };
        let out = match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .set_version_id(version_id.map(str::to_string))
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if matches!(e.code(), Some("NoSuchKey" | "NoSuchVersion")) => return Ok(None),
            Err(e) => return Err(err(Failure::sdk(e))),
        };
        let body = out
            .body
            .collect()
            .await
            .map_err(|e| err(Failure::other(ErrorKind::Retryable, e)))?;
        Ok(Some(body.into_bytes().to_vec()))
    }

    fn uri(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }

    fn key_of(&self, uri: &str) -> Option<String> {
        uri.strip_prefix("s3://")?
            .strip_prefix(self.bucket.as_str())?
            .strip_prefix('/')
            .map(str::to_string)
    }
}
