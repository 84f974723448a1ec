//! Replays a run in simulated time, so scheduling rules can be compared on the
//! same graph and durations: the runner pool, Terragrunt's old run groups, and
//! the lower bound no schedule can beat.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::priority::bottom_levels;
use super::task_graph::TaskGraph;
use super::{Pacing, PoolConfig, RunnerPool, TaskState};
use crate::error::{EngineError, Result};

/// When each task ran in a simulated run. Tasks that never started have `NaN`
/// start and finish times (see `states`).
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    /// Each task's simulated start, by task index.
    pub start: Vec<f64>,
    /// Each task's simulated finish, by task index.
    pub finish: Vec<f64>,
    /// Tasks in the order they started.
    pub order: Vec<usize>,
    /// Time the last task finished (0 for an empty graph).
    pub makespan: f64,
    /// Final state of each task.
    pub states: Vec<TaskState>,
}

impl Schedule {
    fn empty(n: usize) -> Self {
        Schedule {
            start: vec![f64::NAN; n],
            finish: vec![f64::NAN; n],
            order: Vec::with_capacity(n),
            makespan: 0.0,
            states: vec![TaskState::Waiting; n],
        }
    }
}

/// Event-driven simulation of a [`RunnerPool`] where every task succeeds and
/// takes `durations[task]` seconds. Priorities come from the graph's recorded
/// durations, so passing different actual durations measures how much
/// estimation error costs.
pub fn simulate(graph: &TaskGraph, config: &PoolConfig, durations: &[f64]) -> Result<Schedule> {
    simulate_with_failures(graph, config, durations, &[])
}

/// [`simulate`] where task `t` fails after its duration if `fails[t]` is true
/// (missing entries succeed).
pub fn simulate_with_failures(
    graph: &TaskGraph,
    config: &PoolConfig,
    durations: &[f64],
    fails: &[bool],
) -> Result<Schedule> {
    check_durations(graph, durations)?;
    run(RunnerPool::new(graph.clone(), *config)?, durations, fails)
}

/// [`simulate`] under a [`Pacing`]: group caps, and milestones that take no
/// runner (they never appear in `order`; their start and finish stay `NaN`).
pub fn simulate_paced(
    graph: &TaskGraph,
    config: &PoolConfig,
    pacing: &Pacing,
    durations: &[f64],
) -> Result<Schedule> {
    check_durations(graph, durations)?;
    run(
        RunnerPool::paced(graph.clone(), *config, pacing.clone())?,
        durations,
        &[],
    )
}

fn run(mut pool: RunnerPool, durations: &[f64], fails: &[bool]) -> Result<Schedule> {
    let mut schedule = Schedule::empty(pool.graph().len());
    // Min-heap of (finish time, task): equal times resolve by index, so runs repeat exactly.
    let mut running: BinaryHeap<Reverse<(Time, usize)>> = BinaryHeap::new();
    let mut now = 0.0;
    loop {
        for t in pool.start_ready() {
            schedule.start[t] = now;
            schedule.finish[t] = now + durations[t];
            schedule.order.push(t);
            running.push(Reverse((Time(schedule.finish[t]), t)));
        }
        let Some(Reverse((Time(at), t))) = running.pop() else {
            break;
        };
        now = at;
        pool.finish(t, !fails.get(t).copied().unwrap_or(false))?;
        // Everything finishing at this instant is in before choosing what to start,
        // or the choice would see only part of the ready tasks.
        while let Some(&Reverse((Time(next), u))) = running.peek() {
            if next != now {
                break;
            }
            running.pop();
            pool.finish(u, !fails.get(u).copied().unwrap_or(false))?;
        }
        schedule.makespan = now;
    }
    schedule.states = pool.states().to_vec();
    Ok(schedule)
}

