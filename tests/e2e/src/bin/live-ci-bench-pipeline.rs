//! `make bench-pipeline`: the pipeline's own cost per unit, measured through the
//! local cloud (see `live_ci_e2e::bench`). Prints one block per case and the
//! local cloud's floor; the format is stable so runs can be compared.

use anyhow::Context as _;
use clap::Parser;
use live_ci_e2e::bench::{Case, floor, percentile, run_case};
use live_ci_e2e::{Cloud, repo_root};

#[derive(Debug, Parser)]
#[command(
    about = "Measures live-ci's per-unit overhead on a generated live repo in the local cloud"
)]
struct Args {
    /// Cases as UNITSxMAX_PARALLEL, comma-separated.
    #[arg(long, default_value = "20x4,100x4,100x16", value_delimiter = ',')]
    cases: Vec<String>,
    /// Accounts the units are spread over.
    #[arg(long, default_value_t = 4)]
    accounts: usize,
    /// Dependency layers (the critical path's length in units).
    #[arg(long, default_value_t = 8)]
    layers: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Executions measured for the local cloud's floor.
    #[arg(long, default_value_t = 5)]
    floor_samples: usize,
    /// Keep the local cloud running afterwards.
    #[arg(long)]
    keep: bool,
}

fn parse_case(s: &str, a: &Args) -> anyhow::Result<Case> {
    let (units, parallel) = s
        .split_once('x')
        .with_context(|| format!("case {s:?}: expected UNITSxMAX_PARALLEL, e.g. 100x4"))?;
    Ok(Case {
        units: units
            .parse()
            .with_context(|| format!("case {s:?}: units {units:?}"))?,
        max_parallel: parallel
            .parse()
            .with_context(|| format!("case {s:?}: max_parallel {parallel:?}"))?,
        accounts: a.accounts,
        layers: a.layers,
        seed: a.seed,
    })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let cases = args
        .cases
        .iter()
        .map(|c| parse_case(c, &args))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let was_up = std::process::Command::new("bash")
        .arg(repo_root().join("scripts/local-cloud.sh"))
        .arg("status")
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let cloud = Cloud::up(false)
        .await
        .context("scripts/local-cloud.sh up")?;
    let http = reqwest::Client::new();
    let iam_before = cloud.iam_stats(&http).await?;
    let result = async {
        println!(
            "binaries: {} (LIVE_CI_PROFILE)",
            std::env::var("LIVE_CI_PROFILE").unwrap_or_else(|_| "debug".into())
        );
        let f = floor(cloud.endpoint(), args.floor_samples, 1).await?;
        println!(
            "floor: one waitForTaskToken task answered at once: p50 {:.2} s  p95 {:.2} s  (n={})",
            percentile(&f, 50.0) / 1e3,
            percentile(&f, 95.0) / 1e3,
            f.len()
        );
        let f = floor(cloud.endpoint(), args.floor_samples, 3).await?;
        println!(
            "floor, unit-shaped: three waitForTaskToken tasks, a Choice after each but the last, each answered at once: p50 {:.2} s  p95 {:.2} s  (n={})",
            percentile(&f, 50.0) / 1e3,
            percentile(&f, 95.0) / 1e3,
            f.len()
        );
        // PR numbers differ per case: execution names are made of PR and commit.
        let base = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() % 1_000_000)
            * 100;
        for (i, case) in cases.iter().enumerate() {
            eprintln!(
                "==> {} units, max_parallel {}",
                case.units, case.max_parallel
            );
            let figures = run_case(&cloud, *case, base + i as u64).await?;
            print!("{}", figures.render());
        }
        // The figures hold only if the pipeline ran as it would in AWS: under
        // the local cloud's IAM enforcement, with nothing denied.
        let iam = cloud.iam_stats(&http).await?;
        if !iam.enforced {
            println!("IAM: not enforced (LIVE_CI_IAM_ENFORCE is 0)");
            return anyhow::Ok(());
        }
        let denied = iam.denied.saturating_sub(iam_before.denied);
        println!(
            "IAM (enforced by the local cloud): {} requests authorised, {denied} denied",
            iam.authorised.saturating_sub(iam_before.authorised),
        );
        let new = usize::try_from(denied).unwrap_or(usize::MAX);
        for denial in &iam.denials[iam.denials.len().saturating_sub(new)..] {
            println!("  denied: {}", denial.get("message").map_or("", String::as_str));
        }
        anyhow::ensure!(denied == 0, "{denied} request(s) were denied: the figures above are not the pipeline's");
        anyhow::Ok(())
    }
    .await;
    if !(args.keep || was_up) {
        Cloud::down(false)
            .await
            .context("scripts/local-cloud.sh down")?;
    }
    result
}
