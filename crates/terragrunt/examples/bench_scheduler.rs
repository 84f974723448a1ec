//! Benchmark of the runner-pool scheduler: makespan against the lower bound for
//! critical-path priority, the RFC's rule, FIFO and Terragrunt's run groups on
//! seeded random DAGs, then wall time of the pool on a 10,000-task graph.
//!
//! Run with `cargo run --release -p live-ci-core --example bench_scheduler`.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use live_ci_terragrunt::scheduler::{
    PoolConfig, Priority, RunnerPool, TaskGraph, lower_bound, simulate, simulate_run_groups,
};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SIZES: [usize; 5] = [50, 200, 500, 1000, 2000];
/// Mean number of dependencies per task.
const DENSITIES: [f64; 4] = [0.5, 1.5, 3.0, 6.0];
const CONCURRENCY: [usize; 4] = [2, 4, 8, 16];
const SEEDS: u64 = 4;

fn main() -> live_ci_terragrunt::Result<()> {
    let rules = [
        (
            "critical path (ours)",
            Rule::Pool(Priority::CriticalPath, false),
        ),
        (
            "critical path, noisy est.",
            Rule::Pool(Priority::CriticalPath, true),
        ),
        (
            "most deps (RFC)",
            Rule::Pool(Priority::MostDependencies, false),
        ),
        ("fifo", Rule::Pool(Priority::Fifo, false)),
        ("run groups", Rule::RunGroups),
    ];
    // ratios[rule][concurrency index] = makespan / lower bound per instance
    let mut ratios = vec![vec![Vec::new(); CONCURRENCY.len()]; rules.len()];
    let mut vs_groups = vec![Vec::new(); CONCURRENCY.len()];
    let mut instances = 0usize;
    for &n in &SIZES {
        for &density in &DENSITIES {
            for seed in 0..SEEDS {
                let mut rng = ChaCha8Rng::seed_from_u64(seed * 1_000_003 + n as u64 * 31);
                let local = seed % 2 == 0;
                let inst = Instance::random(&mut rng, n, density, local);
                for (ci, &m) in CONCURRENCY.iter().enumerate() {
                    instances += 1;
                    let lb = lower_bound(&inst.graph, m, &inst.actual);
                    let mut ours = 0.0;
                    let mut groups = 0.0;
                    for (ri, (_, rule)) in rules.iter().enumerate() {
                        let makespan = rule.makespan(&inst, m)?;
                        ratios[ri][ci].push(makespan / lb);
                        match (ri, rule) {
                            (0, _) => ours = makespan,
                            (_, Rule::RunGroups) => groups = makespan,
                            _ => {}
                        }
                    }
                    vs_groups[ci].push(ours / groups);
                }
            }
        }
    }

    println!(
        "{instances} runs: {} DAGs ({:?} tasks x {:?} deps/task x {SEEDS} seeds) x concurrency {:?}",
        instances / CONCURRENCY.len(),
        SIZES,
        DENSITIES,
        CONCURRENCY
    );
    println!("durations log-normal, median 2 min, 30 s..20 min; makespan / lower bound:\n");
    print!("{:<27}{:>8}{:>8}", "rule", "mean", "worst");
    for m in CONCURRENCY {
        print!("{:>8}", format!("m={m}"));
    }
    println!();
    for (ri, (name, _)) in rules.iter().enumerate() {
        let all: Vec<f64> = ratios[ri].iter().flatten().copied().collect();
        print!("{name:<27}{:>8.3}{:>8.3}", mean(&all), worst(&all));
        for per_m in &ratios[ri] {
            print!("{:>8.3}", mean(per_m));
        }
        println!();
    }
    let all: Vec<f64> = vs_groups.iter().flatten().copied().collect();
    print!(
        "{:<27}{:>8.3}{:>8.3}",
        "ours / run groups",
        mean(&all),
        worst(&all)
    );
    for per_m in &vs_groups {
        print!("{:>8.3}", mean(per_m));
    }
    println!("\n");

    time_large_graph()
}

enum Rule {
    /// Priority, and whether the pool ranks by noisy estimates of the durations.
    Pool(Priority, bool),
    RunGroups,
}

impl Rule {
    fn makespan(&self, inst: &Instance, m: usize) -> live_ci_terragrunt::Result<f64> {
        let config = |priority| PoolConfig {
            max_parallel: m,
            fail_fast: false,
            priority,
        };
        Ok(match *self {
            Rule::Pool(p, false) => simulate(&inst.graph, &config(p), &inst.actual)?.makespan,
            Rule::Pool(p, true) => simulate(&inst.noisy, &config(p), &inst.actual)?.makespan,
            Rule::RunGroups => simulate_run_groups(&inst.graph, m, &inst.actual)?.makespan,
        })
    }
}

