//! The runner-pool scheduler against its contract: state transitions, failure
//! propagation, fail-fast, the concurrency bound, and what critical-path
//! priority buys over the RFC's rule and the old run groups.

use live_ci_terragrunt::scheduler::{
    PoolConfig, Priority, RunnerPool, TaskGraph, TaskState, lower_bound, simulate,
    simulate_run_groups, simulate_with_failures,
};
use proptest::prelude::*;

use TaskState::*;

fn config(max_parallel: usize, fail_fast: bool, priority: Priority) -> PoolConfig {
    PoolConfig {
        max_parallel,
        fail_fast,
        priority,
    }
}

fn graph(n: usize, edges: &[(usize, usize)]) -> TaskGraph {
    let mut g = TaskGraph::new(n);
    for &(task, dep) in edges {
        g.add_dependency(task, dep);
    }
    g
}

/// 0 -> {1, 2} -> 3 -> 4 (arrows point at dependents), and 5 on its own.
fn diamond() -> TaskGraph {
    graph(6, &[(1, 0), (2, 0), (3, 1), (3, 2), (4, 3)])
}

#[test]
fn a_chain_walks_every_state_in_order() {
    let mut pool = RunnerPool::new(
        graph(2, &[(1, 0)]),
        config(2, false, Priority::CriticalPath),
    )
    .unwrap();
    assert_eq!((pool.state(0), pool.state(1)), (Ready, Waiting));
    assert_eq!(pool.start_ready(), vec![0]);
    assert_eq!(pool.state(0), Running);
    assert_eq!(
        pool.finish(0, true).unwrap(),
        vec![(0, Succeeded), (1, Ready)]
    );
    assert_eq!(pool.start_next(), Some(1));
    assert!(!pool.is_finished());
    assert_eq!(pool.finish(1, true).unwrap(), vec![(1, Succeeded)]);
    assert!(pool.is_finished());
    assert_eq!(pool.counts()[&Succeeded], 2);
}

#[test]
fn failure_marks_transitive_dependents_once_and_spares_the_rest() {
    let mut pool = RunnerPool::new(diamond(), config(4, false, Priority::CriticalPath)).unwrap();
    assert_eq!(pool.start_ready(), vec![0, 5]);
    pool.finish(0, true).unwrap();
    assert_eq!(pool.start_ready(), vec![1, 2]);
    assert_eq!(
        pool.finish(1, false).unwrap(),
        vec![(1, Failed), (3, AncestorFailed), (4, AncestorFailed)]
    );
    // The other side of the diamond still runs, and its success revives nothing.
    assert_eq!(pool.state(2), Running);
    assert_eq!(pool.finish(2, true).unwrap(), vec![(2, Succeeded)]);
    assert_eq!(pool.state(3), AncestorFailed);
    assert_eq!(pool.start_ready(), Vec::<usize>::new());
    pool.finish(5, true).unwrap();
    assert!(pool.is_finished());
    let counts = pool.counts();
    assert_eq!(
        (counts[&Succeeded], counts[&Failed], counts[&AncestorFailed]),
        (3, 1, 2)
    );
}

#[test]
fn both_sides_of_a_diamond_failing_mark_the_join_once() {
    let mut pool = RunnerPool::new(diamond(), config(4, false, Priority::Fifo)).unwrap();
    pool.start_ready();
    pool.finish(0, true).unwrap();
    pool.start_ready();
    assert_eq!(
        pool.finish(2, false).unwrap(),
        vec![(2, Failed), (3, AncestorFailed), (4, AncestorFailed)]
    );
    assert_eq!(pool.finish(1, false).unwrap(), vec![(1, Failed)]);
    assert_eq!(pool.counts()[&AncestorFailed], 2);
}

