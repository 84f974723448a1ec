//! The parameter store port (SSM Parameter Store in AWS): secrets read once per
//! cold start, the merge lock mirror, and the commit-status configuration.

use std::future::Future;

/// Named string parameters, some encrypted (SecureString).
pub trait ParamStore: Send + Sync {
    /// The adapter's error, classified retryable or permanent.
    type Error: super::Classify;

    /// The parameter's value, decrypted when it is a SecureString.
    fn get(&self, name: &str) -> impl Future<Output = Result<String, Self::Error>> + Send;

    /// Overwrites a plain string parameter.
    fn put(&self, name: &str, value: &str) -> impl Future<Output = Result<(), Self::Error>> + Send;
}
