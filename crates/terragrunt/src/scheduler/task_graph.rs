//! The scheduler's view of work: task indices, "must finish first" edges and
//! recorded durations, with validation and a topological order.

use std::collections::HashSet;

use crate::error::{EngineError, Result};

/// Duration assumed for a task nobody has timed yet: every task then counts
/// the same, so critical-path priority degrades to "longest chain of tasks".
pub const DEFAULT_DURATION: f64 = 1.0;

/// `n` tasks, numbered `0..n`, with edges "`b` must finish (succeed) before `a`
/// starts". Problems found while building (edges to tasks that do not exist,
/// unusable durations, cycles) are kept and reported by [`TaskGraph::validate`],
/// so building never fails half-way.
#[derive(Debug, Clone)]
pub struct TaskGraph {
    deps: Vec<Vec<usize>>,
    dependents: Vec<Vec<usize>>,
    durations: Vec<f64>,
    // Duplicate edges would make a dependent wait for the same task twice.
    edges: HashSet<(usize, usize)>,
    bad_edges: Vec<(usize, usize)>,
    bad_durations: Vec<(usize, f64)>,
}

impl TaskGraph {
    /// A graph of `n` tasks (`0..n`), with no dependencies, each lasting
    /// [`DEFAULT_DURATION`] until [`TaskGraph::set_duration`].
    pub fn new(n: usize) -> Self {
        TaskGraph {
            deps: vec![Vec::new(); n],
            dependents: vec![Vec::new(); n],
            durations: vec![DEFAULT_DURATION; n],
            edges: HashSet::new(),
            bad_edges: Vec::new(),
            bad_durations: Vec::new(),
        }
    }

    /// `task` may start only after `must_finish_first` succeeded. Duplicates are
    /// ignored; indices out of range are reported by [`TaskGraph::validate`].
    pub fn add_dependency(&mut self, task: usize, must_finish_first: usize) {
        let n = self.len();
        if task >= n || must_finish_first >= n {
            self.bad_edges.push((task, must_finish_first));
            return;
        }
        if self.edges.insert((task, must_finish_first)) {
            self.deps[task].push(must_finish_first);
            self.dependents[must_finish_first].push(task);
        }
    }

    /// The recorded (expected) duration of `task` in seconds, used for
    /// critical-path priorities. Negative, NaN or infinite values and unknown
    /// tasks are reported by [`TaskGraph::validate`].
    pub fn set_duration(&mut self, task: usize, seconds: f64) {
        match self.durations.get_mut(task) {
            Some(d) if seconds.is_finite() && seconds >= 0.0 => *d = seconds,
            _ => self.bad_durations.push((task, seconds)),
        }
    }

    /// How many tasks the graph holds.
    pub fn len(&self) -> usize {
        self.deps.len()
    }

    /// Whether the graph holds no task.
    pub fn is_empty(&self) -> bool {
        self.deps.is_empty()
    }

    /// The recorded duration of `task` ([`DEFAULT_DURATION`] if never set).
    pub fn duration(&self, task: usize) -> f64 {
        self.durations[task]
    }

    /// Every recorded duration, by task.
    pub fn durations(&self) -> &[f64] {
        &self.durations
    }

    /// The tasks `task` waits for, in the order they were added.
    pub fn dependencies(&self, task: usize) -> &[usize] {
        &self.deps[task]
    }

    /// The tasks waiting for `task`, in the order they were added.
    pub fn dependents(&self, task: usize) -> &[usize] {
        &self.dependents[task]
    }

    /// Number of distinct edges.
    pub fn edge_count(&self) -> usize {
        self.edges.len()
    }

    /// Fails on the first problem recorded while building, then on a cycle,
    /// naming its tasks in dependency order with the first repeated at the end
    /// (`dependency cycle: 0 -> 2 -> 1 -> 0` means 0 waits for 2, 2 for 1, 1 for 0).
    pub fn validate(&self) -> Result<()> {
        if let Some(&(task, dep)) = self.bad_edges.first() {
            return Err(EngineError::Scheduler(format!(
                "task {task} depends on task {dep}, but the graph has only {} tasks",
                self.len()
            )));
        }
        if let Some(&(task, seconds)) = self.bad_durations.first() {
            return Err(if task >= self.len() {
                EngineError::Scheduler(format!(
                    "duration set for task {task}, but the graph has only {} tasks",
                    self.len()
                ))
            } else {
                EngineError::Scheduler(format!(
                    "duration of task {task} is {seconds} (must be finite and not negative)"
                ))
            });
        }
        self.topo_order().map(|_| ())
    }

