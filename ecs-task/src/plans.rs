//! Plans of many units at once, bounded by the runner pool (`MAX_PARALLEL`):
//! the plan scan of create-deploy-stack and the plans of pr-plan. Plans read
//! state and change nothing, so they run without dependency order.

use std::path::{Path, PathBuf};

use live_ci_core::path::RepoPath;
use live_ci_core::port::TemporaryCredentials;
use live_ci_core::scheduler::{PoolConfig, Priority, RunnerPool, TaskGraph};
use live_ci_core::terraform::{
    ChangeCounts, Phase, insert_args, parse_plan_summary, with_plan_file,
};
use tokio::task::JoinSet;

use crate::error::{Result, TaskError};
use crate::run::{self, Finished};
use crate::sandbox;

/// How one unit's plan ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitPlan {
    pub path: RepoPath,
    pub outcome: Result<PlanOutcome, String>,
}

/// A finished plan: its counts and whether `-detailed-exitcode` said "changes".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanOutcome {
    pub counts: ChangeCounts,
    pub has_changes: bool,
}

/// Plans `units` of the checkout at `repo_dir` with the plan command
/// rendered for each unit by `command_of`, with the credentials of the role
/// `credentials_of` gives (already assumed by the caller), at most
/// `max_parallel` at once, with `-detailed-exitcode` (exit 2: changes). Results
/// come back in the order of `units`.
pub async fn plan_units(
    repo_dir: &Path,
    scratch: &Path,
    units: &[RepoPath],
    command_of: impl Fn(&RepoPath) -> String,
    credentials_of: impl Fn(&RepoPath) -> Option<TemporaryCredentials>,
    env: &[(String, String)],
    max_parallel: usize,
) -> Result<Vec<UnitPlan>> {
    let mut pool = RunnerPool::new(
        TaskGraph::new(units.len()),
        PoolConfig {
            max_parallel: max_parallel.max(1),
            fail_fast: false,
            priority: Priority::Fifo,
        },
    )?;
    let mut results: Vec<Option<UnitPlan>> = vec![None; units.len()];
    let mut running = JoinSet::new();
    loop {
        for i in pool.start_ready() {
            let path = units[i].clone();
            let dir: PathBuf = repo_dir.join(path.as_str());
            let plan_file = scratch.join(format!("scan-{i}.tfplan"));
            // Into terraform's own arguments: appended after a pipeline,
            // `tee` would get the flag and the exit code.
            let command = insert_args(
                &with_plan_file(
                    &command_of(&path),
                    Phase::Plan,
                    &plan_file.display().to_string(),
                ),
                "plan",
                &["-detailed-exitcode".to_string()],
            );
            let mut extra = env.to_vec();
            extra.push(("LIVE_CI_CFG_PATH".into(), path.to_string()));
            let env = sandbox::env_for(credentials_of(&path).as_ref(), &extra);
            let prefix = format!("[{path}] ");
            running.spawn(async move {
                let finished = run::run_quietly(&command, &dir, &env, &prefix).await;
                (i, outcome(&command, &dir, finished))
            });
        }
        let Some(joined) = running.join_next().await else {
            break;
        };
        let (i, outcome) =
            joined.map_err(|e| TaskError::Io(format!("a plan task panicked: {e}")))?;
        pool.finish(i, outcome.is_ok())?;
        results[i] = Some(UnitPlan {
            path: units[i].clone(),
            outcome,
        });
    }
    Ok(results.into_iter().flatten().collect())
}

fn outcome(command: &str, dir: &Path, finished: Result<Finished>) -> Result<PlanOutcome, String> {
    let finished = finished.map_err(|e| e.to_string())?;
    let has_changes = match finished.code {
        Some(0) => false,
        Some(2) => true,
        _ => return Err(run::failed(command, dir, &finished).to_string()),
    };
    let counts = parse_plan_summary(&finished.output).ok_or_else(|| {
        format!(
            "{command:?} in {:?} printed no plan summary: {}",
            dir.display().to_string(),
            finished.tail(3)
        )
    })?;
    Ok(PlanOutcome {
        counts,
        has_changes,
    })
}
