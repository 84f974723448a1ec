//! The responder's ports as one bundle: [`ApprovalResponder`](crate::ApprovalResponder)
//! is generic over a single [`ResponderPorts`] instead of one type parameter
//! per port, so adding a port changes this trait, [`Production`] and the
//! tests' struct of fakes. No plan store is [`NoPlanStore`] as the
//! associated type (the page then says the plan cannot be shown).

use live_ci_aws::{KmsTokenCipher, S3ArtifactStore};
use live_ci_core::port::{ApprovalStore, ArtifactStore, TaskTokens, TokenCipher};
use live_ci_metadb::AnyMetadb;
use live_ci_stepfunctions::SfnTaskTokens;

/// Everything the responder talks to (GitHub, for votes from the pull
/// request, is handed to [`github_vote`](crate::ApprovalResponder::github_vote)
/// per call).
pub trait ResponderPorts: Send + Sync {
    type Db: ApprovalStore;
    type Tokens: TaskTokens;
    type Cipher: TokenCipher;
    type Plans: ArtifactStore;

    /// Approvals, votes and the decision's hand-over.
    fn db(&self) -> &Self::Db;
    /// Sends the decision back to the waiting state.
    fn tokens(&self) -> &Self::Tokens;
    /// Decrypts the stored task token.
    fn cipher(&self) -> &Self::Cipher;
    /// Where the page reads the saved plan's JSON; `None`: not shown.
    fn plans(&self) -> Option<&Self::Plans>;
}

/// No plan store: the page says the plan cannot be shown.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoPlanStore;

impl ArtifactStore for NoPlanStore {
    type Error = std::convert::Infallible;

    async fn put(&self, _: &str, _: Vec<u8>) -> Result<Option<String>, Self::Error> {
        Ok(None)
    }

    async fn get(&self, _: &str) -> Result<Option<Vec<u8>>, Self::Error> {
        Ok(None)
    }

    async fn get_version(&self, _: &str, _: Option<&str>) -> Result<Option<Vec<u8>>, Self::Error> {
        Ok(None)
    }

    fn uri(&self, key: &str) -> String {
        key.to_string()
    }

    fn key_of(&self, _: &str) -> Option<String> {
        None
    }
}

/// The ports `main.rs` wires: the metadb, Step Functions, KMS and the S3
/// bucket terra-run saves plans in.
#[derive(Debug)]
pub struct Production {
    pub db: AnyMetadb,
    pub tokens: SfnTaskTokens,
    pub cipher: KmsTokenCipher,
    pub plans: S3ArtifactStore,
}

impl ResponderPorts for Production {
    type Db = AnyMetadb;
    type Tokens = SfnTaskTokens;
    type Cipher = KmsTokenCipher;
    type Plans = S3ArtifactStore;

    fn db(&self) -> &AnyMetadb {
        &self.db
    }

    fn tokens(&self) -> &SfnTaskTokens {
        &self.tokens
    }

    fn cipher(&self) -> &KmsTokenCipher {
        &self.cipher
    }

    fn plans(&self) -> Option<&S3ArtifactStore> {
        Some(&self.plans)
    }
}