struct Instance {
    /// Recorded durations equal to the actual ones.
    graph: TaskGraph,
    /// Same edges, recorded durations off by a log-normal factor (sigma 0.5),
    /// as when last run's timings predict this run's.
    noisy: TaskGraph,
    actual: Vec<f64>,
}

impl Instance {
    /// Task `i` of a hidden topological order depends on about `density` earlier
    /// tasks, either anywhere before it or (`local`) among the 5% just before it,
    /// which makes deeper, narrower graphs. Labels are shuffled so indices, which
    /// break priority ties, say nothing about the order.
    fn random(rng: &mut ChaCha8Rng, n: usize, density: f64, local: bool) -> Self {
        let mut label: Vec<usize> = (0..n).collect();
        label.shuffle(rng);
        let actual: Vec<f64> = (0..n).map(|_| terraform_apply_seconds(rng)).collect();
        let mut graph = TaskGraph::new(n);
        let mut noisy = TaskGraph::new(n);
        let window = if local { (n / 20).max(3) } else { n };
        for i in 1..n {
            let k = rng.random_range(0.0..2.0 * density).round() as usize;
            for _ in 0..k {
                let j = rng.random_range(i.saturating_sub(window)..i);
                graph.add_dependency(label[i], label[j]);
                noisy.add_dependency(label[i], label[j]);
            }
        }
        for (t, &d) in actual.iter().enumerate() {
            graph.set_duration(t, d);
            noisy.set_duration(t, d * (0.5 * normal(rng)).exp());
        }
        Instance {
            graph,
            noisy,
            actual,
        }
    }
}

/// Log-normal around 2 minutes, clamped to what terraform applies take: 30 s to 20 min.
fn terraform_apply_seconds(rng: &mut ChaCha8Rng) -> f64 {
    (120.0 * (0.9 * normal(rng)).exp()).clamp(30.0, 1200.0)
}

/// Standard normal by Box-Muller.
fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u: f64 = 1.0 - rng.random::<f64>();
    let v: f64 = rng.random();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

fn worst(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

/// Builds a 10,000-task, 40,000-edge graph and drives a 16-runner pool over it
/// to the end (results reported in start order), timing each phase.
fn time_large_graph() -> live_ci_terragrunt::Result<()> {
    let (n, edges, m) = (10_000usize, 40_000usize, 16usize);
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let mut label: Vec<usize> = (0..n).collect();
    label.shuffle(&mut rng);
    let pairs: Vec<(usize, usize)> = {
        let mut seen = std::collections::HashSet::new();
        let mut pairs = Vec::with_capacity(edges);
        while pairs.len() < edges {
            let i = rng.random_range(1..n);
            let j = rng.random_range(i.saturating_sub(500)..i);
            if seen.insert((i, j)) {
                pairs.push((label[i], label[j]));
            }
        }
        pairs
    };
    let durations: Vec<f64> = (0..n).map(|_| terraform_apply_seconds(&mut rng)).collect();

    let mut build = Vec::new();
    let mut create = Vec::new();
    let mut drive = Vec::new();
    let mut sim = Vec::new();
    let mut started = 0;
    for _ in 0..7 {
        let t0 = Instant::now();
        let mut graph = TaskGraph::new(n);
        for &(a, b) in &pairs {
            graph.add_dependency(a, b);
        }
        for (t, &d) in durations.iter().enumerate() {
            graph.set_duration(t, d);
        }
        let t1 = Instant::now();
        let config = PoolConfig {
            max_parallel: m,
            fail_fast: false,
            priority: Priority::CriticalPath,
        };
        let mut pool = RunnerPool::new(graph.clone(), config)?;
        let t2 = Instant::now();
        let mut running: VecDeque<usize> = VecDeque::new();
        started = 0;
        loop {
            for t in pool.start_ready() {
                running.push_back(t);
                started += 1;
            }
            let Some(t) = running.pop_front() else { break };
            pool.finish(t, true)?;
        }
        let t3 = Instant::now();
        simulate(&graph, &config, &durations)?;
        let t4 = Instant::now();
        build.push(t1 - t0);
        create.push(t2 - t1);
        drive.push(t3 - t2);
        sim.push(t4 - t3);
    }
    println!(
        "RunnerPool, {n} tasks / {edges} edges / {m} runners, median of 7 ({started} started):"
    );
    println!(
        "  build graph {:>8.2} ms   new (validate + priorities) {:>6.2} ms   drive to end {:>6.2} ms   total {:>6.2} ms",
        ms(&mut build),
        ms(&mut create),
        ms(&mut drive),
        ms(&mut build) + ms(&mut create) + ms(&mut drive)
    );
    println!(
        "  simulate (event-driven, same graph) {:>6.2} ms",
        ms(&mut sim)
    );
    Ok(())
}

fn ms(xs: &mut [Duration]) -> f64 {
    xs.sort();
    xs[xs.len() / 2].as_secs_f64() * 1e3
}
