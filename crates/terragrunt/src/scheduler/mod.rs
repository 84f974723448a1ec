//! The runner-pool scheduler: a pure state machine that starts tasks as soon as
//! their dependencies succeeded, within a concurrency bound, most urgent first.
//!
//! It knows task indices only; mapping units, accounts and destroy ordering onto
//! tasks is the caller's business. States follow the Terragrunt runner-pool RFC
//! and Fuel's task-based deployment: `Waiting → Ready → Running → Succeeded |
//! Failed`, with `AncestorFailed` for tasks behind a failure and `Aborted` for
//! tasks fail-fast never started.
//!
//! The default rule, [`Priority::CriticalPath`], starts the ready task with the
//! longest remaining chain of recorded durations; [`simulate`],
//! [`simulate_run_groups`] and [`lower_bound`] let the choice be measured.

mod pool;
mod priority;
mod simulate;
mod task_graph;

pub use pool::RunnerPool;
pub use priority::critical_path_priorities;
pub use simulate::{
    Schedule, lower_bound, simulate, simulate_paced, simulate_run_groups, simulate_with_failures,
};
pub use task_graph::{DEFAULT_DURATION, TaskGraph};

/// Where a task is in its life. Ordered as listed, which is also the order of
/// [`RunnerPool::counts`].
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Some dependency has not succeeded yet.
    Waiting,
    /// Every dependency succeeded; waiting for a free runner.
    Ready,
    /// Holding a runner.
    Running,
    /// Finished successfully.
    Succeeded,
    /// Finished with a failure.
    Failed,
    /// A dependency, direct or transitive, failed, so this task never runs.
    AncestorFailed,
    /// Never started because fail-fast (or a cancel) stopped the run.
    Aborted,
}

impl TaskState {
    /// Every state, in declaration order.
    pub const ALL: [TaskState; 7] = [
        TaskState::Waiting,
        TaskState::Ready,
        TaskState::Running,
        TaskState::Succeeded,
        TaskState::Failed,
        TaskState::AncestorFailed,
        TaskState::Aborted,
    ];

    /// The serde name, for messages and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Waiting => "waiting",
            TaskState::Ready => "ready",
            TaskState::Running => "running",
            TaskState::Succeeded => "succeeded",
            TaskState::Failed => "failed",
            TaskState::AncestorFailed => "ancestor_failed",
            TaskState::Aborted => "aborted",
        }
    }

    /// No further transition is possible.
    pub fn is_terminal(self) -> bool {
        !matches!(
            self,
            TaskState::Waiting | TaskState::Ready | TaskState::Running
        )
    }

    fn position(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for TaskState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the pool picks among ready tasks when there are more than free runners.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Priority {
    /// Longest remaining path to the end of the graph, by recorded duration,
    /// the task's own included (its bottom level).
    CriticalPath,
    /// The runner-pool RFC's rule: more dependencies first.
    MostDependencies,
    /// In the order tasks became ready.
    Fifo,
}

/// How a [`RunnerPool`] runs. Ties in priority always go to the lower index.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PoolConfig {
    /// Runners, i.e. tasks running at once; at least 1.
    pub max_parallel: usize,
    /// On the first failure, abort every task that has not started.
    pub fail_fast: bool,
    /// Which ready task gets a free runner first.
    pub priority: Priority,
}

/// Limits beyond the pool's runners, as the metadb's claim applies them: tasks
/// in a group (an account) of which at most the group's cap run at once, and
/// milestones (an account's "every unit done" anchor) that take no runner and
/// succeed the moment their dependencies have.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Pacing {
    /// The group of each task by index (missing or `None`: no group).
    pub group: Vec<Option<usize>>,
    /// The cap of each group by index (missing or `None`: the runners only).
    pub caps: Vec<Option<usize>>,
    /// The milestones by index (missing: not one).
    pub milestones: Vec<bool>,
}

impl Pacing {
    fn group_of(&self, task: usize) -> Option<usize> {
        self.group.get(task).copied().flatten()
    }

    fn cap_of(&self, group: usize) -> Option<usize> {
        self.caps.get(group).copied().flatten()
    }

    fn is_milestone(&self, task: usize) -> bool {
        self.milestones.get(task).copied().unwrap_or(false)
    }
}
