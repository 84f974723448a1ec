//! The requester's ports in tests: one struct of fakes
//! ([`RequesterPorts`]). The test keeps a clone of it: the mailer, the task
//! failures and the notifications are shared (`Arc`), so what the requester
//! sent is read from the fakes, not through getters on the handler. Also
//! included (`#[path]`) by live-ci-e2e's approval tests, which mail voters
//! through the real requester.
#![allow(dead_code)] // each including test crate uses its part

use std::sync::Arc;

use live_ci_approval_request::RequesterPorts;
use live_ci_aws::KmsTokenCipher;
use live_ci_core::port::{ApprovalStore, Mailer, NoNotifications, Notifications, TaskFailures};
use live_ci_testkit::approval::RecordingFailures;

/// A metadb (`S`), a mailer (`M`), the KMS cipher of the local cloud, the
/// task failures (`T`) and the notifications (`N`, off by default).
#[derive(Debug)]
pub(crate) struct Fakes<S, M, T = RecordingFailures, N = NoNotifications> {
    pub store: S,
    pub mailer: Arc<M>,
    pub cipher: KmsTokenCipher,
    pub tokens: Arc<T>,
    pub notifications: Arc<N>,
}

impl<S: Clone, M, T, N> Clone for Fakes<S, M, T, N> {
    fn clone(&self) -> Self {
        Fakes {
            store: self.store.clone(),
            mailer: self.mailer.clone(),
            cipher: self.cipher.clone(),
            tokens: self.tokens.clone(),
            notifications: self.notifications.clone(),
        }
    }
}

impl<S, M, T> Fakes<S, M, T> {
    /// Notifications off.
    pub(crate) fn new(store: S, mailer: M, cipher: KmsTokenCipher, tokens: T) -> Self {
        Fakes {
            store,
            mailer: Arc::new(mailer),
            cipher,
            tokens: Arc::new(tokens),
            notifications: Arc::new(NoNotifications),
        }
    }

    /// The same fakes, publishing to `notifications`.
    pub(crate) fn notifying<N>(self, notifications: N) -> Fakes<S, M, T, N> {
        Fakes {
            store: self.store,
            mailer: self.mailer,
            cipher: self.cipher,
            tokens: self.tokens,
            notifications: Arc::new(notifications),
        }
    }
}

impl<S, M, T, N> RequesterPorts for Fakes<S, M, T, N>
where
    S: ApprovalStore,
    M: Mailer,
    T: TaskFailures,
    N: Notifications,
{
    type Store = S;
    type Mailer = M;
    type Cipher = KmsTokenCipher;
    type Tokens = T;
    type Notifications = N;

    fn store(&self) -> &S {
        &self.store
    }

    fn mailer(&self) -> &M {
        &self.mailer
    }

    fn cipher(&self) -> &KmsTokenCipher {
        &self.cipher
    }

    fn tokens(&self) -> &T {
        &self.tokens
    }

    fn notifications(&self) -> &N {
        &self.notifications
    }
}
