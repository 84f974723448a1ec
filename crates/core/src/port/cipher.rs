//! The task-token cipher port (KMS in AWS). A Step Functions task token
//! completes a waiting state, so whoever holds one can approve a deployment:
//! the metadb keeps only its hash (the lookup key the vote links carry) and a
//! ciphertext bound to the execution it belongs to. Only approval_request
//! may encrypt and only approval_response may decrypt, so read access to the
//! metadb no longer forges an approval.

use std::future::Future;

/// The encryption-context key that binds a ciphertext to its execution: a
/// ciphertext copied onto another execution's row does not decrypt there.
pub const EXECUTION_CONTEXT_KEY: &str = "live-ci:execution-id";

/// Encrypts and decrypts task tokens, bound to an execution id.
pub trait TokenCipher: Send + Sync {
    /// The adapter's error, classified retryable or permanent.
    type Error: crate::port::Classify;

    /// The token's ciphertext (printable: base64), usable only with the same
    /// `execution_id`.
    fn encrypt(
        &self,
        token: &str,
        execution_id: &str,
    ) -> impl Future<Output = Result<String, Self::Error>> + Send;

    /// The token back; an error for a ciphertext that was altered, made by
    /// another key, or bound to another execution.
    fn decrypt(
        &self,
        ciphertext: &str,
        execution_id: &str,
    ) -> impl Future<Output = Result<String, Self::Error>> + Send;
}
