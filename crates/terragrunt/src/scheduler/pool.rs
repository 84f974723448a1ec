//! The runner pool as a state machine: the caller starts tasks and reports
//! results; the pool decides what may run next and what can no longer run.

use std::collections::{BTreeMap, BinaryHeap};

use super::priority::{ReadyKey, priorities};
use super::task_graph::TaskGraph;
use super::{Pacing, PoolConfig, TaskState};
use crate::error::{EngineError, Result};

/// Bounded-concurrency dispatcher over a validated [`TaskGraph`].
///
/// Every operation is O(log V) per task started plus O(E) over the whole run
/// for releasing and failing dependents, so a run over V tasks and E edges
/// costs O((V + E) log V) in total.
#[derive(Debug, Clone)]
pub struct RunnerPool {
    graph: TaskGraph,
    config: PoolConfig,
    priority: Vec<f64>,
    state: Vec<TaskState>,
    /// Dependencies not yet succeeded, per task.
    blocked_by: Vec<usize>,
    ready: BinaryHeap<ReadyKey>,
    /// Per [`TaskState::ALL`] position; kept so `is_finished` and `counts` are O(1).
    count: [usize; TaskState::ALL.len()],
    /// Bumped per `finish`, so FIFO orders by the event that released a task and
    /// tasks released together go by index.
    events: u64,
    /// Set once fail-fast has aborted everything unstarted; later failures have
    /// nothing left to abort, and skipping the scan keeps the run linear.
    aborted: bool,
    pacing: Pacing,
    /// Running tasks per group of `pacing`.
    running_in: Vec<usize>,
}

impl RunnerPool {
    /// Validates the graph and marks tasks without dependencies ready.
    pub fn new(graph: TaskGraph, config: PoolConfig) -> Result<Self> {
        Self::paced(graph, config, Pacing::default())
    }

    /// [`RunnerPool::new`] with group caps and milestones: a ready task whose
    /// group is at its cap waits (the next ready task may start instead), and
    /// a milestone succeeds as soon as it is ready, without a runner.
    pub fn paced(graph: TaskGraph, config: PoolConfig, pacing: Pacing) -> Result<Self> {
        if pacing.caps.contains(&Some(0)) {
            return Err(EngineError::Scheduler(
                "a group's cap must be at least 1".to_string(),
            ));
        }
        if config.max_parallel == 0 {
            return Err(EngineError::Scheduler(
                "max_parallel must be at least 1".to_string(),
            ));
        }
        graph.validate()?;
        let n = graph.len();
        let priority = priorities(&graph, config.priority);
        let blocked_by: Vec<usize> = (0..n).map(|t| graph.dependencies(t).len()).collect();
        let mut pool = RunnerPool {
            graph,
            config,
            priority,
            state: vec![TaskState::Waiting; n],
            blocked_by,
            ready: BinaryHeap::new(),
            count: [0; TaskState::ALL.len()],
            events: 0,
            aborted: false,
            running_in: vec![0; pacing.caps.len()],
            pacing,
        };
        pool.count[TaskState::Waiting.position()] = n;
        let mut changes = Vec::new();
        for t in 0..n {
            if pool.blocked_by[t] == 0 && pool.state[t] == TaskState::Waiting {
                pool.make_ready(t, &mut changes);
            }
        }
        Ok(pool)
    }

    /// The tasks and dependencies the pool runs.
    pub fn graph(&self) -> &TaskGraph {
        &self.graph
    }

    /// The pool's runners, fail-fast and priority settings.
    pub fn config(&self) -> &PoolConfig {
        &self.config
    }

    /// Starts the highest-priority ready task if a runner is free; it is then
    /// `Running` until [`RunnerPool::finish`] is called for it.
    pub fn start_next(&mut self) -> Option<usize> {
        if self.running() >= self.config.max_parallel {
            return None;
        }
        // Ready tasks of a group at its cap are passed over, and kept.
        let mut passed = Vec::new();
        let started = loop {
            let Some(key) = self.ready.pop() else {
                break None;
            };
            match self.pacing.group_of(key.task) {
                Some(g)
                    if self
                        .pacing
                        .cap_of(g)
                        .is_some_and(|cap| self.running_in[g] >= cap) =>
                {
                    passed.push(key);
                }
                _ => break Some(key.task),
            }
        };
        self.ready.extend(passed);
        let task = started?;
        self.set(task, TaskState::Running);
        if let Some(g) = self.pacing.group_of(task) {
            self.running_in[g] += 1;
        }
        Some(task)
    }

