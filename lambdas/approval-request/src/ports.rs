//! The requester's ports as one bundle: [`ApprovalRequester`](crate::ApprovalRequester)
//! is generic over a single [`RequesterPorts`] instead of one type parameter
//! per port, so adding a port changes this trait, [`Production`] and the
//! tests' struct of fakes. Notifications off is
//! [`NoNotifications`](live_ci_core::port::NoNotifications) as the
//! associated type.

use live_ci_aws::{KmsTokenCipher, SesMailer, SnsNotifications};
use live_ci_core::port::{ApprovalStore, Mailer, Notifications, TaskFailures, TokenCipher};
use live_ci_metadb::AnyMetadb;
use live_ci_stepfunctions::SfnTaskTokens;

/// Everything the requester talks to.
pub trait RequesterPorts: Send + Sync {
    /// The approval store (the metadb in production).
    type Store: ApprovalStore;
    /// Sends the voters' mails (SES in production).
    type Mailer: Mailer;
    /// Encrypts task tokens (KMS in production).
    type Cipher: TokenCipher;
    /// Fails a waiting task (Step Functions in production).
    type Tokens: TaskFailures;
    /// Publishes notification events (SNS in production).
    type Notifications: Notifications;

    /// Where requests are stored for approval_response, and who was mailed.
    fn store(&self) -> &Self::Store;
    /// Sends each voter's mail.
    fn mailer(&self) -> &Self::Mailer;
    /// Encrypts the task token before it is stored.
    fn cipher(&self) -> &Self::Cipher;
    /// Fails the waiting state when a voter's mail is refused for good.
    fn tokens(&self) -> &Self::Tokens;
    /// Where "approval pending" is published (advisory).
    fn notifications(&self) -> &Self::Notifications;
}

/// The ports `main.rs` wires: the metadb, SES v2, KMS, Step Functions and
/// SNS (a no-op without a topic).
#[derive(Debug)]
pub struct Production {
    /// The metadb, direct or through the Data API.
    pub store: AnyMetadb,
    /// SES v2.
    pub mailer: SesMailer,
    /// KMS, with the task-token key.
    pub cipher: KmsTokenCipher,
    /// Step Functions' SendTaskFailure.
    pub tokens: SfnTaskTokens,
    /// SNS on the notifications topic (a no-op without one).
    pub notifications: SnsNotifications,
}

impl RequesterPorts for Production {
    type Store = AnyMetadb;
    type Mailer = SesMailer;
    type Cipher = KmsTokenCipher;
    type Tokens = SfnTaskTokens;
    type Notifications = SnsNotifications;

    fn store(&self) -> &AnyMetadb {
        &self.store
    }

    fn mailer(&self) -> &SesMailer {
        &self.mailer
    }

    fn cipher(&self) -> &KmsTokenCipher {
        &self.cipher
    }

    fn tokens(&self) -> &SfnTaskTokens {
        &self.tokens
    }

    fn notifications(&self) -> &SnsNotifications {
        &self.notifications
    }
}
