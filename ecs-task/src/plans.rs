//! Plans of many units at once, bounded by the runner pool (`MAX_PARALLEL`):
//! the plan scan of create-deploy-stack, the plans of pr-plan and of the drift
//! check, each with its accounts' plan roles only ([`plan_with_plan_roles`]).
//! Plans read state and change nothing, so they run without dependency
//! order. Every plan is read from `show -json` of its saved plan file, never
//! from its text.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use live_ci_core::account::Accounts;
use live_ci_core::path::RepoPath;
use live_ci_core::port::{RoleAssumer, TemporaryCredentials};
use live_ci_core::terraform::plan_json::PlanSummary;
use live_ci_core::terraform::{
    ChangeCounts, Phase, insert_args, show_command, text_show_command, with_plan_file,
};
use live_ci_terragrunt::scheduler::{PoolConfig, Priority, RunnerPool, TaskGraph};
use tokio::task::JoinSet;

use crate::checkout::Checkout;
use crate::config::Common;
use crate::error::{Result, TaskError};
use crate::git_ssh::KeyUse;
use crate::output::say;
use crate::policy::{CommandPlace, Policies};
use crate::run::{self, Finished};
use crate::sandbox;
use live_ci_core::policy::Judged;

/// What the plans of many units of one checkout need besides the units.
#[derive(Debug)]
pub struct PlanRequest<'a> {
    /// The plan, show and policy commands and the deploy key.
    pub common: &'a Common,
    /// The commit whose units are planned.
    pub checkout: &'a Checkout,
    /// Each unit's account, whose plan role the unit's plan runs as; without
    /// accounts, the task's own (local) credentials.
    pub accounts: Option<&'a Accounts>,
    /// The scratch directory's name in the checkout, where the plans write.
    pub scratch: &'a str,
    /// The deploy key: for merged or trusted code only.
    pub key_use: KeyUse,
    /// The STS session name (CloudTrail shows who planned).
    pub session: String,
    /// Whether each plan's text (`show -no-color`) is rendered too.
    pub with_text: bool,
    /// Judges every plan; `None`: no policy runs.
    pub policies: Option<Arc<Policies>>,
}

/// Plans `units` in the checkout, each with its account's plan role only
/// (the caller's task role may assume nothing else), in the runner pool's
/// bounded order ([`plan_units`]). The plans run as the child user, in a
/// scratch directory, with a home, temporary directory and plugin cache of
/// their own (the task's the child user cannot reach), and the deploy key
/// through an agent they may sign with, never read, when `key_use` allows.
pub(crate) async fn plan_with_plan_roles<R: RoleAssumer>(
    request: PlanRequest<'_>,
    roles: &R,
    units: &[RepoPath],
) -> Result<Vec<UnitPlan>> {
    let PlanRequest {
        common, checkout, ..
    } = request;
    let scratch = checkout.scratch_file(request.scratch);
    sandbox::child_dirs(&[&scratch])?;
    let mut env = vec![(
        "LIVE_CI_REPO_DIR".to_string(),
        checkout.dir().display().to_string(),
    )];
    env.extend(sandbox::private_dirs(&checkout.scratch_file("env"))?);
    // Kept until the plans end: dropping it stops the agent.
    let ssh = crate::git_ssh::child_env(
        common.git_ssh_key.as_ref(),
        &common.ssh_known_hosts,
        &checkout.scratch_file("ssh"),
        request.key_use,
    )
    .await?;
    env.extend(ssh.env().iter().cloned());
    let role_of = |p: &RepoPath| {
        request
            .accounts
            .and_then(|a| a.account_of(p))
            .map(|a| a.plan_role_arn.clone())
    };
    let credentials = sandbox::assume_each(
        roles,
        units.iter().filter_map(role_of).collect(),
        &request.session,
    )
    .await?;
    let plans = plan_units(
        checkout.dir(),
        &scratch,
        units,
        |p| common.plan_command.for_unit(p),
        |p| common.show_command.for_unit(p),
        |p| role_of(p).and_then(|r| credentials.get(&r).cloned()),
        &env,
        common.max_parallel as usize,
        request.with_text,
        request.policies,
    )
    .await;
    drop(ssh);
    plans
}

/// How one unit's plan ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitPlan {
    /// The unit.
    pub path: RepoPath,
    /// The finished plan, or why it failed.
    pub outcome: Result<PlanOutcome, String>,
}