#[test]
fn fail_fast_aborts_unstarted_but_lets_running_tasks_finish() {
    // 0..3 are independent roots, 4 depends on 1; two runners.
    let mut pool =
        RunnerPool::new(graph(5, &[(4, 1)]), config(2, true, Priority::CriticalPath)).unwrap();
    assert_eq!(pool.start_ready(), vec![1, 0]);
    assert_eq!(
        pool.finish(0, false).unwrap(),
        vec![(0, Failed), (2, Aborted), (3, Aborted), (4, Aborted)]
    );
    assert_eq!(pool.start_ready(), Vec::<usize>::new());
    assert!(!pool.is_finished());
    // The running task's result still counts, and its dependent stays aborted.
    assert_eq!(pool.finish(1, true).unwrap(), vec![(1, Succeeded)]);
    assert_eq!(pool.state(4), Aborted);
    assert!(pool.is_finished());
}

#[test]
fn fail_fast_prefers_ancestor_failed_for_dependents_of_the_failure() {
    let mut pool = RunnerPool::new(diamond(), config(1, true, Priority::CriticalPath)).unwrap();
    assert_eq!(pool.start_ready(), vec![0]);
    assert_eq!(
        pool.finish(0, false).unwrap(),
        vec![
            (0, Failed),
            (1, AncestorFailed),
            (2, AncestorFailed),
            (3, AncestorFailed),
            (4, AncestorFailed),
            (5, Aborted)
        ]
    );
    assert!(pool.is_finished());
}

#[test]
fn finish_of_a_task_that_is_not_running_is_an_error() {
    let mut pool = RunnerPool::new(
        graph(3, &[(1, 0)]),
        config(1, false, Priority::CriticalPath),
    )
    .unwrap();
    let msg = |r: live_ci_terragrunt::Result<Vec<(usize, TaskState)>>| r.unwrap_err().to_string();
    assert_eq!(
        msg(pool.finish(1, true)),
        "scheduler: cannot finish task 1: it is waiting, not running"
    );
    assert_eq!(
        msg(pool.finish(0, true)),
        "scheduler: cannot finish task 0: it is ready, not running"
    );
    assert_eq!(
        msg(pool.finish(9, true)),
        "scheduler: cannot finish task 9: the graph has only 3 tasks"
    );
    pool.start_next();
    pool.finish(0, true).unwrap();
    assert_eq!(
        msg(pool.finish(0, false)),
        "scheduler: cannot finish task 0: it is succeeded, not running"
    );
    assert_eq!(
        pool.state(0),
        Succeeded,
        "a rejected finish changes nothing"
    );
}

#[test]
fn a_cycle_is_rejected_naming_its_tasks_in_order() {
    let g = graph(4, &[(0, 3), (3, 2), (2, 0), (1, 0)]);
    let err = RunnerPool::new(g, config(2, false, Priority::CriticalPath)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "scheduler: dependency cycle: 0 -> 3 -> 2 -> 0"
    );
}

#[test]
fn concurrency_bound_holds_with_many_ready_tasks() {
    let mut pool = RunnerPool::new(TaskGraph::new(10), config(3, false, Priority::Fifo)).unwrap();
    assert_eq!(pool.start_ready(), vec![0, 1, 2]);
    assert_eq!(pool.start_next(), None);
    pool.finish(1, true).unwrap();
    assert_eq!(pool.start_ready(), vec![3]);
    assert_eq!(pool.running(), 3);
}

#[test]
fn task_state_serializes_in_snake_case() {
    assert_eq!(
        serde_json::to_string(&AncestorFailed).unwrap(),
        "\"ancestor_failed\""
    );
    assert_eq!(
        serde_json::from_str::<TaskState>("\"aborted\"").unwrap(),
        Aborted
    );
}