    /// Starts as many ready tasks as there are free runners, in priority order.
    pub fn start_ready(&mut self) -> Vec<usize> {
        std::iter::from_fn(|| self.start_next()).collect()
    }

    /// Records the result of a running task and returns every state change it
    /// caused, the task's own first: dependents that became `Ready`, or on
    /// failure every transitive dependent that became `AncestorFailed`, then
    /// with fail-fast every other unstarted task that became `Aborted`.
    pub fn finish(&mut self, task: usize, succeeded: bool) -> Result<Vec<(usize, TaskState)>> {
        let Some(&current) = self.state.get(task) else {
            return Err(EngineError::Scheduler(format!(
                "cannot finish task {task}: the graph has only {} tasks",
                self.state.len()
            )));
        };
        if current != TaskState::Running {
            return Err(EngineError::Scheduler(format!(
                "cannot finish task {task}: it is {}, not running",
                current.as_str()
            )));
        }
        self.events += 1;
        if let Some(g) = self.pacing.group_of(task) {
            self.running_in[g] -= 1;
        }
        let mut changes = Vec::new();
        if succeeded {
            self.succeed(task, &mut changes);
        } else {
            self.set(task, TaskState::Failed);
            changes.push((task, TaskState::Failed));
            self.fail_dependents(task, &mut changes);
            if self.config.fail_fast {
                changes.extend(self.abort());
            }
        }
        Ok(changes)
    }

    /// Records a success and readies what it released, milestones succeeding
    /// on the spot.
    fn succeed(&mut self, task: usize, changes: &mut Vec<(usize, TaskState)>) {
        self.set(task, TaskState::Succeeded);
        changes.push((task, TaskState::Succeeded));
        for i in 0..self.graph.dependents(task).len() {
            let d = self.graph.dependents(task)[i];
            self.blocked_by[d] -= 1;
            // A dependent aborted by fail-fast stays aborted.
            if self.blocked_by[d] == 0 && self.state[d] == TaskState::Waiting {
                self.make_ready(d, changes);
            }
        }
    }

    /// Aborts every task that has not started (fail-fast, or a cancelled run);
    /// running tasks are left to finish and their results are still recorded.
    /// Returns the tasks aborted, by index.
    pub fn abort(&mut self) -> Vec<(usize, TaskState)> {
        if self.aborted {
            return Vec::new();
        }
        self.aborted = true;
        self.ready.clear();
        let mut changes = Vec::new();
        for t in 0..self.state.len() {
            if matches!(self.state[t], TaskState::Waiting | TaskState::Ready) {
                self.set(t, TaskState::Aborted);
                changes.push((t, TaskState::Aborted));
            }
        }
        changes
    }

    /// A failed task's dependents can never run. Only `Waiting` tasks can be
    /// behind a failure (a ready task's dependencies all succeeded), and each
    /// is marked once, so all failures together walk each edge at most once.
    fn fail_dependents(&mut self, task: usize, changes: &mut Vec<(usize, TaskState)>) {
        let first = changes.len();
        let mut head = first;
        let mut current = task;
        loop {
            for i in 0..self.graph.dependents(current).len() {
                let d = self.graph.dependents(current)[i];
                if self.state[d] == TaskState::Waiting {
                    self.set(d, TaskState::AncestorFailed);
                    changes.push((d, TaskState::AncestorFailed));
                }
            }
            match changes.get(head) {
                Some(&(next, _)) => {
                    current = next;
                    head += 1;
                }
                None => break,
            }
        }
    }

    /// Panics if `task` is out of range, like slice indexing.
    pub fn state(&self, task: usize) -> TaskState {
        self.state[task]
    }

    /// Every task's state, by index.
    pub fn states(&self) -> &[TaskState] {
        &self.state
    }

    /// True when nothing is waiting, ready or running: the run is over.
    pub fn is_finished(&self) -> bool {
        self.count_of(TaskState::Waiting) == 0
            && self.count_of(TaskState::Ready) == 0
            && self.count_of(TaskState::Running) == 0
    }

    /// Number of tasks in each state; every state is present, zeros included.
    pub fn counts(&self) -> BTreeMap<TaskState, usize> {
        TaskState::ALL
            .iter()
            .map(|&s| (s, self.count_of(s)))
            .collect()
    }

    /// How many tasks are in `state` now.
    pub fn count_of(&self, state: TaskState) -> usize {
        self.count[state.position()]
    }

    /// How many tasks hold a runner now.
    pub fn running(&self) -> usize {
        self.count_of(TaskState::Running)
    }