/// A finished plan: its counts, whether it changes anything (outputs
/// included), the whole summary from `show -json`, and the plan as terraform
/// renders it for people (`show -no-color`, [`plan_text`]) when that worked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanOutcome {
    /// Resources to add, change and destroy.
    pub counts: ChangeCounts,
    /// Anything to apply, outputs included.
    pub has_changes: bool,
    /// What `show -json` says the plan does.
    pub summary: PlanSummary,
    /// The plan as terraform renders it for people, when that worked.
    pub text: Option<String>,
    /// The policy denials (`rule: message`) the voters may override
    /// (`POLICY_OVERRIDE` on); empty when none.
    pub policy_denials: Vec<String>,
}

/// The most of a plan's text kept: GitHub shows at most 65,536 characters
/// of it; the whole plan is in the plan command's log.
pub(crate) const MAX_PLAN_TEXT_BYTES: usize = 4 * 1024 * 1024;

/// The saved plan at `plan_file` as terraform shows it to people: the show
/// command with `-no-color` for `-json` ([`text_show_command`]), run like
/// every command of repository code (the child user, `env`). `None`, with
/// a warning in the log, when the command has no `-json` or fails: the plan
/// text is shown where it exists, its absence fails nothing. Past
/// [`MAX_PLAN_TEXT_BYTES`] the text ends with a line saying so.
pub(crate) async fn plan_text(
    show_template: &str,
    plan_file: &str,
    dir: &Path,
    env: &[(String, String)],
    prefix: &str,
) -> Option<String> {
    let Some(template) = text_show_command(show_template) else {
        say!(
            "{prefix}warning: no plan text: the show command {show_template:?} has no -json to replace with -no-color"
        );
        return None;
    };
    let command = show_command(&template, plan_file);
    match run::capture_with_cap(&command, dir, env, prefix, MAX_PLAN_TEXT_BYTES).await {
        Ok((_, captured)) if captured.overflow.is_some() => Some(format!(
            "{}\n… the plan text goes on past {MAX_PLAN_TEXT_BYTES} bytes: the whole plan is in the plan logs",
            captured.stdout
        )),
        Ok((finished, captured)) if finished.code == Some(0) => Some(captured.stdout),
        Ok((finished, _)) => {
            say!(
                "{prefix}warning: no plan text: {}",
                run::failed(&command, dir, &finished)
            );
            None
        }
        Err(e) => {
            say!("{prefix}warning: no plan text: {e}");
            None
        }
    }
}

/// Reads the saved plan at `plan_file` with the unit's show command
/// (`{plan_file}` filled in) run in `dir`: the error names the command and
/// what went wrong.
pub async fn describe_plan(
    show_template: &str,
    plan_file: &str,
    dir: &Path,
    env: &[(String, String)],
    prefix: &str,
) -> Result<PlanSummary> {
    Ok(
        describe_plan_json(show_template, plan_file, dir, env, prefix)
            .await?
            .0,
    )
}

/// [`describe_plan`], with the `show -json` output it read (one JSON value,
/// already parsed once): terra-run stores it beside the saved plan.
pub(crate) async fn describe_plan_json(
    show_template: &str,
    plan_file: &str,
    dir: &Path,
    env: &[(String, String)],
    prefix: &str,
) -> Result<(PlanSummary, String)> {
    let command = show_command(show_template, plan_file);
    let (finished, captured) = run::capture(&command, dir, env, prefix).await?;
    if let Some(seen) = captured.overflow {
        return Err(TaskError::OutputTooLarge {
            what: "plan JSON",
            command,
            dir: dir.display().to_string(),
            cap: run::MAX_CAPTURE_BYTES,
            seen,
        });
    }
    if finished.code != Some(0) {
        return Err(run::failed(&command, dir, &finished));
    }
    let summary = PlanSummary::from_show_json(&captured.stdout).map_err(|message| {
        TaskError::CommandFailed {
            command: command.clone(),
            dir: dir.display().to_string(),
            code: "code 0".into(),
            tail: message,
        }
    })?;
    Ok((summary, captured.stdout))
}

