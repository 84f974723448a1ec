//! The runner pool as a state machine: the caller starts tasks and reports
//! results; the pool decides what may run next and what can no longer run.

use std::collections::{BTreeMap, BinaryHeap};

use super::priority::{ReadyKey, priorities};
use super::task_graph::TaskGraph;
use super::{PoolConfig, TaskState};
use crate::error::{CoreError, Result};

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
}

impl RunnerPool {
    /// Validates the graph and marks tasks without dependencies ready.
    pub fn new(graph: TaskGraph, config: PoolConfig) -> Result<Self> {
        if config.max_parallel == 0 {
            return Err(CoreError::Scheduler(
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
        };
        pool.count[TaskState::Waiting.position()] = n;
        for t in 0..n {
            if pool.blocked_by[t] == 0 {
                pool.make_ready(t);
            }
        }
        Ok(pool)
    }

    pub fn graph(&self) -> &TaskGraph {
        &self.graph
    }

    pub fn config(&self) -> &PoolConfig {
        &self.config
    }

    /// Starts the highest-priority ready task if a runner is free; it is then
    /// `Running` until [`RunnerPool::finish`] is called for it.
    pub fn start_next(&mut self) -> Option<usize> {
        if self.running() >= self.config.max_parallel {
            return None;
        }
        let key = self.ready.pop()?;
        self.set(key.task, TaskState::Running);
        Some(key.task)
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
            return Err(CoreError::Scheduler(format!(
                "cannot finish task {task}: the graph has only {} tasks",
                self.state.len()
            )));
        };
        if current != TaskState::Running {
            return Err(CoreError::Scheduler(format!(
                "cannot finish task {task}: it is {}, not running",
                current.as_str()
            )));
        }
        self.events += 1;
        let mut changes = Vec::new();
        if succeeded {
            self.set(task, TaskState::Succeeded);
            changes.push((task, TaskState::Succeeded));
            for i in 0..self.graph.dependents(task).len() {
                let d = self.graph.dependents(task)[i];
                self.blocked_by[d] -= 1;
                // A dependent aborted by fail-fast stays aborted.
                if self.blocked_by[d] == 0 && self.state[d] == TaskState::Waiting {
                    self.make_ready(d);
                    changes.push((d, TaskState::Ready));
                }
            }
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

    pub fn count_of(&self, state: TaskState) -> usize {
        self.count[state.position()]
    }

    pub fn running(&self) -> usize {
        self.count_of(TaskState::Running)
    }

    /// The value the ready queue ranks `task` by (larger starts sooner): its
    /// bottom level, its number of dependencies, or 0 under FIFO.
    pub fn priority_of(&self, task: usize) -> f64 {
        self.priority[task]
    }

    fn make_ready(&mut self, task: usize) {
        self.set(task, TaskState::Ready);
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
}
