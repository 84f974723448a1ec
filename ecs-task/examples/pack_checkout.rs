//! The run's packed checkout of a generated live repo (`crates/synth`): what
//! create-deploy-stack does once per run (a one-commit fetch from its clone,
//! then the tar archive and its SHA-256) and what each terra-run does instead
//! of a fetch (the SHA-256 check and the unpacking), with the archive's size.
//!
//! `cargo run -p live-ci-task --example pack_checkout [units]` (default 1,000)

use std::process::Command;
use std::time::{Duration, Instant};

use live_ci_core::port::sha256_hex;
use live_ci_git::GitCli;
use live_ci_task::checkout_cache::{pack, unpack};

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn git(dir: &std::path::Path, args: &[&str]) -> Result<String, Box<dyn std::error::Error>> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "synth")
        .env("GIT_AUTHOR_EMAIL", "synth@example.com")
        .env("GIT_COMMITTER_NAME", "synth")
        .env("GIT_COMMITTER_EMAIL", "synth@example.com")
        .output()?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let units: usize = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 1_000,
    };
    let work = tempfile::tempdir()?;
    let clone = work.path().join("clone");
    std::fs::create_dir_all(&clone)?;
    let files = live_ci_synth::generate(units, 42);
    live_ci_synth::write_to(&clone, &files)?;
    git(&clone, &["init", "-q", "-b", "main"])?;
    git(&clone, &["add", "-A"])?;
    git(&clone, &["commit", "-qm", "synthetic live repo"])?;
    let commit = git(&clone, &["rev-parse", "HEAD"])?;
    println!("{units} units, {} files, commit {commit}", files.len());

    let started = Instant::now();
    let packed_dir = work.path().join("packed");
    GitCli::fetch_commit(&clone.display().to_string(), &packed_dir, &commit, None)?;
    let fetched = started.elapsed();
    let started = Instant::now();
    let bytes = pack(&packed_dir)?;
    let packed = started.elapsed();
    let started = Instant::now();
    let sha256 = sha256_hex(&bytes);
    let hashed = started.elapsed();
    let started = Instant::now();
    unpack(&bytes, &work.path().join("unpacked"))?;
    let unpacked = started.elapsed();
    println!(
        "archive {} bytes ({:.2} MiB), sha-256 {sha256}",
        bytes.len(),
        bytes.len() as f64 / 1024.0 / 1024.0
    );
    println!(
        "create-deploy-stack: one-commit fetch {}, pack {}, sha-256 {}",
        ms(fetched),
        ms(packed),
        ms(hashed)
    );
    println!("terra-run: sha-256 {}, unpack {}", ms(hashed), ms(unpacked));
    Ok(())
}
