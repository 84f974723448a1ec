//! The apply phase: the plan the voters approved (its hash checked, its lock
//! file restored), applied, then the resources of the unit's new providers
//! recorded for a rollback, also when the apply failed part way.

use std::path::Path;

use live_ci_core::deploy::{Action, ExecutionRecord};
use live_ci_core::path::RepoPath;
use live_ci_core::plan_view;
use live_ci_core::port::{ArtifactStore, ExecutionStore, PortResultExt, TaskTokens, sha256_hex};
use live_ci_core::terraform::{
    Phase, is_stale_plan, parse_apply_summary, program_of, resources_of_providers,
    resources_of_providers_in_state,
};
use live_ci_stepfunctions::payload::ApplyResult;

use super::prepare::Workspace;
use super::{TerraRunPorts, lock_file, log_command_time, run_with_heartbeat};
use crate::checkout::Checkout;
use crate::config::{PhaseInput, TerraRunConfig};
use crate::error::{Result, TaskError};
use crate::output::say;
use crate::{run, sandbox, timeline};

/// The apply phase, from the approved plan's bytes to the recorded resources.
#[allow(clippy::too_many_arguments)]
pub(super) async fn apply<M: ExecutionStore, A, T: TaskTokens, G, R>(
    config: &TerraRunConfig,
    ports: &TerraRunPorts<'_, M, A, T, G, R>,
    token: &str,
    record: &ExecutionRecord,
    ws: &Workspace,
    bytes: Vec<u8>,
    for_apply: plan_view::ForApply,
    logs_url: String,
) -> Result<ApplyResult> {
    place_plan(ws, &for_apply, bytes)?;
    // Which providers' resources this apply records for a rollback, worked
    // out while the command runs: the static reading reads git objects of
    // the commit, never the unit's directory the command writes in
    // (generated files, the restored lock).
    let (ran, new_providers) = tokio::join!(
        run_with_heartbeat(
            config,
            ports.tokens,
            token,
            &ws.command,
            &ws.unit_dir,
            &ws.env
        ),
        rollback_providers(&ws.checkout, record, &for_apply.new_providers)
    );
    timeline::mark("terraform");
    // An apply that failed or was interrupted may have created part of its
    // resources first: they are recorded as a successful apply's are, so the
    // run's rollback destroys them too (`deploy::rollback::plan_rollbacks`
    // takes failed applies).
    let finished = match ran {
        Ok(finished) => finished,
        Err(e @ TaskError::Interrupted { .. }) => {
            record_partial(ports.metadb, record, &new_providers, ws).await;
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    log_command_time(record, Phase::Apply, &finished);
    if finished.code != Some(0) {
        if is_stale_plan(&finished.output) {
            // Refused before it changed anything.
            let artifact = match &config.phase {
                PhaseInput::Apply { plan_artifact } => plan_artifact.clone(),
                PhaseInput::Plan => String::new(),
            };
            return Err(TaskError::StalePlan { artifact });
        }
        record_partial(ports.metadb, record, &new_providers, ws).await;
        return Err(run::failed(&ws.command, &ws.unit_dir, &finished));
    }
    let counts = parse_apply_summary(&finished.output).unwrap_or_default();
    let new_resources = record_new_resources(
        ports.metadb,
        record,
        &new_providers,
        &ws.command,
        &ws.unit_dir,
        &ws.env,
    )
    .await?;
    timeline::mark("resources");
    Ok(ApplyResult {
        execution_id: record.execution_id.clone(),
        added: counts.add,
        changed: counts.change,
        destroyed: counts.destroy,
        new_resources,
        logs_url,
    })
}

/// Before the command's `init`: the providers the plan selected, and the
/// approved plan itself, readable by the child's group (the apply reads it),
/// whatever the task's umask, and not writable by it.
fn place_plan(ws: &Workspace, for_apply: &plan_view::ForApply, bytes: Vec<u8>) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    lock_file::restore_lock(&ws.unit_dir, for_apply.lock_file.as_deref())?;
    let plan_file = ws.plan_file_str();
    std::fs::write(&ws.plan_file, bytes)
        .map_err(|e| TaskError::Io(format!("writing {plan_file:?}: {e}")))?;
    std::fs::set_permissions(&ws.plan_file, std::fs::Permissions::from_mode(0o640))
        .map_err(|e| TaskError::Io(format!("sharing {plan_file:?}: {e}")))
}

/// The plan the voters approved, as bytes: `artifact` must be the execution's
/// saved plan, and its content must hash to what the plan task recorded.
/// With it, what its sealed JSON carries for the apply (the plan's lock
/// file, its new providers), under the hash recorded in the same statement:
/// a sealed JSON that is missing or not the recorded one refuses the apply.
pub(super) async fn approved_plan<M: ExecutionStore, A: ArtifactStore, T, G, R>(
    ports: &TerraRunPorts<'_, M, A, T, G, R>,
    record: &ExecutionRecord,
    artifact: &str,
    key: &str,
) -> Result<(Vec<u8>, plan_view::ForApply)> {
    let bad = |message: String| TaskError::PlanArtifact {
        artifact: artifact.to_string(),
        message,
    };
    match ports.artifacts.key_of(artifact) {
        Some(k) if k == key => {}
        _ => {
            return Err(bad(format!(
                "is not the saved plan of execution {:?} at commit {} (expected {:?})",
                record.execution_id,
                record.commit_id,
                ports.artifacts.uri(key)
            )));
        }
    }
    let saved = ports
        .metadb
        .saved_plan(&record.execution_id)
        .await
        .port("metadb")?
        .filter(|s| s.key == key)
        .ok_or_else(|| {
            bad(format!(
                "no saved plan is recorded for execution {:?}: plan it again",
                record.execution_id
            ))
        })?;
    let version = saved.version_id.as_deref();
    let json_key = plan_view::json_key(key);
    // Both objects at once: the apply waits for neither twice.
    let (bytes, sealed) = tokio::join!(ports.artifacts.get_version(key, version), async {
        match saved.json_sha256 {
            Some(_) => ports.artifacts.get(&json_key).await.map(Some),
            None => Ok(None),
        }
    });
    let bytes = bytes.port("plan store")?.ok_or_else(|| {
        bad(format!(
            "no such saved plan (version {})",
            version.unwrap_or("current")
        ))
    })?;
    timeline::mark("download");
    let sha256 = sha256_hex(&bytes);
    if sha256 != saved.sha256 {
        return Err(bad(format!(
            "its content (sha-256 {sha256}) is not the approved plan (sha-256 {}): refusing to apply it; nothing was applied",
            saved.sha256
        )));
    }
    let for_apply = match sealed.port("plan store")? {
        None => {
            // Saved before the sealed JSON was kept (migration 0014): the
            // apply's `init` selects providers as it did then.
            say!(
                "live-ci: warning: execution {:?} has no sealed plan JSON recorded: its plan's lock file is not restored",
                record.execution_id
            );
            plan_view::ForApply::default()
        }
        Some(sealed) => plan_view::open_for_apply(&saved, sealed.as_deref()).map_err(|e| {
            TaskError::PlanArtifact {
                artifact: ports.artifacts.uri(&json_key),
                message: format!(
                    "the sealed plan JSON of execution {:?} (its lock file and new providers) is refused: {e}; nothing was applied",
                    record.execution_id
                ),
            }
        })?,
    };
    Ok((bytes, for_apply))
}

/// The providers whose resources the apply records for a rollback
/// ([`live_ci_core::terraform::providers_to_record`]): the record's (the
/// static head − base reading of create-deploy-stack) and those of the plan's
/// own, `in_plan`, that the same static reader (`ProviderIndex`, the unit as
/// discovery sees it, local module sources included) does not see in the unit
/// at the commit applied. A destroy or a rollback creates nothing: only the
/// record's. When the static reading fails here (it passed in
/// create-deploy-stack), only the record's, with a warning: a rollback never
/// destroys what cannot be shown to be this change's.
async fn rollback_providers(
    checkout: &Checkout,
    record: &ExecutionRecord,
    in_plan: &[String],
) -> Vec<String> {
    let recorded = &record.new_providers;
    if record.is_rollback
        || record.action != Action::Apply
        || in_plan.iter().all(|p| recorded.contains(p))
    {
        return recorded.clone();
    }
    let (git, commit, unit) = (
        checkout.git.clone(),
        checkout.commit.clone(),
        record.cfg_path.clone(),
    );
    // git runs as blocking child processes: off the runtime's threads.
    let seen = tokio::task::spawn_blocking(move || static_providers(&git, &commit, &unit))
        .await
        .map_err(|e| format!("the static reading stopped: {e}"))
        .and_then(|r| r);
    match seen {
        Ok(seen) => {
            let out = live_ci_core::terraform::providers_to_record(recorded, in_plan, &seen);
            let from_plan: Vec<&String> = out.iter().filter(|p| !recorded.contains(p)).collect();
            if !from_plan.is_empty() {
                say!(
                    "live-ci: new providers from the plan, not visible in the unit's files: {from_plan:?}"
                );
            }
            out
        }
        Err(e) => {
            tracing::warn!(execution_id = %record.execution_id, error = %e, "reading the unit's providers");
            say!(
                "live-ci: warning: the unit's providers could not be read ({e}); the plan's new providers {in_plan:?} are not recorded for rollback"
            );
            recorded.clone()
        }
    }
}

/// Every provider the static reader sees in `unit` at `commit`.
fn static_providers(
    git: &live_ci_git::GitCli,
    commit: &str,
    unit: &RepoPath,
) -> std::result::Result<std::collections::BTreeSet<String>, String> {
    use live_ci_core::port::Vcs;
    let tree = git
        .tree_at(Some(commit))
        .map_err(|e| format!("the tree at {commit:?}: {e}"))?;
    let (graph, _) = live_ci_terragrunt::discover(&*tree).into_graph();
    let i = graph
        .index_of(unit)
        .ok_or_else(|| format!("no unit {unit:?} at {commit:?}"))?;
    live_ci_terragrunt::providers::ProviderIndex::new(&*tree)
        .and_then(|index| index.providers(graph.unit(i)))
        .map_err(|e| e.to_string())
}

/// [`record_new_resources`] after an apply that did not succeed: the apply's
/// own failure is what the token reports, so a failure to record is logged.
async fn record_partial<M: ExecutionStore>(
    metadb: &M,
    record: &ExecutionRecord,
    new_providers: &[String],
    ws: &Workspace,
) {
    if let Err(e) = record_new_resources(
        metadb,
        record,
        new_providers,
        &ws.command,
        &ws.unit_dir,
        &ws.env,
    )
    .await
    {
        tracing::warn!(execution_id = %record.execution_id, error = %e, "recording a failed apply's new resources");
        say!(
            "live-ci: warning: what this failed apply created could not be recorded for rollback: {e}"
        );
    }
}

/// After an apply: the resources of the unit's `new_providers`
/// ([`rollback_providers`]), from `show -json`
/// run with the apply command's own tool, stored in the execution's
/// `new_resources` (what a rollback destroys with `-target`).
async fn record_new_resources<M: ExecutionStore>(
    metadb: &M,
    record: &ExecutionRecord,
    new_providers: &[String],
    apply_command: &str,
    unit_dir: &Path,
    env: &[(String, String)],
) -> Result<Vec<String>> {
    if new_providers.is_empty() {
        return Ok(Vec::new());
    }
    let program = program_of(apply_command).unwrap_or("terraform");
    // `state pull` prints the state as stored without starting a provider;
    // `show -json` starts every provider in the state for its schema (with
    // the aws provider 2.9 s against 0.7 s here). Whatever the pull does not
    // give in a form read exactly as terraform prints addresses falls back to
    // `show -json`, which stays the reference.
    let pulled = match tool_output(program, &["state", "pull"], unit_dir, env).await {
        Ok(out) if out.status.success() => {
            resources_of_providers_in_state(&String::from_utf8_lossy(&out.stdout), new_providers)
                .ok()
                .flatten()
        }
        _ => None,
    };
    let resources = match pulled {
        Some(resources) => resources,
        None => {
            tracing::info!(execution_id = %record.execution_id, "the pulled state is not read here: asking show -json");
            let out = tool_output(program, &["show", "-json", "-no-color"], unit_dir, env).await?;
            if !out.status.success() {
                return Err(TaskError::CommandFailed {
                    command: format!("{program} show -json"),
                    dir: unit_dir.display().to_string(),
                    code: format!("{}", out.status),
                    tail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
                });
            }
            resources_of_providers(&String::from_utf8_lossy(&out.stdout), new_providers).map_err(
                |message| TaskError::Unit {
                    unit: record.cfg_path.to_string(),
                    message,
                },
            )?
        }
    };
    let stored = metadb
        .record_new_resources(&record.execution_id, &resources)
        .await
        .port("metadb")?;
    if !stored {
        // The apply happened; failing now would hide that. Say it loudly instead.
        tracing::warn!(execution_id = %record.execution_id, "execution not running: new resources not stored");
        say!(
            "live-ci: warning: execution {:?} is no longer running; its new resources were not stored",
            record.execution_id
        );
    }
    say!(
        "live-ci: new provider resources recorded for rollback: {}",
        if resources.is_empty() {
            "none".to_string()
        } else {
            resources.join(", ")
        }
    );
    Ok(resources)
}

/// `program args…` in the unit directory with the command's environment.
async fn tool_output(
    program: &str,
    args: &[&str],
    unit_dir: &Path,
    env: &[(String, String)],
) -> Result<std::process::Output> {
    // Repository code too (the providers `show -json` starts): the child user.
    sandbox::command(program, unit_dir, env)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|e| TaskError::Spawn {
            command: format!("{program} {}", args.join(" ")),
            message: e.to_string(),
        })
}
