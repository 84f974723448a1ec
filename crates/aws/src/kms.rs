//! KMS as the core's [`TokenCipher`]: task tokens encrypted under the
//! module's dedicated task-token key with the encryption context
//! `{"live-ci:execution-id": <execution id>}`. KMS authenticates the context,
//! so a ciphertext moved onto another execution's row does not decrypt, and
//! the key policy lets only approval_request encrypt and only
//! approval_response decrypt. Ciphertexts travel as standard base64.

use aws_sdk_kms::Client;
use aws_sdk_kms::primitives::Blob;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use live_ci_core::port::{EXECUTION_CONTEXT_KEY, TokenCipher};

use crate::error::{AwsError, Failure};

/// Encrypts and decrypts task tokens under one KMS key.
#[derive(Debug, Clone)]
pub struct KmsTokenCipher {
    client: Client,
    /// Key id, ARN or alias of the task-token key.
    key_id: String,
}

impl KmsTokenCipher {
    /// A cipher using key `key_id` (id, ARN or alias).
    pub fn new(client: Client, key_id: impl Into<String>) -> Self {
        KmsTokenCipher {
            client,
            key_id: key_id.into(),
        }
    }

    fn error(
        &self,
        operation: &'static str,
        execution_id: &str,
        message: impl Into<Failure>,
    ) -> AwsError {
        AwsError::Kms {
            operation,
            key_id: self.key_id.clone(),
            execution_id: execution_id.to_string(),
            message: message.into(),
        }
    }
}

impl TokenCipher for KmsTokenCipher {
    type Error = AwsError;

    async fn encrypt(&self, token: &str, execution_id: &str) -> Result<String, AwsError> {
        let out = self
            .client
            .encrypt()
            .key_id(&self.key_id)
            .plaintext(Blob::new(token.as_bytes()))
            .encryption_context(EXECUTION_CONTEXT_KEY, execution_id)
            .send()
            .await
            .map_err(|e| self.error("encrypt", execution_id, Failure::sdk(e)))?;
        let blob = out.ciphertext_blob.ok_or_else(|| {
            self.error("encrypt", execution_id, "the answer carries no ciphertext")
        })?;
        Ok(STANDARD.encode(blob.as_ref()))
    }

    async fn decrypt(&self, ciphertext: &str, execution_id: &str) -> Result<String, AwsError> {
        let bytes = STANDARD.decode(ciphertext.trim()).map_err(|e| {
            self.error(
                "decrypt",
                execution_id,
                format!("ciphertext is not base64: {e}"),
            )
        })?;
        // The key is named, so a ciphertext made under any other key (one a
        // metadb writer could produce) is refused rather than decrypted.
        let out = self
            .client
            .decrypt()
            .key_id(&self.key_id)
            .ciphertext_blob(Blob::new(bytes))
            .encryption_context(EXECUTION_CONTEXT_KEY, execution_id)
            .send()
            .await
            .map_err(|e| self.error("decrypt", execution_id, Failure::sdk(e)))?;
        let plain = out.plaintext.ok_or_else(|| {
            self.error("decrypt", execution_id, "the answer carries no plaintext")
        })?;
        String::from_utf8(plain.into_inner())
            .map_err(|_| self.error("decrypt", execution_id, "the plaintext is not UTF-8"))
    }
}
