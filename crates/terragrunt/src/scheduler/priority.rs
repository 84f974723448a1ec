//! Which ready task goes first: priority values per rule, and the total order
//! the ready queue uses so ties never depend on hash or heap internals.

use std::cmp::Ordering;

use super::Priority;
use super::task_graph::TaskGraph;

/// Bottom level of every task: its own recorded duration plus the longest chain
/// of recorded durations through its dependents to the end of the graph.
/// Starting the task with the largest value first is the classic critical-path
/// list-scheduling rule (HLFET): the work that bounds the makespan never waits
/// behind work that has slack. A store that claims ready tasks itself gets the
/// pool's exact order with `ORDER BY priority DESC, task ASC`.
///
/// A graph that fails [`TaskGraph::validate`] still gets a value per task;
/// tasks that lead into a cycle count only the acyclic part behind them.
pub fn critical_path_priorities(graph: &TaskGraph) -> Vec<f64> {
    bottom_levels(graph, graph.durations())
}

/// Bottom levels for arbitrary durations (the simulator measures with actual
/// durations, the pool ranks with recorded ones).
pub(crate) fn bottom_levels(graph: &TaskGraph, durations: &[f64]) -> Vec<f64> {
    let duration = |t: usize| durations.get(t).copied().unwrap_or(graph.duration(t));
    let (order, _) = graph.kahn();
    let mut level: Vec<f64> = (0..graph.len()).map(duration).collect();
    for &t in order.iter().rev() {
        let tail = graph
            .dependents(t)
            .iter()
            .map(|&d| level[d])
            .fold(0.0, f64::max);
        level[t] = duration(t) + tail;
    }
    level
}

/// The value [`Priority`] ranks by; larger goes first.
pub(crate) fn priorities(graph: &TaskGraph, rule: Priority) -> Vec<f64> {
    match rule {
        Priority::CriticalPath => critical_path_priorities(graph),
        // The RFC sorts "units with more dependencies before units with less
        // dependencies": the number of tasks this one waits for.
        Priority::MostDependencies => (0..graph.len())
            .map(|t| graph.dependencies(t).len() as f64)
            .collect(),
        // Order comes from when a task became ready, not from a value.
        Priority::Fifo => vec![0.0; graph.len()],
    }
}

/// An entry of the ready queue. `BinaryHeap` pops the greatest, so greater means
/// "start sooner": higher priority, then became ready earlier (only differs under
/// [`Priority::Fifo`]), then lower index.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadyKey {
    pub priority: f64,
    pub ready_seq: u64,
    pub task: usize,
}

impl Ord for ReadyKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.priority
            .total_cmp(&other.priority)
            .then_with(|| other.ready_seq.cmp(&self.ready_seq))
            .then_with(|| other.task.cmp(&self.task))
    }
}

impl PartialOrd for ReadyKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for ReadyKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for ReadyKey {}

#[cfg(test)]
mod tests {
    use std::collections::BinaryHeap;

    use super::*;

    #[test]
    fn bottom_level_is_longest_tail_including_own_duration() {
        // 0 -> 1 -> 3 and 0 -> 2 -> 3, where "->" points at the dependent.
        let mut g = TaskGraph::new(4);
        g.add_dependency(1, 0);
        g.add_dependency(2, 0);
        g.add_dependency(3, 1);
        g.add_dependency(3, 2);
        for (t, d) in [(0, 1.0), (1, 5.0), (2, 2.0), (3, 3.0)] {
            g.set_duration(t, d);
        }
        assert_eq!(critical_path_priorities(&g), vec![9.0, 8.0, 5.0, 3.0]);
    }

    #[test]
    fn most_dependencies_counts_what_a_task_waits_for() {
        let mut g = TaskGraph::new(3);
        g.add_dependency(2, 0);
        g.add_dependency(2, 1);
        assert_eq!(
            priorities(&g, Priority::MostDependencies),
            vec![0.0, 0.0, 2.0]
        );
    }

    #[test]
    fn heap_pops_priority_then_ready_order_then_lower_index() {
        let key = |priority, ready_seq, task| ReadyKey {
            priority,
            ready_seq,
            task,
        };
        let mut heap: BinaryHeap<ReadyKey> = [
            key(1.0, 0, 5),
            key(2.0, 3, 9),
            key(1.0, 0, 2),
            key(1.0, 1, 0),
        ]
        .into_iter()
        .collect();
        let order: Vec<usize> = std::iter::from_fn(|| heap.pop().map(|k| k.task)).collect();
        assert_eq!(order, vec![9, 2, 5, 0]);
    }
}
