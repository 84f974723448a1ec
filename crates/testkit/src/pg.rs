//! A throwaway PostgreSQL for tests (`LIVE_CI_PG_URL`, or `scripts/pg.sh up`)
//! and one fresh, migrated database per test, so tests run in parallel; plus
//! the runs and executions the metadb tests and benchmarks build.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use live_ci_core::deploy::{Action, NewExecution, NewRun};
use live_ci_core::path::RepoPath;
use live_ci_metadb::PgMetadb;

/// The script that starts the test server, found from `start` (a package's
/// directory) up to the repository root: the same script whichever crate's
/// tests ask, so `cargo test -p live-ci-task` starts PostgreSQL as
/// `cargo test -p live-ci-metadb` does.
pub fn pg_script_from(start: &Path) -> PathBuf {
    crate::repo_root_from(start).join("scripts/pg.sh")
}

/// [`pg_script_from`] the package under test.
pub fn pg_script() -> PathBuf {
    crate::repo_root().join("scripts/pg.sh")
}

/// The server's URL: `LIVE_CI_PG_URL`, or the one `scripts/pg.sh up` starts.
pub fn server_url() -> String {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        if let Ok(url) = std::env::var("LIVE_CI_PG_URL")
            && !url.is_empty()
        {
            return url;
        }
        let script = pg_script();
        let out = Command::new("bash")
            .arg(&script)
            .arg("up")
            .output()
            .unwrap_or_else(|e| panic!("cannot run {script:?}: {e}"));
        assert!(
            out.status.success(),
            "{script:?} up failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    })
    .clone()
}

/// A fresh empty database on the test server.
#[derive(Debug)]
pub struct TestDb {
    /// The database's name on the server.
    pub name: String,
    /// Its connection URL.
    pub url: String,
}

impl TestDb {
    /// Creates the database, named for this process, call and moment.
    pub async fn new() -> TestDb {
        static N: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "t_{}_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or_default()
        );
        let admin = server_url();
        let client = live_ci_metadb::connect(&admin)
            .await
            .expect("connect to the test server");
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap_or_else(|e| panic!("create database {name}: {e}"));
        TestDb {
            url: live_ci_metadb::with_database(&admin, &name),
            name,
        }
    }

    /// A metadb on this database, migrated.
    pub async fn metadb(&self, connections: usize) -> PgMetadb {
        let db = PgMetadb::connect(&self.url, connections)
            .unwrap_or_else(|e| panic!("connect to {:?}: {e}", self.url));
        db.migrate()
            .await
            .unwrap_or_else(|e| panic!("migrate {:?}: {e}", self.name));
        db
    }

    /// Drops the database (its connections too).
    pub async fn drop_db(self) {
        let client = live_ci_metadb::connect(&server_url())
            .await
            .expect("connect to the test server");
        let _ = client
            .batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ))
            .await;
    }
}

/// A minimal execution of `account` waiting for `wait_for`.
pub fn exec(id: &str, account: &str, wait_for: &[&str]) -> NewExecution {
    NewExecution {
        execution_id: id.to_string(),
        is_rollback: false,
        cfg_path: repo_path(&format!("{account}/{id}")),
        cfg_deps: wait_for
            .iter()
            .map(|d| repo_path(&format!("{account}/{d}")))
            .collect(),
        action: Action::Apply,
        plan_command: format!("terragrunt plan --terragrunt-working-dir {account}/{id}"),
        apply_command: format!("terragrunt apply --terragrunt-working-dir {account}/{id}"),
        new_providers: vec![],
        account_name: account.to_string(),
        account_path: account.to_string(),
        account_deps: vec![],
        voters: vec![
            "a@example.com".into(),
            "b@example.com".into(),
            "c@example.com".into(),
        ],
        min_approval_count: 2,
        min_rejection_count: 1,
        plan_role_arn: "arn:aws:iam::111111111111:role/plan".into(),
        apply_role_arn: "arn:aws:iam::111111111111:role/apply".into(),
        priority: 1.0,
        wait_for: wait_for.iter().map(|s| s.to_string()).collect(),
        wait_accounts: vec![],
        account_max_parallel: None,
    }
}

fn repo_path(path: &str) -> RepoPath {
    RepoPath::new(path).unwrap_or_else(|e| panic!("test path {path:?}: {e}"))
}

/// Runs made by the helpers follow each other on the trunk, in creation order.
pub fn next_trunk_seq() -> u64 {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    SEQ.fetch_add(1, Ordering::Relaxed)
}

/// A run of `executions` on commit `commit`, next on the trunk.
pub fn run(commit: &str, max_parallel: u32, executions: Vec<NewExecution>) -> NewRun {
    NewRun {
        trunk_seq: next_trunk_seq(),
        checkout: None,
        pr_id: 7,
        commit_id: commit.to_string(),
        base_ref: "refs/heads/main".into(),
        head_ref: "refs/heads/feature".into(),
        base_sha: "1111111".into(),
        head_sha: "2222222".into(),
        max_parallel,
        fail_fast: false,
        executions,
    }
}

/// A random DAG of `n` executions over `accounts` (each account waits for all
/// the ones before it), ~40% of units with 1–5 directory dependencies on
/// earlier units of the same account, priorities from the core scheduler's rule
/// (longest remaining path).
pub fn random_run(
    commit: &str,
    n: usize,
    accounts: &[&str],
    max_parallel: u32,
    seed: u64,
) -> NewRun {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut by_account: Vec<Vec<usize>> = vec![Vec::new(); accounts.len()];
    let mut execs: Vec<NewExecution> = Vec::with_capacity(n);
    for i in 0..n {
        let a = rng.random_range(0..accounts.len());
        let id = format!("run-7-c8c5-{}-u{i}-{:03}", accounts[a], i % 1000);
        let mut wait_for: Vec<String> = Vec::new();
        let pool = &by_account[a];
        if !pool.is_empty() && rng.random_bool(0.4) {
            let k = rng.random_range(1..=5usize).min(pool.len());
            while wait_for.len() < k {
                let d = pool[rng.random_range(0..pool.len())];
                let dep = execs[d].execution_id.clone();
                if !wait_for.contains(&dep) {
                    wait_for.push(dep);
                }
            }
        }
        let mut e = exec(&id, accounts[a], &[]);
        e.wait_for = wait_for;
        e.wait_accounts = accounts[..a].iter().map(|s| s.to_string()).collect();
        by_account[a].push(i);
        execs.push(e);
    }
    // Priority: longest remaining path over directory edges (dependents come later).
    let index: std::collections::HashMap<String, usize> = execs
        .iter()
        .enumerate()
        .map(|(i, e)| (e.execution_id.clone(), i))
        .collect();
    let mut level = vec![1.0f64; n];
    for i in (0..n).rev() {
        for d in execs[i].wait_for.clone() {
            let d = index[&d];
            level[d] = level[d].max(level[i] + 1.0);
        }
    }
    for (e, l) in execs.iter_mut().zip(level) {
        e.priority = l;
    }
    run(commit, max_parallel, execs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pg_sh_is_found_from_a_crate_one_level_below_the_root() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let script = pg_script_from(&root.join("ecs-task"));
        assert!(script.is_file(), "{script:?}");
        assert!(script.ends_with("scripts/pg.sh"), "{script:?}");
    }
}