/// Two runners. Roots r0, r1 (1 s) release at t = 1 a chain c1 -> c2 -> c3
/// (3 s each, behind r0 only) and two 3 s sinks d1, d2 behind both roots.
/// The RFC's rule starts d1 and d2 first because they have more dependencies,
/// so the chain starts late; run groups cut the chain at every group boundary.
/// Critical path starts c1 at once and meets the lower bound, so it is optimal.
#[test]
fn critical_path_beats_the_rfc_rule_and_run_groups() {
    let (r0, r1, c1, c2, c3, d1, d2) = (0, 1, 2, 3, 4, 5, 6);
    let mut g = graph(
        7,
        &[
            (c1, r0),
            (c2, c1),
            (c3, c2),
            (d1, r0),
            (d1, r1),
            (d2, r0),
            (d2, r1),
        ],
    );
    let durations = [1.0, 1.0, 3.0, 3.0, 3.0, 3.0, 3.0];
    for (t, &d) in durations.iter().enumerate() {
        g.set_duration(t, d);
    }
    let makespan = |priority| {
        simulate(&g, &config(2, false, priority), &durations)
            .unwrap()
            .makespan
    };
    assert_eq!(lower_bound(&g, 2, &durations), 10.0);
    assert_eq!(makespan(Priority::CriticalPath), 10.0);
    assert_eq!(makespan(Priority::MostDependencies), 13.0);
    assert_eq!(
        simulate_run_groups(&g, 2, &durations).unwrap().makespan,
        13.0
    );
}

/// A random DAG: edges only go from a later to an earlier position of a random
/// permutation, so the graph is acyclic while indices carry no order.
#[derive(Debug, Clone)]
struct Case {
    n: usize,
    edges: Vec<(usize, usize)>,
    durations: Vec<f64>,
    fails: Vec<bool>,
    picks: Vec<usize>,
    max_parallel: usize,
    fail_fast: bool,
    priority: Priority,
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..40)
        .prop_flat_map(|n| {
            (
                Just((0..n).collect::<Vec<_>>()).prop_shuffle(),
                prop::collection::vec((0..n, 0..n), 0..=3 * n),
                prop::collection::vec(1u32..100, n),
                prop::collection::vec(prop::bool::weighted(0.15), n),
                prop::collection::vec(any::<usize>(), n),
                1usize..6,
                any::<bool>(),
                prop_oneof![
                    Just(Priority::CriticalPath),
                    Just(Priority::MostDependencies),
                    Just(Priority::Fifo)
                ],
            )
        })
        .prop_map(
            |(perm, pairs, durations, fails, picks, max_parallel, fail_fast, priority)| Case {
                n: perm.len(),
                edges: pairs
                    .into_iter()
                    .filter(|(a, b)| a != b)
                    .map(|(a, b)| (perm[a.max(b)], perm[a.min(b)]))
                    .collect(),
                durations: durations.into_iter().map(f64::from).collect(),
                fails,
                picks,
                max_parallel,
                fail_fast,
                priority,
            },
        )
}

impl Case {
    fn graph(&self) -> TaskGraph {
        let mut g = graph(self.n, &self.edges);
        for (t, &d) in self.durations.iter().enumerate() {
            g.set_duration(t, d);
        }
        g
    }

    fn config(&self) -> PoolConfig {
        config(self.max_parallel, self.fail_fast, self.priority)
    }
}

fn fail(e: live_ci_terragrunt::EngineError) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