/// Plans `units` of the checkout at `repo_dir` with the plan command
/// rendered for each unit by `command_of`, with the credentials of the role
/// `credentials_of` gives (already assumed by the caller), at most
/// `max_parallel` at once, with `-detailed-exitcode` (any exit but 0 and 2 is
/// a failure), then reads each saved plan with the show command `show_of`
/// renders, and `with_text`, its text ([`plan_text`]). With `policies`, each
/// plan's `show -json` is judged by them (the policy command with the plan's
/// environment and credentials): a denial (or a policy that cannot judge)
/// fails the unit with the rule's message, unless the override is on and it
/// is a denial: then the plan passes carrying it. Results come back in the
/// order of `units`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn plan_units(
    repo_dir: &Path,
    scratch: &Path,
    units: &[RepoPath],
    command_of: impl Fn(&RepoPath) -> String,
    show_of: impl Fn(&RepoPath) -> String,
    credentials_of: impl Fn(&RepoPath) -> Option<TemporaryCredentials>,
    env: &[(String, String)],
    max_parallel: usize,
    with_text: bool,
    policies: Option<Arc<Policies>>,
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
    // One plugin cache per slot, never one shared by concurrent units
    // (sandbox::slot_plugin_cache says why).
    let mut free_slots: Vec<usize> = (0..max_parallel.max(1)).rev().collect();
    loop {
        for i in pool.start_ready() {
            let slot = free_slots.pop().ok_or_else(|| {
                TaskError::Io(format!(
                    "no free plan slot for unit {:?}: the pool started more than {} at once",
                    units[i].as_str(),
                    max_parallel.max(1)
                ))
            })?;
            let path = &units[i];
            let plan_file = scratch.join(format!("scan-{i}.tfplan"));
            // Into terraform's own arguments: appended after a pipeline,
            // `tee` would get the flag and the exit code.
            let command = insert_args(
                &with_plan_file(
                    &command_of(path),
                    Phase::Plan,
                    &plan_file.display().to_string(),
                ),
                "plan",
                &["-detailed-exitcode".to_string()],
            );
            let mut extra = env.to_vec();
            extra.push(("LIVE_CI_CFG_PATH".into(), path.to_string()));
            extra.extend(sandbox::slot_plugin_cache(&extra, slot)?);
            let job = PlanJob {
                command,
                dir: repo_dir.join(path.as_str()),
                env: sandbox::env_for(credentials_of(path).as_ref(), &extra),
                prefix: format!("[{path}] "),
                show: show_of(path),
                plan_file,
                json_file: scratch.join(format!("scan-{i}.plan.json")),
                policies: policies.clone(),
                with_text,
            };
            running.spawn(async move { (i, slot, job.run().await) });
        }
        let Some(joined) = running.join_next().await else {
            break;
        };
        let (i, slot, outcome) =
            joined.map_err(|e| TaskError::Io(format!("a plan task panicked: {e}")))?;
        free_slots.push(slot);
        pool.finish(i, outcome.is_ok())?;
        results[i] = Some(UnitPlan {
            path: units[i].clone(),
            outcome,
        });
    }
    Ok(results.into_iter().flatten().collect())
}

/// One unit's plan, as the pool runs it.
struct PlanJob {
    command: String,
    dir: PathBuf,
    env: Vec<(String, String)>,
    /// Each output line's prefix: the unit.
    prefix: String,
    show: String,
    plan_file: PathBuf,
    /// Where a policy command finds the plan's JSON.
    json_file: PathBuf,
    policies: Option<Arc<Policies>>,
    with_text: bool,
}

impl PlanJob {
    /// Runs the plan, reads the saved plan's `show -json`, judges it, and
    /// renders its text when asked.
    async fn run(self) -> Result<PlanOutcome, String> {
        let finished = run::run_quietly(&self.command, &self.dir, &self.env, &self.prefix).await;
        outcome(&self.command, &self.dir, finished)?;
        let file = self.plan_file.display().to_string();
        let (summary, json) =
            describe_plan_json(&self.show, &file, &self.dir, &self.env, &self.prefix)
                .await
                .map_err(|e| e.to_string())?;
        let policy_denials = match &self.policies {
            Some(p) => {
                let place = CommandPlace {
                    dir: &self.dir,
                    env: &self.env,
                    json_file: &self.json_file,
                    prefix: &self.prefix,
                };
                match p.judge(json, place).await {
                    Judged::Failed(denied) => return Err(denied),
                    Judged::Passed => Vec::new(),
                    Judged::Overridable(d) => d,
                }
            }
            None => Vec::new(),
        };
        let text = if self.with_text {
            plan_text(&self.show, &file, &self.dir, &self.env, &self.prefix).await
        } else {
            None
        };
        Ok(PlanOutcome {
            policy_denials,
            counts: summary.counts(),
            has_changes: summary.has_changes(),
            text,
            summary,
        })
    }
}

