//! The receiver's ports as one bundle: [`Receiver`](crate::Receiver) is
//! generic over a single [`ReceiverPorts`] instead of one type parameter per
//! port, so adding a port changes this trait, [`Production`] and the tests'
//! struct of fakes — not every `impl` block and builder of the handler.
//! The optional ports (the metadb's lock row, the shared deliveries log,
//! votes from GitHub) answer `None` when off; their "off" types
//! ([`NoLockCheck`](crate::NoLockCheck), [`NoDeliveryLog`](crate::NoDeliveryLog),
//! [`NoVotes`]) fill the associated type then.

use live_ci_aws::{EcsTaskLauncher, LambdaInvoker, SsmParamStore};
use live_ci_core::port::{
    FunctionInvoker, GitHost, ParamStore, PullRequestAuthority, TaskLauncher,
};
use live_ci_github::GitHubClient;
use live_ci_metadb::AnyMetadb;

use crate::dedupe::{Deliveries, MetadbDeliveries};
use crate::lock::{LockTruth, MetadbLock};

/// Everything the receiver talks to.
pub trait ReceiverPorts: Send + Sync {
    /// Parameter Store (SSM in production).
    type Params: ParamStore;
    /// The repository's host: statuses, comments, a pull request's author.
    type GitHub: GitHost + PullRequestAuthority;
    /// Starts the pr-plan and create-deploy-stack tasks (ECS in production).
    type Launcher: TaskLauncher;
    /// The merge lock's row ([`NoLockCheck`](crate::NoLockCheck) when off).
    type Lock: LockTruth;
    /// The shared deliveries log ([`NoDeliveryLog`](crate::NoDeliveryLog) when off).
    type Deliveries: Deliveries;
    /// Invokes approval_response with a vote comment ([`NoVotes`] when off).
    type Votes: FunctionInvoker;

    /// The webhook secret, the merge lock mirror and the status switches.
    fn params(&self) -> &Self::Params;
    /// Commit statuses, comments and pull requests' authors.
    fn github(&self) -> &Self::GitHub;
    /// Starts the ECS tasks.
    fn launcher(&self) -> &Self::Launcher;
    /// Confirms a "locked" parameter; `None`: the parameter is answered as is.
    fn lock_truth(&self) -> Option<&Self::Lock>;
    /// Claims deliveries across containers; `None`: only this container's
    /// memory de-duplicates.
    fn deliveries(&self) -> Option<&Self::Deliveries>;
    /// Hands vote comments to approval_response: the invoker and that
    /// function's name (ARN). `None`: votes from GitHub are not enabled.
    fn votes(&self) -> Option<(&Self::Votes, &str)>;
}

/// No votes from the pull request: a vote comment is answered "not enabled".
#[derive(Debug, Clone, Copy, Default)]
pub struct NoVotes;

impl FunctionInvoker for NoVotes {
    type Error = std::convert::Infallible;

    async fn invoke(&self, _: &str, _: &str) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// The ports `main.rs` wires: SSM, GitHub, ECS, the metadb (its lock row and
/// its deliveries log, always on) and Lambda for votes (on when
/// approval_response's name is configured).
#[derive(Debug)]
pub struct Production {
    /// SSM Parameter Store.
    pub params: SsmParamStore,
    /// The live repository's GitHub client (token or App).
    pub github: GitHubClient,
    /// ECS RunTask for the pr-plan and create-deploy-stack tasks.
    pub launcher: EcsTaskLauncher,
    /// The merge lock's row in the metadb.
    pub lock: MetadbLock<AnyMetadb>,
    /// The metadb's deliveries log.
    pub deliveries: MetadbDeliveries<AnyMetadb>,
    /// The invoker and approval_response's name (ARN).
    pub votes: Option<(LambdaInvoker, String)>,
}

impl ReceiverPorts for Production {
    type Params = SsmParamStore;
    type GitHub = GitHubClient;
    type Launcher = EcsTaskLauncher;
    type Lock = MetadbLock<AnyMetadb>;
    type Deliveries = MetadbDeliveries<AnyMetadb>;
    type Votes = LambdaInvoker;

    fn params(&self) -> &SsmParamStore {
        &self.params
    }

    fn github(&self) -> &GitHubClient {
        &self.github
    }

    fn launcher(&self) -> &EcsTaskLauncher {
        &self.launcher
    }

    fn lock_truth(&self) -> Option<&Self::Lock> {
        Some(&self.lock)
    }

    fn deliveries(&self) -> Option<&Self::Deliveries> {
        Some(&self.deliveries)
    }

    fn votes(&self) -> Option<(&LambdaInvoker, &str)> {
        self.votes
            .as_ref()
            .map(|(invoker, name)| (invoker, name.as_str()))
    }
}
