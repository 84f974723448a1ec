//! Policy checks of pr-plan and terra-run's plan phase (`POLICY_DIR`): the
//! Rego files under the directory, read from git at the trunk as it was
//! before the change (the pull request's base branch, the run's base commit),
//! never from the checkout being judged, so a change cannot rewrite the
//! policy that judges it. Evaluated in process (`live_ci_engine::policy`):
//! no policy binary runs beside repository code.

use std::sync::Arc;

use live_ci_core::path::RepoPath;
use live_ci_core::policy::{self, PolicyEngine, PolicyFile, Verdict};
use live_ci_engine::policy::RegoPolicies;
use live_ci_git::GitCli;
use live_ci_git::GitTree;

use crate::error::{Result, TaskError};

/// The trunk's policies, loaded and checked once, judging each plan.
#[derive(Debug)]
pub struct Policies {
    files: Vec<PolicyFile>,
    engine: RegoPolicies,
    /// Where they were read: `<dir> at <rev>`, for the log.
    source: String,
}

impl Policies {
    /// The policies under `dir` at `rev` of `git`'s repository, refused
    /// (naming the file and line) when one does not parse or compile.
    pub fn load(git: &GitCli, rev: &str, dir: &RepoPath) -> Result<Arc<Self>> {
        let tree = GitTree::open(git.clone(), rev)?;
        let files = policy::load(&tree, dir)?;
        let engine = RegoPolicies::default();
        let source = format!("{:?} at {}", dir.as_str(), tree.commit());
        engine.check(&files).map_err(|f| TaskError::Policy {
            subject: format!("the trunk's policies ({source})"),
            message: f.describe(),
        })?;
        println!(
            "live-ci: {} policy file(s) from {source} judge every plan",
            files.len()
        );
        Ok(Arc::new(Policies {
            files,
            engine,
            source,
        }))
    }

    /// What the policies say of one plan's `show -json`, off the runtime's
    /// threads (an evaluation may take up to its time limit).
    pub async fn judge(self: &Arc<Self>, plan_json: String) -> Verdict {
        let me = Arc::clone(self);
        match tokio::task::spawn_blocking(move || me.engine.evaluate(&me.files, &plan_json)).await {
            Ok(v) => v,
            Err(e) => Verdict::Failed(policy::PolicyFailure::Eval {
                rule: self.source.clone(),
                message: format!("the evaluation stopped: {e}"),
            }),
        }
    }
}
