//! Test support shared by the crates' integration tests and the demo, the one
//! place for it: the project's LocalStack, started once per test process
//! through `scripts/localstack.sh`; [`github::FakeGitHub`]; the shared fakes of
//! the ports ([`params`], [`git_host`], [`tasks`], [`notify`]).
//! Behind features, so crates that do not need them skip their dependencies:
//! `pg` (a throwaway PostgreSQL, and [`round_trips`] counting a metadb's calls), `aws` (LocalStack SDK clients and state
//! machines), `data-api-mock` (request-exact RDS Data API calls on [`aws_wire`], the
//! wiremock server the SDK adapters' request-exact tests script) and
//! `approval` (the approval Lambdas' support) and `screens` (messages rendered
//! as GitHub and Slack show them, screenshot in headless Chromium).

#[cfg(feature = "approval")]
pub mod approval;
#[cfg(feature = "aws")]
pub mod aws;
pub mod aws_wire;
pub mod data_api;
#[cfg(feature = "data-api-mock")]
pub mod data_api_mock;
pub mod git_host;
pub mod github;
pub mod notify;
pub mod params;
#[cfg(feature = "pg")]
pub mod pg;
#[cfg(feature = "pg")]
pub mod round_trips;
#[cfg(feature = "screens")]
pub mod screens;
pub mod tasks;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The environment variable that points tests at an already running endpoint
/// (`make test` sets it; so can a developer with their own LocalStack).
pub const ENDPOINT_VAR: &str = "LIVE_CI_AWS_ENDPOINT";

/// The repository root: the nearest directory above the package under test
/// that holds `scripts/localstack.sh`. Found at run time (cargo sets
/// `CARGO_MANIFEST_DIR` for test processes) rather than baked in at compile
/// time, because a target dir shared between two checkouts can reuse a test
/// binary built in the other one.
pub fn repo_root() -> PathBuf {
    let start = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    repo_root_from(&start)
}

/// The nearest directory at or above `start` that holds the project's
/// scripts; testkit's own workspace root when none does.
pub fn repo_root_from(start: &Path) -> PathBuf {
    start
        .ancestors()
        .find(|dir| dir.join("scripts/localstack.sh").is_file())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

/// The LocalStack endpoint: `$LIVE_CI_AWS_ENDPOINT`, or else the instance that
/// `scripts/localstack.sh up` installs and starts (or finds running). The
/// script serialises concurrent callers, so parallel test binaries share one
/// instance; it is left running for the next run (`scripts/localstack.sh down`
/// stops it; `make test` stops what it started).
pub fn localstack_endpoint() -> Result<String, String> {
    static ENDPOINT: OnceLock<Result<String, String>> = OnceLock::new();
    ENDPOINT
        .get_or_init(|| {
            if let Ok(endpoint) = std::env::var(ENDPOINT_VAR)
                && !endpoint.is_empty()
            {
                return Ok(endpoint);
            }
            let script = repo_root().join("scripts/localstack.sh");
            let output = Command::new("bash")
                .arg(&script)
                .arg("up")
                .output()
                .map_err(|e| format!("cannot run {script:?}: {e}"))?;
            if !output.status.success() {
                return Err(format!(
                    "{script:?} up failed ({}): {}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr)
                ));
            }
            let endpoint = String::from_utf8_lossy(&output.stdout).trim().to_owned();
            if endpoint.is_empty() {
                return Err(format!("{script:?} up printed no endpoint"));
            }
            Ok(endpoint)
        })
        .clone()
}

/// Runs `git args` in `dir` as a test author (no signing, whatever the
/// user's configuration) and returns its trimmed stdout; panics with git's
/// stderr when it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run git {args:?}: {e}"));
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A name unique to this process and call, for resources and executions that
/// must not collide with earlier runs against the same LocalStack.
pub fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "{prefix}-{}-{nanos}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scripts are found from any package of the workspace, not only from
    /// one two levels below the root (the old `pg.sh` lookup was
    /// `CARGO_MANIFEST_DIR/../../scripts`, outside the repository from `ecs-task`).
    #[test]
    fn the_repo_root_is_found_from_every_package_depth() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        for package in [
            "ecs-task",
            "crates/metadb",
            "lambdas/approval-response",
            "tests/e2e",
        ] {
            let found = repo_root_from(&root.join(package));
            assert!(
                found.join("scripts/pg.sh").is_file(),
                "no scripts/pg.sh under {found:?} (from {package})"
            );
            assert_eq!(
                found.canonicalize().expect("root exists"),
                root.canonicalize().expect("root exists"),
                "from {package}"
            );
        }
    }
}
