//! Benchmark: `affected` for a one-file change on a generated 11,000-unit live
//! repo, end to end (git diff, discovery at head, graph, change mapping).
//! Run: `cargo run --release -p live-ci-cli --example bench_affected`.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use live_ci_git::GitCli;
use live_ci_terragrunt::change::detect;

// The same allocator as the `live-ci` binary, so the figures are the CLI's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const UNITS: usize = 11_000;

fn git(dir: &std::path::Path, args: &[&str]) -> Result<()> {
    let st = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .status()
        .with_context(|| format!("git {args:?}"))?;
    if !st.success() {
        bail!("git {args:?} failed");
    }
    Ok(())
}

fn stats(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    (ms(v[0]), ms(v[v.len() / 2]))
}

fn main() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    let files = live_ci_synth::generate(UNITS, 42);
    live_ci_synth::write_to(dir, &files)?;
    git(dir, &["init", "-q", "-b", "main"])?;
    git(dir, &["add", "-A"])?;
    git(dir, &["commit", "-qm", "base"])?;

    // Two one-file changes: a leaf unit's config, and a shared env.hcl read by many.
    let unit_file = files
        .iter()
        .map(|(p, _)| p)
        .find(|p| p.ends_with("/terragrunt.hcl"))
        .context("no unit in the generated repo")?
        .clone();
    let env_file = files
        .iter()
        .map(|(p, _)| p)
        .find(|p| p.ends_with("/env.hcl"))
        .context("no env.hcl in the generated repo")?
        .clone();
    println!(
        "generated {UNITS} units, {} files; changes: {unit_file} | {env_file}",
        files.len()
    );
    let git_cli = GitCli::open(dir)?;
    for (branch, file) in [("one-unit", &unit_file), ("shared-env", &env_file)] {
        git(dir, &["checkout", "-q", "-b", branch, "main"])?;
        let path = dir.join(file);
        let mut text = std::fs::read_to_string(&path)?;
        text.push_str("\n# touched\n");
        std::fs::write(&path, text)?;
        git(dir, &["commit", "-qam", branch])?;
        let mut times = Vec::new();
        let mut affected = 0;
        for _ in 0..5 {
            let t = Instant::now();
            let d = detect(&git_cli, "main", Some(branch), false)?;
            times.push(t.elapsed());
            affected = d.affected.units.len();
        }
        let (best, median) = stats(times);
        println!(
            "affected main...{branch:<10} {affected:>5} units  best {best:>7.1} ms  median {median:>7.1} ms  (goal <= 500 ms)"
        );
    }
    Ok(())
}