/// Drives the pool to the end, finishing running tasks in the order `picks`
/// chooses, and checks the invariants after every step.
fn drive(case: &Case) -> Result<(), TestCaseError> {
    let g = case.graph();
    let mut pool = RunnerPool::new(g.clone(), case.config()).map_err(fail)?;
    let mut started = vec![false; case.n];
    let mut running: Vec<usize> = Vec::new();
    let mut failed_yet = false;
    // Each finish retires a task, so more rounds than tasks means a livelock.
    for round in 0..=case.n {
        for t in pool.start_ready() {
            prop_assert!(!started[t], "task {t} started twice");
            prop_assert!(
                !(case.fail_fast && failed_yet),
                "{t} started after fail-fast"
            );
            for &d in g.dependencies(t) {
                prop_assert_eq!(pool.state(d), Succeeded, "{} started before {}", t, d);
            }
            started[t] = true;
            running.push(t);
        }
        prop_assert!(pool.running() <= case.max_parallel);
        prop_assert_eq!(pool.running(), running.len());
        // Work-conserving: a free runner is never left idle next to a ready task.
        prop_assert!(pool.running() == case.max_parallel || pool.count_of(Ready) == 0);
        if running.is_empty() {
            break;
        }
        prop_assert!(round < case.n, "pool did not terminate");
        let t = running.swap_remove(case.picks[round] % running.len());
        let ok = !case.fails[t];
        failed_yet |= !ok;
        let changes = pool.finish(t, ok).map_err(fail)?;
        prop_assert_eq!(changes[0], (t, if ok { Succeeded } else { Failed }));
        for &(u, s) in &changes {
            prop_assert_eq!(pool.state(u), s);
        }
    }
    prop_assert!(pool.is_finished());
    prop_assert_eq!(pool.counts().values().sum::<usize>(), case.n);

    let any_failed = (0..case.n).any(|t| pool.state(t) == Failed);
    for (t, &was_started) in started.iter().enumerate() {
        let state = pool.state(t);
        let deps: Vec<TaskState> = g.dependencies(t).iter().map(|&d| pool.state(d)).collect();
        let behind_failure = deps.iter().any(|s| matches!(s, Failed | AncestorFailed));
        prop_assert_eq!(was_started, matches!(state, Succeeded | Failed));
        prop_assert_eq!(state == Failed, was_started && case.fails[t]);
        match state {
            Succeeded => prop_assert!(deps.iter().all(|&s| s == Succeeded)),
            AncestorFailed => prop_assert!(behind_failure),
            Aborted => prop_assert!(case.fail_fast && any_failed),
            _ => {}
        }
        if !case.fail_fast {
            // Without fail-fast, a task is skipped exactly when something behind it failed.
            prop_assert_eq!(state == AncestorFailed, behind_failure);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn pool_invariants_hold_on_random_dags(case in case()) {
        drive(&case)?;
    }

    #[test]
    fn simulated_makespan_is_within_grahams_bound(case in case()) {
        let g = case.graph();
        let m = case.max_parallel as f64;
        let total: f64 = case.durations.iter().sum();
        let critical = live_ci_terragrunt::scheduler::critical_path_priorities(&g)
            .into_iter()
            .fold(0.0, f64::max);
        let lb = lower_bound(&g, case.max_parallel, &case.durations);
        let eps = 1e-9 * total.max(1.0);
        for schedule in [
            simulate(&g, &case.config(), &case.durations).unwrap(),
            simulate_run_groups(&g, case.max_parallel, &case.durations).unwrap(),
        ] {
            prop_assert!(schedule.makespan + eps >= lb);
            prop_assert_eq!(schedule.order.len(), case.n);
            for t in 0..case.n {
                for &d in g.dependencies(t) {
                    prop_assert!(schedule.start[t] + eps >= schedule.finish[d]);
                }
            }
        }
        // Any list schedule that never idles a runner beside a ready task is
        // within total / m + (1 - 1/m) * critical path (Graham, 1966).
        let pool = simulate(&g, &case.config(), &case.durations).unwrap();
        prop_assert!(pool.makespan <= total / m + (1.0 - 1.0 / m) * critical + eps);
    }

    #[test]
    fn simulated_failures_match_the_pool(case in case()) {
        let g = case.graph();
        let s = simulate_with_failures(&g, &case.config(), &case.durations, &case.fails).unwrap();
        for t in 0..case.n {
            let ran = matches!(s.states[t], Succeeded | Failed);
            prop_assert_eq!(ran, !s.start[t].is_nan());
            prop_assert!(s.states[t].is_terminal());
        }
    }
}