    /// Dependencies before dependents (Kahn's algorithm; among tasks free at the
    /// same time, lower indices first only as far as a FIFO queue keeps them).
    /// On a cycle, the error names one.
    pub(crate) fn topo_order(&self) -> Result<Vec<usize>> {
        let (order, remaining) = self.kahn();
        if order.len() == self.len() {
            return Ok(order);
        }
        Err(EngineError::Scheduler(format!(
            "dependency cycle: {}",
            self.find_cycle(&remaining)
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(" -> ")
        )))
    }

    /// The topological prefix and, per task, how many dependencies were never
    /// released (non-zero exactly for tasks on or behind a cycle).
    pub(crate) fn kahn(&self) -> (Vec<usize>, Vec<usize>) {
        let mut remaining: Vec<usize> = self.deps.iter().map(Vec::len).collect();
        let mut order: Vec<usize> = (0..self.len()).filter(|&t| remaining[t] == 0).collect();
        let mut head = 0;
        while let Some(&t) = order.get(head) {
            head += 1;
            for &d in &self.dependents[t] {
                remaining[d] -= 1;
                if remaining[d] == 0 {
                    order.push(d);
                }
            }
        }
        (order, remaining)
    }

    /// Every task left over by Kahn's algorithm still waits for another left-over
    /// task, so walking "waits for" edges among them must come back to a task
    /// already seen; that loop is the cycle. Smallest indices are followed first
    /// and the result is rotated to start at its smallest task, so the message
    /// is the same on every run.
    fn find_cycle(&self, remaining: &[usize]) -> Vec<usize> {
        let Some(start) = (0..self.len()).find(|&t| remaining[t] > 0) else {
            return Vec::new();
        };
        let mut position = vec![usize::MAX; self.len()];
        let mut path = Vec::new();
        let mut current = start;
        while position[current] == usize::MAX {
            position[current] = path.len();
            path.push(current);
            let next = self.deps[current]
                .iter()
                .copied()
                .filter(|&d| remaining[d] > 0)
                .min();
            match next {
                Some(n) => current = n,
                // Unreachable by the invariant above; an empty walk beats a panic.
                None => return path,
            }
        }
        let mut cycle = path.split_off(position[current]);
        let smallest = cycle
            .iter()
            .enumerate()
            .min_by_key(|&(_, &t)| t)
            .map_or(0, |(i, _)| i);
        cycle.rotate_left(smallest);
        if let Some(&first) = cycle.first() {
            cycle.push(first);
        }
        cycle
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_ignored() {
        let mut g = TaskGraph::new(3);
        g.add_dependency(1, 0);
        g.add_dependency(1, 0);
        g.add_dependency(2, 1);
        assert_eq!(g.dependencies(1), &[0]);
        assert_eq!(g.dependents(0), &[1]);
        assert_eq!(g.edge_count(), 2);
        assert!(g.validate().is_ok());
    }

    #[test]
    fn out_of_range_edge_is_reported_on_validate() {
        let mut g = TaskGraph::new(2);
        g.add_dependency(1, 5);
        assert_eq!(
            g.validate().unwrap_err().to_string(),
            "scheduler: task 1 depends on task 5, but the graph has only 2 tasks"
        );
    }

    #[test]
    fn bad_durations_are_reported_on_validate() {
        let mut g = TaskGraph::new(2);
        g.set_duration(0, f64::NAN);
        assert!(g.validate().unwrap_err().to_string().contains("task 0"));
        let mut g = TaskGraph::new(2);
        g.set_duration(4, 3.0);
        assert!(g.validate().unwrap_err().to_string().contains("task 4"));
        let mut g = TaskGraph::new(2);
        g.set_duration(1, 3.0);
        assert_eq!(g.duration(0), DEFAULT_DURATION);
        assert_eq!(g.duration(1), 3.0);
    }

    #[test]
    fn cycle_is_named_in_order_from_its_smallest_task() {
        let mut g = TaskGraph::new(5);
        // 4 hangs off the cycle; it must not appear in the message.
        g.add_dependency(4, 3);
        g.add_dependency(3, 1);
        g.add_dependency(1, 2);
        g.add_dependency(2, 3);
        g.add_dependency(0, 4);
        assert_eq!(
            g.validate().unwrap_err().to_string(),
            "scheduler: dependency cycle: 1 -> 2 -> 3 -> 1"
        );
    }

    #[test]
    fn self_loop_is_a_cycle() {
        let mut g = TaskGraph::new(2);
        g.add_dependency(1, 1);
        assert_eq!(
            g.validate().unwrap_err().to_string(),
            "scheduler: dependency cycle: 1 -> 1"
        );
    }

    #[test]
    fn long_chain_orders_without_recursion() {
        let n = 50_000;
        let mut g = TaskGraph::new(n);
        for t in 1..n {
            g.add_dependency(t, t - 1);
        }
        assert_eq!(g.topo_order().unwrap(), (0..n).collect::<Vec<_>>());
    }
}
