//! Policy checks of pr-plan and terra-run's plan phase: the Rego files under
//! `POLICY_DIR`, read from git at the trunk as it was before the change (the
//! pull request's base branch, the run's base commit), never from the
//! checkout being judged, so a change cannot rewrite the policy that judges
//! it, evaluated in process (`live_ci_terragrunt::policy`: no policy binary runs
//! beside repository code); and `POLICY_COMMAND`, another tool (checkov,
//! trivy) run on the plan's `show -json` file exactly as terraform runs (the
//! child user, the env allow-list, the plan's credentials), since such a tool
//! is repository-adjacent code too. `POLICY_OVERRIDE` decides whether a
//! denial fails the unit or goes to the vote (`live_ci_core::policy::Judged`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use live_ci_core::path::RepoPath;
use live_ci_core::policy::{
    self, Judged, PolicyCommand, PolicyEngine, PolicyFailure, PolicyFile, Verdict,
};
use live_ci_git::GitCli;
use live_ci_git::GitTree;
use live_ci_terragrunt::policy::RegoPolicies;

use crate::error::{Result, TaskError};
use crate::output::say;

/// The trunk's Rego policies, loaded and checked once.
#[derive(Debug)]
pub struct Rego {
    files: Vec<PolicyFile>,
    engine: RegoPolicies,
    /// Where they were read: `<dir> at <rev>`, for the log.
    source: String,
}

impl Rego {
    /// The policies under `dir` at `rev` of `git`'s repository, refused
    /// (naming the file and line) when one does not parse or compile.
    pub fn load(git: &GitCli, rev: &str, dir: &RepoPath) -> Result<Self> {
        let tree = GitTree::open(git.clone(), rev)?;
        let files = policy::load(&tree, dir)?;
        let engine = RegoPolicies::default();
        let source = format!("{:?} at {}", dir.as_str(), tree.commit());
        engine.check(&files).map_err(|f| TaskError::Policy {
            subject: format!("the trunk's policies ({source})"),
            message: f.describe(),
        })?;
        say!(
            "live-ci: {} policy file(s) from {source} judge every plan",
            files.len()
        );
        Ok(Rego {
            files,
            engine,
            source,
        })
    }
}

/// Where a plan's policy command runs: the unit's directory and exactly the
/// environment its plan ran with, the file the plan JSON is written to (in
/// a scratch directory of the child's) and the log prefix.
#[derive(Debug, Clone, Copy)]
pub struct CommandPlace<'a> {
    /// The unit's directory, where the command runs.
    pub dir: &'a Path,
    /// The plan's environment, the command's whole environment.
    pub env: &'a [(String, String)],
    /// Where the plan's JSON is written for the command.
    pub json_file: &'a Path,
    /// Starts each of the command's output lines in the log.
    pub prefix: &'a str,
}

/// Every judge of a plan, and what a denial does.
#[derive(Debug)]
pub struct Policies {
    rego: Option<Rego>,
    command: Option<PolicyCommand>,
    policy_override: bool,
}

impl Policies {
    /// `None` when nothing judges (no `POLICY_DIR`, no `POLICY_COMMAND`).
    pub fn new(
        rego: Option<Rego>,
        command: Option<PolicyCommand>,
        policy_override: bool,
    ) -> Option<Arc<Self>> {
        if rego.is_none() && command.is_none() {
            return None;
        }
        Some(Arc::new(Policies {
            rego,
            command,
            policy_override,
        }))
    }

    /// What the judges say of one plan's `show -json` (the policy command's
    /// verdict, then the Rego policies', off the runtime's threads: an
    /// evaluation may take up to its time limit), under `POLICY_OVERRIDE`.
    pub async fn judge(self: &Arc<Self>, plan_json: String, place: CommandPlace<'_>) -> Judged {
        let mut verdict = Verdict::Allowed;
        if let Some(command) = &self.command {
            verdict = run_command(command, &plan_json, place).await;
        }
        if self.rego.is_some() {
            let me = Arc::clone(self);
            let rego = tokio::task::spawn_blocking(move || match &me.rego {
                Some(r) => r.engine.evaluate(&r.files, &plan_json),
                None => Verdict::Allowed,
            })
            .await
            .unwrap_or_else(|e| {
                Verdict::Failed(PolicyFailure::Eval {
                    rule: self
                        .rego
                        .as_ref()
                        .map(|r| r.source.clone())
                        .unwrap_or_default(),
                    message: format!("the evaluation stopped: {e}"),
                })
            });
            verdict = rego.and(verdict);
        }
        verdict.judged(self.policy_override)
    }
}

/// Writes the plan JSON where the child may read it, runs the command as
/// the plan ran, and reads its exit ([`PolicyCommand::verdict`]). Anything
/// that stops it before an exit code is a failure of the unit, never a pass.
async fn run_command(command: &PolicyCommand, plan_json: &str, place: CommandPlace<'_>) -> Verdict {
    let path: PathBuf = place.json_file.to_path_buf();
    let shown = path.display().to_string();
    let rendered = command.render(&shown);
    let cannot = |message: String| {
        Verdict::Failed(PolicyFailure::Command {
            command: rendered.clone(),
            message,
        })
    };
    if let Err(e) = std::fs::write(&path, plan_json.as_bytes()) {
        return cannot(format!("writing the plan JSON {shown:?}: {e}"));
    }
    // Readable by the child's group, not writable: the command reads it.
    if let Err(e) = crate::sandbox::share_read_only(&path, 0o640) {
        return cannot(e.to_string());
    }
    match crate::run::run_quietly(&rendered, place.dir, place.env, place.prefix).await {
        Ok(finished) => command.verdict(&rendered, finished.code, &finished.output),
        Err(e) => cannot(e.to_string()),
    }
}
