//! The receiver's ports in tests: one struct of fakes. The test keeps `Arc`
//! handles to the fakes it inspects (the parameters it changes behind a warm
//! receiver, the tasks started, the invokes made), so the handler needs no
//! getters for them.

use std::sync::{Arc, Mutex};

use live_ci_core::port::ParamStore;
use live_ci_github::GitHubClient;
use live_ci_receiver::{Deliveries, LockTruth, NoDeliveryLog, NoLockCheck, ReceiverPorts};
use live_ci_testkit::params::MemoryParams;
use live_ci_testkit::tasks::RecordingLauncher;

/// The fakes of one receiver: GitHub is the real client on wiremock; the
/// metadb's lock row (`lock`) and deliveries log (`deliveries`) are off
/// unless given; votes go to `votes`' recording invoker when set.
pub(crate) struct Fakes<P = MemoryParams, T = NoLockCheck, D = NoDeliveryLog> {
    pub(crate) params: Arc<P>,
    pub(crate) github: GitHubClient,
    pub(crate) launcher: Arc<RecordingLauncher>,
    pub(crate) lock: Option<T>,
    pub(crate) deliveries: Option<D>,
    pub(crate) votes: Option<(Arc<RecordingInvoker>, String)>,
}

impl<P: ParamStore> Fakes<P> {
    /// Parameters, GitHub and a launcher; every optional port off.
    pub(crate) fn new(
        params: Arc<P>,
        github: GitHubClient,
        launcher: Arc<RecordingLauncher>,
    ) -> Self {
        Fakes {
            params,
            github,
            launcher,
            lock: None,
            deliveries: None,
            votes: None,
        }
    }
}

impl<P: ParamStore, T: LockTruth, D: Deliveries> ReceiverPorts for Fakes<P, T, D> {
    type Params = P;
    type GitHub = GitHubClient;
    type Launcher = RecordingLauncher;
    type Lock = T;
    type Deliveries = D;
    type Votes = RecordingInvoker;

    fn params(&self) -> &P {
        &self.params
    }

    fn github(&self) -> &GitHubClient {
        &self.github
    }

    fn launcher(&self) -> &RecordingLauncher {
        &self.launcher
    }

    fn lock_truth(&self) -> Option<&T> {
        self.lock.as_ref()
    }

    fn deliveries(&self) -> Option<&D> {
        self.deliveries.as_ref()
    }

    fn votes(&self) -> Option<(&RecordingInvoker, &str)> {
        self.votes
            .as_ref()
            .map(|(invoker, name)| (&**invoker, name.as_str()))
    }
}

/// Records every invoke (function, payload); refuses them all when `refuse`.
#[derive(Debug, Default)]
pub(crate) struct RecordingInvoker {
    pub(crate) calls: Mutex<Vec<(String, String)>>,
    pub(crate) refuse: bool,
}

#[derive(Debug, thiserror::Error)]
#[error("lambda refused the invoke")]
pub(crate) struct InvokeRefused;

impl live_ci_core::port::Classify for InvokeRefused {
    fn kind(&self) -> live_ci_core::port::ErrorKind {
        live_ci_core::port::ErrorKind::Retryable
    }
}

impl live_ci_core::port::FunctionInvoker for RecordingInvoker {
    type Error = InvokeRefused;

    async fn invoke(&self, function: &str, payload: &str) -> Result<(), InvokeRefused> {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((function.to_string(), payload.to_string()));
        if self.refuse {
            return Err(InvokeRefused);
        }
        Ok(())
    }
}