    /// The value the ready queue ranks `task` by (larger starts sooner): its
    /// bottom level, its number of dependencies, or 0 under FIFO.
    pub fn priority_of(&self, task: usize) -> f64 {
        self.priority[task]
    }

    fn make_ready(&mut self, task: usize, changes: &mut Vec<(usize, TaskState)>) {
        if self.pacing.is_milestone(task) {
            self.succeed(task, changes);
            return;
        }
        self.set(task, TaskState::Ready);
        changes.push((task, TaskState::Ready));
        let ready_seq = match self.config.priority {
            super::Priority::Fifo => self.events,
            _ => 0,
        };
        self.ready.push(ReadyKey {
            priority: self.priority[task],
            ready_seq,
            task,
        });
    }

    fn set(&mut self, task: usize, to: TaskState) {
        let from = std::mem::replace(&mut self.state[task], to);
        self.count[from.position()] -= 1;
        self.count[to.position()] += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::super::Priority;
    use super::*;

    fn config(max_parallel: usize, fail_fast: bool) -> PoolConfig {
        PoolConfig {
            max_parallel,
            fail_fast,
            priority: Priority::CriticalPath,
        }
    }

    #[test]
    fn zero_parallelism_is_rejected() {
        let err = RunnerPool::new(TaskGraph::new(1), config(0, false)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "scheduler: max_parallel must be at least 1"
        );
    }

    #[test]
    fn counts_track_every_transition() {
        let mut g = TaskGraph::new(3);
        g.add_dependency(1, 0);
        let mut pool = RunnerPool::new(g, config(1, false)).unwrap();
        assert_eq!(pool.count_of(TaskState::Ready), 2);
        assert_eq!(pool.count_of(TaskState::Waiting), 1);
        let t = pool.start_next().unwrap();
        assert_eq!(t, 0, "0 heads the longer chain");
        assert_eq!(pool.start_next(), None, "one runner only");
        pool.finish(0, true).unwrap();
        assert_eq!(pool.counts()[&TaskState::Ready], 2);
        assert_eq!(pool.counts().values().sum::<usize>(), 3);
    }

    #[test]
    fn fifo_orders_by_release_then_index() {
        let mut g = TaskGraph::new(4);
        g.add_dependency(3, 0);
        let mut pool = RunnerPool::new(
            g,
            PoolConfig {
                max_parallel: 1,
                fail_fast: false,
                priority: Priority::Fifo,
            },
        )
        .unwrap();
        assert_eq!(pool.start_next(), Some(0));
        pool.finish(0, true).unwrap();
        // 3 became ready after 1 and 2, so it waits behind them despite nothing else.
        assert_eq!(pool.start_next(), Some(1));
        pool.finish(1, true).unwrap();
        assert_eq!(pool.start_next(), Some(2));
        pool.finish(2, true).unwrap();
        assert_eq!(pool.start_next(), Some(3));
    }

    #[test]
    fn a_groups_cap_passes_over_its_ready_tasks_and_milestones_take_no_runner() {
        // 0, 1, 2 in group 0 (cap 1), 3 in group 1 (no cap); milestone 4
        // after 0..=2, and 5 after the milestone.
        let mut g = TaskGraph::new(6);
        for t in 0..3 {
            g.add_dependency(4, t);
        }
        g.add_dependency(5, 4);
        let pacing = Pacing {
            group: vec![Some(0), Some(0), Some(0), Some(1), None, None],
            caps: vec![Some(1), None],
            milestones: vec![false, false, false, false, true, false],
        };
        let mut pool = RunnerPool::paced(g, config(2, false), pacing).unwrap();
        assert_eq!(pool.start_ready(), vec![0, 3], "1 and 2 wait for group 0");
        pool.finish(3, true).unwrap();
        assert_eq!(
            pool.start_ready(),
            Vec::<usize>::new(),
            "group 0 is at its cap"
        );
        pool.finish(0, true).unwrap();
        assert_eq!(pool.start_ready(), vec![1]);
        pool.finish(1, true).unwrap();
        assert_eq!(pool.start_ready(), vec![2]);
        let changes = pool.finish(2, true).unwrap();
        assert_eq!(
            changes,
            vec![
                (2, TaskState::Succeeded),
                (4, TaskState::Succeeded),
                (5, TaskState::Ready)
            ]
        );
        assert_eq!(pool.start_ready(), vec![5]);
        let err = RunnerPool::paced(
            TaskGraph::new(1),
            config(1, false),
            Pacing {
                caps: vec![Some(0)],
                ..Pacing::default()
            },
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "scheduler: a group's cap must be at least 1"
        );
    }
}
