//! The responder's ports as one bundle: [`ApprovalResponder`](crate::ApprovalResponder)
//! is generic over a single [`ResponderPorts`] instead of one type parameter
//! per port, so adding a port changes this trait, [`Production`] and the
//! tests' struct of fakes. No plan store is [`NoPlanStore`] as the
//! associated type (the page then says the plan cannot be shown); GitHub is
//! in the bundle too, `None` when votes from the pull request are off.

use live_ci_aws::{KmsTokenCipher, S3ArtifactStore};
use live_ci_core::port::{ApprovalStore, ArtifactStore, PullRequestVotes, TaskTokens, TokenCipher};
use live_ci_github::GitHubClient;
use live_ci_metadb::AnyMetadb;
use live_ci_stepfunctions::SfnTaskTokens;

/// Everything the responder talks to.
pub trait ResponderPorts: Send + Sync {
    /// Keeps approvals and votes ([`db`](Self::db)).
    type Db: ApprovalStore;
    /// Hands the decision to Step Functions ([`tokens`](Self::tokens)).
    type Tokens: TaskTokens;
    /// Decrypts the stored task token ([`cipher`](Self::cipher)).
    type Cipher: TokenCipher;
    /// Holds the saved plans' JSON ([`plans`](Self::plans)).
    type Plans: ArtifactStore;
    /// Reads and answers vote comments ([`github`](Self::github)).
    type GitHub: PullRequestVotes;

    /// Approvals, votes and the decision's hand-over.
    fn db(&self) -> &Self::Db;
    /// Sends the decision back to the waiting state.
    fn tokens(&self) -> &Self::Tokens;
    /// Decrypts the stored task token.
    fn cipher(&self) -> &Self::Cipher;
    /// Where the page reads the saved plan's JSON; `None`: not shown.
    fn plans(&self) -> Option<&Self::Plans>;
    /// Where [`github_vote`](crate::ApprovalResponder::github_vote) reads
    /// the vote comment and answers it; `None`: votes from the pull request
    /// are off (REPO_FULL_NAME unset), and such an invoke fails.
    fn github(&self) -> Option<&Self::GitHub>;
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

/// The ports `main.rs` wires: the metadb, Step Functions, KMS, the S3
/// bucket terra-run saves plans in, and GitHub when votes from the pull
/// request are configured.
#[derive(Debug)]
pub struct Production {
    /// PostgreSQL or the RDS Data API, as configured.
    pub db: AnyMetadb,
    /// `SendTaskSuccess` to the waiting Request Approval state.
    pub tokens: SfnTaskTokens,
    /// KMS, under the task-token key only this role may decrypt with.
    pub cipher: KmsTokenCipher,
    /// The plan bucket, read for the page's plan.
    pub plans: S3ArtifactStore,
    /// `None` without `REPO_FULL_NAME`: votes come by mail only.
    pub github: Option<GitHubClient>,
}

impl ResponderPorts for Production {
    type Db = AnyMetadb;
    type Tokens = SfnTaskTokens;
    type Cipher = KmsTokenCipher;
    type Plans = S3ArtifactStore;
    type GitHub = GitHubClient;

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

    fn github(&self) -> Option<&GitHubClient> {
        self.github.as_ref()
    }
}