/// Whether the plan command itself succeeded (`-detailed-exitcode`: 0 no
/// changes, 2 changes; what changes is read from the saved plan).
fn outcome(command: &str, dir: &Path, finished: Result<Finished>) -> Result<(), String> {
    let finished = finished.map_err(|e| e.to_string())?;
    match finished.code {
        Some(0) | Some(2) => Ok(()),
        _ => Err(run::failed(command, dir, &finished).to_string()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A show command answering more than the capture cap (here without end)
    /// is stopped at the cap: a clear error naming the unit's directory, the
    /// command and the cap, never the whole answer in memory.
    #[tokio::test]
    async fn plan_json_larger_than_the_cap_is_refused_naming_the_unit_and_the_cap() {
        let unit = tempfile::tempdir().unwrap();
        let env = vec![("PATH".to_string(), "/usr/bin:/bin".to_string())];
        let started = std::time::Instant::now();
        let err = describe_plan(
            "yes '{\"planned_values\": {}, \"resource_changes\": []}' # {plan_file}",
            "p.tfplan",
            unit.path(),
            &env,
            "",
        )
        .await
        .unwrap_err();
        let text = err.to_string();
        let dir = unit.path().display().to_string();
        assert!(text.starts_with("plan JSON of \"yes "), "{text}");
        assert!(
            text.contains(&format!(
                " in {dir:?} is larger than the 67108864-byte cap (at least "
            )),
            "{text}"
        );
        assert_eq!(run::MAX_CAPTURE_BYTES, 67108864);
        assert!(text.ends_with("the command was stopped)"), "{text}");
        assert!(started.elapsed() < std::time::Duration::from_secs(60));
    }

    /// Concurrent units never share a plugin cache (terraform's is not safe
    /// for concurrent `init`s): each plan claims its cache with a no-clobber
    /// file for a while; a cache shared by two running plans fails the second
    /// (exit 7: a failed redirection's own 2 would read as "changes").
    /// Six units, three at a time, use three caches in all.
    #[tokio::test]
    async fn concurrent_plans_each_get_a_plugin_cache_of_their_own_slot() {
        let repo = tempfile::tempdir().unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let log = scratch.path().join("caches.log");
        let units: Vec<RepoPath> = ["a", "b", "c", "d", "e", "f"]
            .iter()
            .map(|u| {
                std::fs::create_dir(repo.path().join(u)).unwrap();
                RepoPath::new(u).unwrap()
            })
            .collect();
        let cache = scratch.path().join("plugin-cache");
        std::fs::create_dir(&cache).unwrap();
        let env = vec![
            ("PATH".to_string(), "/usr/bin:/bin".to_string()),
            (
                "TF_PLUGIN_CACHE_DIR".to_string(),
                cache.display().to_string(),
            ),
        ];
        let plan = format!(
            "(set -C && : > \"$TF_PLUGIN_CACHE_DIR/writer\") 2>/dev/null || exit 7; echo \"$TF_PLUGIN_CACHE_DIR\" >> {log:?} \
             && sleep 0.5 && rm \"$TF_PLUGIN_CACHE_DIR/writer\" && true {{plan_file}}"
        );
        let results = plan_units(
            repo.path(),
            scratch.path(),
            &units,
            |_| plan.clone(),
            |_| "printf '%s' '{\"format_version\": \"1.2\", \"planned_values\": {}, \"resource_changes\": []}' # {plan_file}".to_string(),
            |_| None,
            &env,
            3,
            false,
            None,
        )
        .await
        .unwrap();
        for r in &results {
            assert!(r.outcome.is_ok(), "{}: {:?}", r.path, r.outcome);
        }
        let used: std::collections::BTreeSet<String> = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(used.len(), 3, "{used:?}");
        for dir in &used {
            assert!(Path::new(dir).starts_with(&cache), "{dir}");
        }
    }
}
