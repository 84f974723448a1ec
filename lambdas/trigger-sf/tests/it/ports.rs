//! trigger_sf's ports in tests: one struct of fakes ([`TriggerPorts`]), and
//! [`Wired`], the handler with handles (`Arc`) to the fakes a test inspects,
//! so the metadb, the executions started, the parameters, the statuses, the
//! launches and the notifications are read from the fakes, not through
//! getters on the handler. Also included (`#[path]`) by the
//! `bench_status_change` example.
#![allow(dead_code)] // each including crate uses its part

use std::ops::Deref;
use std::sync::Arc;

use live_ci_core::port::{
    ApprovalStore, BranchHead, DeployCommentStore, ExecutionStore, GitHost, NoNotifications,
    Notifications, ParamStore, RunStore, SweepStore, TaskLauncher, WorkflowEngine,
};
use live_ci_trigger_sf::{HandlerConfig, NoTrunkSweep, TriggerPorts, TriggerSf, TrunkSweep};

/// A metadb (`M`), Step Functions (`W`), parameters (`P`) and GitHub (`G`);
/// the trunk check (head `H`, launcher `L`) off and notifications (`N`) a
/// no-op unless given.
#[derive(Debug)]
pub(crate) struct Fakes<M, W, P, G, H = NoTrunkSweep, L = NoTrunkSweep, N = NoNotifications> {
    pub(crate) metadb: Arc<M>,
    pub(crate) engine: Arc<W>,
    pub(crate) params: Arc<P>,
    pub(crate) github: Arc<G>,
    pub(crate) trunk: Option<TrunkSweep<Arc<H>, Arc<L>>>,
    pub(crate) notifications: Arc<N>,
}

impl<M, W, P, G> Fakes<M, W, P, G> {
    /// The four ports every handler has; no trunk check, no notifications.
    pub(crate) fn new(metadb: M, engine: W, params: P, github: G) -> Self {
        Fakes {
            metadb: Arc::new(metadb),
            engine: Arc::new(engine),
            params: Arc::new(params),
            github: Arc::new(github),
            trunk: None,
            notifications: Arc::new(NoNotifications),
        }
    }
}

impl<M, W, P, G, H, L, N> Fakes<M, W, P, G, H, L, N> {
    /// The same fakes with the sweep's trunk check on.
    pub(crate) fn with_trunk_sweep<H2, L2>(
        self,
        trunk: TrunkSweep<H2, L2>,
    ) -> Fakes<M, W, P, G, H2, L2, N> {
        Fakes {
            metadb: self.metadb,
            engine: self.engine,
            params: self.params,
            github: self.github,
            trunk: Some(TrunkSweep {
                head: Arc::new(trunk.head),
                launcher: Arc::new(trunk.launcher),
                cooldown_secs: trunk.cooldown_secs,
                deploy_direct_pushes: trunk.deploy_direct_pushes,
            }),
            notifications: self.notifications,
        }
    }

    /// The same fakes announcing finished runs to `notifications`.
    pub(crate) fn with_notifications<N2>(self, notifications: N2) -> Fakes<M, W, P, G, H, L, N2> {
        Fakes {
            metadb: self.metadb,
            engine: self.engine,
            params: self.params,
            github: self.github,
            trunk: self.trunk,
            notifications: Arc::new(notifications),
        }
    }
}

impl<M, W, P, G, H, L, N> TriggerPorts for Fakes<M, W, P, G, H, L, N>
where
    M: RunStore + ExecutionStore + SweepStore + ApprovalStore + DeployCommentStore,
    W: WorkflowEngine,
    P: ParamStore,
    G: GitHost,
    H: BranchHead,
    L: TaskLauncher,
    N: Notifications,
{
    type Metadb = M;
    type Engine = W;
    type Params = P;
    type GitHub = G;
    type Head = H;
    type Launcher = L;
    type Notifications = N;

    fn metadb(&self) -> &M {
        &self.metadb
    }

    fn engine(&self) -> &W {
        &self.engine
    }

    fn params(&self) -> &P {
        &self.params
    }

    fn github(&self) -> &G {
        &self.github
    }

    fn trunk(&self) -> Option<TrunkSweep<&H, &L>> {
        self.trunk.as_ref().map(|trunk| TrunkSweep {
            head: &*trunk.head,
            launcher: &*trunk.launcher,
            cooldown_secs: trunk.cooldown_secs,
            deploy_direct_pushes: trunk.deploy_direct_pushes,
        })
    }

    fn notifications(&self) -> &N {
        &self.notifications
    }
}

/// A handler on [`Fakes`], with a handle to each of them; derefs to the
/// handler.
#[derive(Debug)]
pub(crate) struct Wired<M, W, P, G, H = NoTrunkSweep, L = NoTrunkSweep, N = NoNotifications> {
    pub(crate) handler: TriggerSf<Fakes<M, W, P, G, H, L, N>>,
    pub(crate) metadb: Arc<M>,
    /// What was started, described, stopped.
    pub(crate) engine: Arc<W>,
    /// The merge lock parameter and the status switches.
    pub(crate) params: Arc<P>,
    /// The statuses and comments posted.
    pub(crate) github: Arc<G>,
    /// The trunk check's launcher (what was started); `None` without it.
    pub(crate) launcher: Option<Arc<L>>,
    /// What was announced.
    pub(crate) notifications: Arc<N>,
}

impl<M, W, P, G, H, L, N> Wired<M, W, P, G, H, L, N>
where
    Fakes<M, W, P, G, H, L, N>: TriggerPorts,
{
    /// The handler on `fakes`, keeping a handle to each.
    pub(crate) fn new(config: HandlerConfig, fakes: Fakes<M, W, P, G, H, L, N>) -> Self {
        Wired {
            metadb: fakes.metadb.clone(),
            engine: fakes.engine.clone(),
            params: fakes.params.clone(),
            github: fakes.github.clone(),
            launcher: fakes.trunk.as_ref().map(|trunk| trunk.launcher.clone()),
            notifications: fakes.notifications.clone(),
            handler: TriggerSf::new(config, fakes),
        }
    }
}

impl<M, W, P, G, H, L, N> Deref for Wired<M, W, P, G, H, L, N> {
    type Target = TriggerSf<Fakes<M, W, P, G, H, L, N>>;

    fn deref(&self) -> &Self::Target {
        &self.handler
    }
}
