//! The responder's ports in tests: one struct of fakes ([`ResponderPorts`]),
//! and [`Wired`], the responder with handles (`Arc`) to the fakes a test
//! inspects, so what it sent is read from the fakes, not through getters on
//! the handler. Also included (`#[path]`) by live-ci-e2e's approval tests and
//! its `bench_vote` example.
#![allow(dead_code)] // each including crate uses its part

use std::ops::Deref;
use std::sync::Arc;

use live_ci_approval_response::{ApprovalResponder, NoPlanStore, ResponderPorts};
use live_ci_aws::KmsTokenCipher;
use live_ci_core::approval::{LinkKey, RunLinkKey};
use live_ci_core::port::{ApprovalStore, ArtifactStore, PullRequestVotes, TaskTokens};
use live_ci_github::GitHubClient;
use live_ci_testkit::approval::RecordingTokens;

/// A metadb (`D`), task tokens (`T`), the KMS cipher, a plan store (`A`,
/// none by default) and GitHub (`G`, none by default: votes from the pull
/// request off).
#[derive(Debug)]
pub(crate) struct Fakes<D, T = RecordingTokens, A = NoPlanStore, G = GitHubClient> {
    pub(crate) db: D,
    pub(crate) tokens: Arc<T>,
    pub(crate) cipher: KmsTokenCipher,
    pub(crate) plans: Option<A>,
    pub(crate) github: Option<G>,
}

impl<D, T, A, G> ResponderPorts for Fakes<D, T, A, G>
where
    D: ApprovalStore,
    T: TaskTokens,
    A: ArtifactStore,
    G: PullRequestVotes,
{
    type Db = D;
    type Tokens = T;
    type Cipher = KmsTokenCipher;
    type Plans = A;
    type GitHub = G;

    fn db(&self) -> &D {
        &self.db
    }

    fn tokens(&self) -> &T {
        &self.tokens
    }

    fn cipher(&self) -> &KmsTokenCipher {
        &self.cipher
    }

    fn plans(&self) -> Option<&A> {
        self.plans.as_ref()
    }

    fn github(&self) -> Option<&G> {
        self.github.as_ref()
    }
}

/// A responder on [`Fakes`], with a handle to its task tokens; derefs to the
/// responder.
#[derive(Debug)]
pub(crate) struct Wired<D, T = RecordingTokens, A = NoPlanStore, G = GitHubClient> {
    pub(crate) responder: ApprovalResponder<Fakes<D, T, A, G>>,
    /// The tokens the responder sends decisions through.
    pub(crate) tokens: Arc<T>,
}

impl<D, T, A, G> Deref for Wired<D, T, A, G> {
    type Target = ApprovalResponder<Fakes<D, T, A, G>>;

    fn deref(&self) -> &Self::Target {
        &self.responder
    }
}

impl<D, T, A, G> Wired<D, T, A, G> {
    /// The same responder, serving the run page to links signed under `key`.
    pub(crate) fn with_run_key(self, key: RunLinkKey) -> Self {
        Wired {
            responder: self.responder.with_run_key(key),
            tokens: self.tokens,
        }
    }
}

/// A responder without a plan store.
pub(crate) fn responder<D, T>(
    key: LinkKey,
    db: D,
    tokens: T,
    cipher: KmsTokenCipher,
) -> Wired<D, T> {
    responder_with_plans(key, db, tokens, cipher, None)
}

/// A responder reading saved plans from `plans` when given.
pub(crate) fn responder_with_plans<D, T, A>(
    key: LinkKey,
    db: D,
    tokens: T,
    cipher: KmsTokenCipher,
    plans: Option<A>,
) -> Wired<D, T, A> {
    wire(key, db, tokens, cipher, plans, None)
}

/// A responder counting votes from the pull request through `github`.
pub(crate) fn responder_with_github<D, T, G>(
    key: LinkKey,
    db: D,
    tokens: T,
    cipher: KmsTokenCipher,
    github: G,
) -> Wired<D, T, NoPlanStore, G> {
    wire(key, db, tokens, cipher, None, Some(github))
}

fn wire<D, T, A, G>(
    key: LinkKey,
    db: D,
    tokens: T,
    cipher: KmsTokenCipher,
    plans: Option<A>,
    github: Option<G>,
) -> Wired<D, T, A, G> {
    let tokens = Arc::new(tokens);
    let fakes = Fakes {
        db,
        tokens: tokens.clone(),
        cipher,
        plans,
        github,
    };
    Wired {
        responder: ApprovalResponder::new(key, fakes),
        tokens,
    }
}
