//! trigger_sf's ports as one bundle: [`TriggerSf`](crate::TriggerSf) is
//! generic over a single [`TriggerPorts`] instead of one type parameter per
//! port, so adding a port changes this trait, [`Production`] and the tests'
//! struct of fakes — not every step file's `impl` block and builder of the
//! handler. The trunk sweep is the optional port: it answers `None` when off,
//! and [`NoTrunkSweep`](crate::NoTrunkSweep) fills its associated types then.

use live_ci_aws::{EcsTaskLauncher, SnsNotifications, SsmParamStore};
use live_ci_core::port::{
    ApprovalStore, BranchHead, DeployCommentStore, ExecutionStore, GitHost, Notifications,
    ParamStore, RunStore, SweepStore, TaskLauncher, WorkflowEngine,
};
use live_ci_github::GitHubClient;
use live_ci_metadb::AnyMetadb;
use live_ci_stepfunctions::SfnEngine;

use crate::handler::TrunkSweep;

/// Everything trigger_sf talks to.
pub trait TriggerPorts: Send + Sync {
    /// Runs, executions, the sweep's queries, approvals and deploy comments.
    type Metadb: RunStore + ExecutionStore + SweepStore + ApprovalStore + DeployCommentStore;
    /// Starts and describes the units' Step Functions executions.
    type Engine: WorkflowEngine;
    /// The merge lock's mirror and the commit status config.
    type Params: ParamStore;
    /// Where statuses and deploy comments go.
    type GitHub: GitHost;
    /// Where the trunk points, for the sweep's trunk check.
    type Head: BranchHead;
    /// Starts create-deploy-stack (trunk check) and the drift task.
    type Launcher: TaskLauncher;
    /// Where "run finished" and "run failed" go (`notify.rs`).
    type Notifications: Notifications;

    /// The run state every step reads and guards its writes with.
    fn metadb(&self) -> &Self::Metadb;
    /// The state machine the units' executions run in.
    fn engine(&self) -> &Self::Engine;
    /// The merge lock parameter and the commit status switches.
    fn params(&self) -> &Self::Params;
    /// [`NoGitHost`](live_ci_core::status::NoGitHost) without a GitHub
    /// token: no statuses, and the merge lock's are left to the receiver.
    fn github(&self) -> &Self::GitHub;
    /// The trunk check's head and launcher, borrowed; `None`: the sweep does
    /// not look at the trunk head and `{"drift": true}` is refused.
    fn trunk(&self) -> Option<TrunkSweep<&Self::Head, &Self::Launcher>>;
    /// Off ([`NoNotifications`](live_ci_core::port::NoNotifications), or a
    /// no-op topic) unless configured.
    fn notifications(&self) -> &Self::Notifications;
}

/// The ports `main.rs` wires: the metadb, Step Functions, SSM, SNS, and
/// GitHub (`G`: the client, or [`NoGitHost`](live_ci_core::status::NoGitHost)
/// without a token) with the trunk check on ECS when both are configured.
#[derive(Debug)]
pub struct Production<G = GitHubClient> {
    /// PostgreSQL or Aurora over the Data API, as configured.
    pub metadb: AnyMetadb,
    /// The deploy state machine's executions.
    pub engine: SfnEngine,
    /// The merge lock parameter and the commit status config.
    pub params: SsmParamStore,
    /// The GitHub client, or `NoGitHost` without credentials.
    pub github: G,
    /// Only with a GitHub client and the ECS settings.
    pub trunk: Option<TrunkSweep<GitHubClient, EcsTaskLauncher>>,
    /// A no-op without `NOTIFICATION_TOPIC_ARN`.
    pub notifications: SnsNotifications,
}

impl<G: GitHost> TriggerPorts for Production<G> {
    type Metadb = AnyMetadb;
    type Engine = SfnEngine;
    type Params = SsmParamStore;
    type GitHub = G;
    type Head = GitHubClient;
    type Launcher = EcsTaskLauncher;
    type Notifications = SnsNotifications;

    fn metadb(&self) -> &AnyMetadb {
        &self.metadb
    }

    fn engine(&self) -> &SfnEngine {
        &self.engine
    }

    fn params(&self) -> &SsmParamStore {
        &self.params
    }

    fn github(&self) -> &G {
        &self.github
    }

    fn trunk(&self) -> Option<TrunkSweep<&GitHubClient, &EcsTaskLauncher>> {
        self.trunk.as_ref().map(TrunkSweep::borrowed)
    }

    fn notifications(&self) -> &SnsNotifications {
        &self.notifications
    }
}
