//! Times discovery on a generated 11,000-unit live repo: listing the working
//! tree, `discover()`, and `into_graph()`, best and median of five runs.
//!
//! `cargo run --release --example bench_discovery [units]`

// The allocator the `live-ci` binary uses, so the figures are the CLI's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::time::{Duration, Instant};

use live_ci_core::port::FileTree;
use live_ci_git::FsTree;
use live_ci_terragrunt::discover;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn report(name: &str, mut runs: Vec<Duration>) {
    runs.sort();
    println!(
        "{name:<28} best {:>8.1} ms   median {:>8.1} ms",
        ms(runs[0]),
        ms(runs[runs.len() / 2])
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let units: usize = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 11_000,
    };
    let dir = tempfile::tempdir()?;
    let files = live_ci_synth::generate(units, 42);
    live_ci_synth::write_to(dir.path(), &files)?;
    println!(
        "{units} units, {} files in {}",
        files.len(),
        dir.path().display()
    );
    let tree = FsTree::new(dir.path());
    let (mut list, mut disc, mut graph, mut total) = (vec![], vec![], vec![], vec![]);
    for _ in 0..5 {
        let t0 = Instant::now();
        let listed = tree.files()?;
        let t1 = Instant::now();
        let d = discover(&tree);
        let t2 = Instant::now();
        let found = d.units.len();
        let (g, errors) = d.into_graph();
        let t3 = Instant::now();
        if found != units || g.len() != units || !errors.is_empty() {
            return Err(format!(
                "expected {units} units without errors, found {found} ({} errors, first: {:?})",
                errors.len(),
                errors.first().map(ToString::to_string)
            )
            .into());
        }
        std::hint::black_box(listed);
        list.push(t1 - t0);
        disc.push(t2 - t1);
        graph.push(t3 - t2);
        total.push(t3 - t1);
    }
    report("FsTree::files", list);
    report("discover (incl. listing)", disc);
    report("into_graph", graph);
    report("discover + into_graph", total);
    Ok(())
}