/// Terragrunt's old run groups: tasks are grouped by depth (longest chain of
/// dependencies below them), a group starts only when the previous one has
/// fully finished, and within a group tasks take the earliest free of
/// `max_parallel` runners in index order. Every task succeeds.
pub fn simulate_run_groups(
    graph: &TaskGraph,
    max_parallel: usize,
    durations: &[f64],
) -> Result<Schedule> {
    if max_parallel == 0 {
        return Err(EngineError::Scheduler(
            "max_parallel must be at least 1".to_string(),
        ));
    }
    graph.validate()?;
    check_durations(graph, durations)?;
    let order = graph.topo_order()?;
    let mut depth = vec![0usize; graph.len()];
    for &t in &order {
        depth[t] = graph
            .dependencies(t)
            .iter()
            .map(|&d| depth[d] + 1)
            .max()
            .unwrap_or(0);
    }
    let groups = depth.iter().max().map_or(0, |&d| d + 1);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); groups];
    for (t, &d) in depth.iter().enumerate() {
        members[d].push(t);
    }
    let mut schedule = Schedule::empty(graph.len());
    let mut group_start = 0.0;
    for group in members {
        let mut runners: BinaryHeap<Reverse<Time>> = (0..max_parallel)
            .map(|_| Reverse(Time(group_start)))
            .collect();
        let mut group_end = group_start;
        for t in group {
            let free = runners.pop().map_or(group_start, |Reverse(Time(at))| at);
            let end = free + durations[t];
            schedule.start[t] = free;
            schedule.finish[t] = end;
            schedule.order.push(t);
            schedule.states[t] = TaskState::Succeeded;
            runners.push(Reverse(Time(end)));
            group_end = f64::max(group_end, end);
        }
        group_start = group_end;
    }
    schedule.makespan = group_start;
    Ok(schedule)
}

/// No schedule on `max_parallel` runners can finish sooner than the longest
/// chain of durations, nor sooner than the total work spread evenly. Missing
/// durations fall back to the graph's recorded ones; tasks on a cycle are
/// ignored by the chain term.
pub fn lower_bound(graph: &TaskGraph, max_parallel: usize, durations: &[f64]) -> f64 {
    let critical = bottom_levels(graph, durations)
        .into_iter()
        .fold(0.0, f64::max);
    let total: f64 = (0..graph.len())
        .map(|t| durations.get(t).copied().unwrap_or(graph.duration(t)))
        .sum();
    f64::max(critical, total / max_parallel.max(1) as f64)
}

fn check_durations(graph: &TaskGraph, durations: &[f64]) -> Result<()> {
    if durations.len() != graph.len() {
        return Err(EngineError::Scheduler(format!(
            "{} durations for {} tasks",
            durations.len(),
            graph.len()
        )));
    }
    if let Some((t, d)) = durations
        .iter()
        .enumerate()
        .find(|&(_, d)| !(d.is_finite() && *d >= 0.0))
    {
        return Err(EngineError::Scheduler(format!(
            "duration of task {t} is {d} (must be finite and not negative)"
        )));
    }
    Ok(())
}

/// A time that sorts; durations are checked finite, so `total_cmp` agrees with `<`.
#[derive(Debug, Clone, Copy)]
struct Time(f64);

impl Ord for Time {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl PartialOrd for Time {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Time {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}

impl Eq for Time {}

#[cfg(test)]
mod tests {
    use super::super::Priority;
    use super::*;

    fn cfg(max_parallel: usize) -> PoolConfig {
        PoolConfig {
            max_parallel,
            fail_fast: false,
            priority: Priority::CriticalPath,
        }
    }

    #[test]
    fn chain_runs_back_to_back() {
        let mut g = TaskGraph::new(3);
        g.add_dependency(1, 0);
        g.add_dependency(2, 1);
        let s = simulate(&g, &cfg(4), &[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(s.start, vec![0.0, 1.0, 3.0]);
        assert_eq!(s.makespan, 6.0);
        assert_eq!(s.order, vec![0, 1, 2]);
        assert_eq!(lower_bound(&g, 4, &[1.0, 2.0, 3.0]), 6.0);
    }

    #[test]
    fn run_groups_wait_for_the_slowest_of_a_group() {
        // The RFC's example: slow and fast units, each with one dependent.
        let mut g = TaskGraph::new(4);
        g.add_dependency(2, 0);
        g.add_dependency(3, 1);
        let d = [8.0, 2.0, 1.0, 6.0];
        assert_eq!(simulate_run_groups(&g, 4, &d).unwrap().makespan, 14.0);
        assert_eq!(simulate(&g, &cfg(4), &d).unwrap().makespan, 9.0);
    }

    #[test]
    fn failures_leave_dependents_unstarted() {
        let mut g = TaskGraph::new(3);
        g.add_dependency(1, 0);
        let s = simulate_with_failures(&g, &cfg(1), &[1.0, 1.0, 1.0], &[true]).unwrap();
        assert_eq!(
            s.states,
            vec![
                TaskState::Failed,
                TaskState::AncestorFailed,
                TaskState::Succeeded
            ]
        );
        assert!(s.start[1].is_nan());
        assert_eq!(s.makespan, 2.0);
    }

    #[test]
    fn wrong_number_of_durations_is_an_error() {
        let g = TaskGraph::new(2);
        let err = simulate(&g, &cfg(1), &[1.0]).unwrap_err();
        assert_eq!(err.to_string(), "scheduler: 1 durations for 2 tasks");
    }
}
