//! `terra-run`: one plan or apply of one unit, for the state machine's Plan and
//! Apply states. It checks out the execution's commit, runs the record's
//! command in the unit directory with heartbeats, and answers the task token:
//! `PlanResult` / `ApplyResult` on success, the error otherwise. A plan is saved
//! to the plan store keyed by execution and commit, its SHA-256 and object
//! version recorded in the metadb; an apply runs only when the metadb records
//! the voters' approval of a running execution of a running run
//! (`ExecutionRecord::apply_refusal`), downloads exactly that version, refuses
//! any other content, restores the plan's lock file (carried in the plan's
//! sealed JSON, under the hash recorded with the plan's) before the apply
//! command's `init`, applies it, then records the resources of the unit's new
//! providers. Both phases run only the record's command and role: the state
//! machine's input may repeat them, never replace them. The command runs as
//! the unit's own account role, assumed here, with an allow-listed
//! environment (`crate::sandbox`). The
//! checkout is the run's packed checkout when create-deploy-stack stored one
//! (its digest checked against the record), else a fetch of the commit.

use std::path::Path;
use std::time::Duration;

use live_ci_core::approval::{RUN_LINK_TTL_SECS, RunLinkKey, RunPages};
use live_ci_core::deploy::{Action, ExecutionRecord, RunId};
use live_ci_core::path::RepoPath;
use live_ci_core::port::GitHost;
use live_ci_core::port::PortResultExt;
use live_ci_core::port::{
    ArtifactStore, ExecutionStore, ParamStore, RoleAssumer, RunStore, SavedPlan, TaskTokens,
    TokenDelivery, sha256_hex,
};
use live_ci_core::status::{Check, CommitStatus, StatusState, Statuses, context};
use live_ci_core::terraform::{
    Phase, is_stale_plan, parse_apply_summary, plan_key, program_of, resources_of_providers,
    resources_of_providers_in_state, with_plan_file,
};
use live_ci_core::{plan_text, plan_view};
use live_ci_workflow::payload::{ApplyResult, PlanResult};
use serde::Serialize;

use crate::checkout::{Checkout, Repo};
use crate::config::{PhaseInput, TerraRunConfig};
use crate::error::{Result, TaskError};
use crate::plans::{self, describe_plan_json};
use crate::policy::{CommandPlace, Policies, Rego};
use crate::run::{self, Tick};
use crate::sandbox;
use crate::timeline;
use live_ci_core::policy::Judged;

/// The ports terra-run talks to.
#[derive(Debug)]
pub struct TerraRunPorts<'a, M, A, T, G, R> {
    pub metadb: &'a M,
    pub artifacts: &'a A,
    pub tokens: &'a T,
    /// Assumes the unit's account role for the command.
    pub roles: &'a R,
    /// The plan and apply statuses (switched by `Plan`, `Apply`).
    pub statuses: Statuses<&'a G>,
}

/// The commit-status context of one unit's plan or apply.
pub fn status_context(phase: Phase, cfg_path: &RepoPath) -> String {
    context::phase_unit(phase, cfg_path.as_str())
}

/// What terra-run reported with SendTaskSuccess.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum TerraRunResult {
    Plan(PlanResult),
    Apply(ApplyResult),
}

/// Runs the phase the environment names and answers the task token either way.
/// The returned error has already been sent with SendTaskFailure (when a token
/// was given).
pub async fn terra_run<
    M: RunStore + ExecutionStore,
    A: ArtifactStore,
    T: TaskTokens,
    G: GitHost,
    R: RoleAssumer,
>(
    config: &TerraRunConfig,
    repo: &Repo,
    logs_url: Option<&str>,
    ports: &TerraRunPorts<'_, M, A, T, G, R>,
) -> Result<TerraRunResult> {
    terra_run_with(config, repo, logs_url, ports, None).await
}

/// [`terra_run`] with the execution's record when the task's start read it
/// already (`crate::startup::open_metadb_reading`); without it (or for another
/// execution) the record is read here.
pub async fn terra_run_with<
    M: RunStore + ExecutionStore,
    A: ArtifactStore,
    T: TaskTokens,
    G: GitHost,
    R: RoleAssumer,
>(
    config: &TerraRunConfig,
    repo: &Repo,
    logs_url: Option<&str>,
    ports: &TerraRunPorts<'_, M, A, T, G, R>,
    prefetched: Option<ExecutionRecord>,
) -> Result<TerraRunResult> {
    let token = config.task_token.clone();
    let mut unit = None;
    let mut unit_plan = None;
    let outcome = phase(
        config,
        repo,
        logs_url,
        ports,
        &token,
        prefetched,
        &mut unit,
        &mut unit_plan,
    )
    .await;
    let status = async {
        let Some((commit, cfg_path, run_id)) = &unit else {
            return;
        };
        let phase = config.phase.phase();
        let (state, description) = match &outcome {
            Ok(TerraRunResult::Plan(p)) => (StatusState::Success, p.summary()),
            Ok(TerraRunResult::Apply(a)) => (
                StatusState::Success,
                format!(
                    "{} added, {} changed, {} destroyed",
                    a.added, a.changed, a.destroyed
                ),
            ),
            Err(e) => (StatusState::Failure, e.to_string()),
        };
        let text = match &outcome {
            // A check run (with an App) shows the plan; a status cannot.
            Ok(TerraRunResult::Plan(_)) => unit_plan
                .as_deref()
                .map(|plan| plan_text::fit_plan(plan, logs_url, plan_text::CHECK_RUN_LIMIT)),
            _ => None,
        };
        post_status(
            ports,
            status_link(config, *run_id, logs_url).as_deref(),
            phase,
            commit,
            cfg_path,
            state,
            &description,
            text,
        )
        .await;
        timeline::mark("final_status");
    };
    let answer = async {
        match &outcome {
            Ok(result) => {
                let json = serde_json::to_string(result)
                    .map_err(|e| TaskError::Tokens(format!("encoding the result: {e}")))?;
                let sent = ports.tokens.send_success(&token, &json).await;
                timeline::mark("answered");
                Ok::<_, TaskError>(sent.port("task tokens")?)
            }
            Err(e) => {
                let sent = ports
                    .tokens
                    .send_failure(&token, e.name(), &e.to_string())
                    .await;
                timeline::mark("answered");
                Ok::<_, TaskError>(sent.port("task tokens")?)
            }
        }
    };
    // The answer moves the state machine on; the status (a GitHub round trip)
    // goes at the same time instead of before it.
    let ((), delivery) = tokio::join!(status, answer);
    timeline::log(&config.execution_id, config.phase.phase().as_str());
    let delivery = delivery?;
    if let TokenDelivery::Gone { reason } = delivery {
        tracing::warn!(%reason, "the state machine no longer waits for this task");
    }
    outcome
}

/// The run-link key and the run page's address, when the module configures
/// them (`RUN_LINK_KEY_SSM_KEY`, `RUN_PAGE_URL`). A key that cannot be read
/// or is refused (placeholder, too short) is logged and the statuses link the
/// logs: a status is advisory, it never fails the phase.
pub async fn run_pages<P: ParamStore>(config: &TerraRunConfig, params: &P) -> Option<RunPages> {
    let (name, base_url) = config.run_pages_param.as_ref()?;
    let secret = match params.get(name).await {
        Ok(secret) => secret,
        Err(e) => {
            tracing::warn!(parameter = %name, error = %e, "reading the run-link key");
            return None;
        }
    };
    match RunLinkKey::new(secret.as_bytes()) {
        Ok(key) => Some(RunPages {
            key,
            base_url: base_url.clone(),
            ttl_secs: RUN_LINK_TTL_SECS,
        }),
        Err(e) => {
            // Never the value: only why it was refused.
            tracing::warn!(parameter = %name, error = %e, "the run-link key is refused");
            None
        }
    }
}

/// Where the unit's statuses (and check runs' details) link: the read-only
/// run page of the execution's run, signed with the run-link key, which a
/// reviewer without console access can open (for operators it links the
/// unit's Step Functions execution, and its plan logs once an approval is
/// requested); without run pages, the task's logs as before.
fn status_link(config: &TerraRunConfig, run_id: RunId, logs_url: Option<&str>) -> Option<String> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    match &config.run_pages {
        Some(pages) => pages.url(run_id, now),
        None => logs_url.map(str::to_string),
    }
}

/// Posts a plan or apply status when the configuration asks for it; a status
/// that cannot be posted is logged, never fatal (the token is the real answer).
/// `text`: the unit's plan, fitted, for a check run's output.
#[allow(clippy::too_many_arguments)]
async fn post_status<M, A, T, G: GitHost, R>(
    ports: &TerraRunPorts<'_, M, A, T, G, R>,
    link: Option<&str>,
    phase: Phase,
    commit: &str,
    cfg_path: &RepoPath,
    state: StatusState,
    description: &str,
    text: Option<String>,
) {
    let check = match phase {
        Phase::Plan => Check::Plan,
        Phase::Apply => Check::Apply,
    };
    let mut status =
        CommitStatus::new(commit, state, &status_context(phase, cfg_path), description);
    status.target_url = link.map(str::to_string);
    status.text = text;
    ports.statuses.post(check, &status).await;
}

/// One phase of the unit; `unit` and `unit_plan` (the plan's text, when a
/// status shows it) are filled in as they are known, for the final status.
#[allow(clippy::too_many_arguments)]
async fn phase<
    M: RunStore + ExecutionStore,
    A: ArtifactStore,
    T: TaskTokens,
    G: GitHost,
    R: RoleAssumer,
>(
    config: &TerraRunConfig,
    repo: &Repo,
    logs_url: Option<&str>,
    ports: &TerraRunPorts<'_, M, A, T, G, R>,
    token: &str,
    prefetched: Option<ExecutionRecord>,
    unit: &mut Option<(String, RepoPath, RunId)>,
    unit_plan: &mut Option<String>,
) -> Result<TerraRunResult> {
    let phase = config.phase.phase();
    let execution_id = &config.execution_id;
    let record = match prefetched.filter(|r| r.execution_id == *execution_id) {
        Some(record) => record,
        None => ports
            .metadb
            .execution(execution_id)
            .await
            .port("metadb")?
            .ok_or_else(|| TaskError::UnknownExecution(execution_id.clone()))?,
    };
    timeline::mark("execution");
    *unit = Some((
        record.commit_id.clone(),
        record.cfg_path.clone(),
        record.run_id,
    ));
    let command = unit_command(config, &record, phase)?;
    if phase == Phase::Apply {
        // Only what the metadb approved is applied, whatever the execution's
        // input says: the voters' decision at its threshold, on a running
        // execution of a running run (`ExecutionRecord::apply_refusal`).
        let run = ports
            .metadb
            .run(record.run_id)
            .await
            .port("metadb")?
            .ok_or_else(|| TaskError::Refused {
                phase: phase.as_str(),
                execution_id: record.execution_id.clone(),
                reason: format!("its run #{} is not in the metadb", record.run_id),
            })?;
        if let Some(reason) = record.apply_refusal(run.status) {
            return Err(TaskError::Refused {
                phase: phase.as_str(),
                execution_id: record.execution_id.clone(),
                reason,
            });
        }
        timeline::mark("authorised");
    }
    println!(
        "live-ci terra-run {}: execution {:?}, unit {:?}, commit {}",
        phase.as_str(),
        record.execution_id,
        record.cfg_path.as_str(),
        record.commit_id
    );
    let key = plan_key(&record.execution_id, &record.commit_id);
    // The pending status, the checkout with the role, and an apply's approved
    // plan are independent round trips: they go at once.
    let pending = async {
        post_status(
            ports,
            status_link(config, record.run_id, logs_url).as_deref(),
            phase,
            &record.commit_id,
            &record.cfg_path,
            StatusState::Pending,
            match phase {
                Phase::Plan => "planning",
                Phase::Apply => "applying the approved plan",
            },
            None,
        )
        .await;
        timeline::mark("pending_status");
    };
    let approved = async {
        match &config.phase {
            PhaseInput::Plan => Ok(None),
            PhaseInput::Apply { plan_artifact } => {
                approved_plan(ports, &record, plan_artifact, &key)
                    .await
                    .map(Some)
            }
        }
    };
    // A plan's judges: the policies of the run's base commit, never of the
    // commit being planned.
    let policies = async {
        match (&config.phase, &config.common.policy_dir) {
            (PhaseInput::Plan, Some(dir)) => {
                base_policies(repo, ports, &record, dir).await.map(Some)
            }
            _ => Ok(None),
        }
    };
    let ((), prepared, approved, policies) = tokio::join!(
        pending,
        prepare(config, repo, ports, &record, phase),
        approved,
        policies
    );
    // An apply refuses a plan that is not the approved one before anything else.
    let approved = approved?;
    let Prepared {
        checkout,
        unit_dir,
        credentials,
    } = prepared?;
    // A policy that does not load stops the plan before it runs.
    let policies = match &config.phase {
        PhaseInput::Plan => Policies::new(
            policies?,
            config.common.policy_command.clone(),
            config.common.policy_override,
        ),
        PhaseInput::Apply { .. } => None,
    };
    // In a directory of the child's: the plan command writes the file there.
    let out_dir = checkout.scratch_file("out");
    sandbox::child_dirs(&[&out_dir])?;
    let plan_file = out_dir.join("unit.tfplan");
    let plan_file_str = plan_file.display().to_string();
    let mut extra = vec![
        (
            "LIVE_CI_REPO_DIR".to_string(),
            checkout.dir().display().to_string(),
        ),
        ("LIVE_CI_CFG_PATH".into(), record.cfg_path.to_string()),
        ("LIVE_CI_EXECUTION_ID".into(), record.execution_id.clone()),
    ];
    // Merged code: the deploy key, through an agent the command may sign
    // with, never read. Kept until the command ends: dropping it stops the
    // agent.
    let ssh = crate::git_ssh::child_env(
        config.common.git_ssh_key.as_ref(),
        &config.common.ssh_known_hosts,
        &checkout.scratch_file("ssh"),
        crate::git_ssh::KeyUse::Allowed,
    )
    .await?;
    extra.extend(ssh.env().iter().cloned());
    extra.extend(sandbox::private_dirs(&checkout.scratch_file("env"))?);
    let env = sandbox::env_for(credentials.as_ref(), &extra);
    let command = with_plan_file(&command, phase, &plan_file_str);
    let logs_url = logs_url.unwrap_or_default().to_string();
    match approved {
        None => {
            let finished =
                run_with_heartbeat(config, ports.tokens, token, &command, &unit_dir, &env).await?;
            timeline::mark("terraform");
            log_command_time(&record, phase, &finished);
            if finished.code != Some(0) {
                return Err(run::failed(&command, &unit_dir, &finished));
            }
            // Written by repository code: read as untrusted input (no link
            // followed, a size cap).
            let bytes = sandbox::read_child_file(&plan_file, sandbox::MAX_CHILD_FILE_BYTES)
                .map_err(|e| TaskError::PlanArtifact {
                    artifact: plan_file_str.clone(),
                    message: if e.kind() == std::io::ErrorKind::NotFound {
                        "the plan command saved no plan; the template must write {plan_file}"
                            .to_string()
                    } else {
                        format!("the saved plan is refused: {e}")
                    },
                })?;
            // The summary (a `show` process) and the plan's storage (S3, then
            // the metadb) are independent: they go at once.
            let show = config.common.show_command.for_unit(&record.cfg_path);
            let describe = async {
                let summary = describe_plan_json(&show, &plan_file_str, &unit_dir, &env, "").await;
                timeline::mark("show");
                summary
            };
            // The plan as terraform shows it to people (`show -no-color`, as
            // the child user), for the plan status when the host shows a
            // status's text (a check run); a read-only `show` beside the other.
            let shows_text =
                ports.statuses.allows(Check::Plan) && ports.statuses.host().shows_status_text();
            let render = async {
                if shows_text {
                    plans::plan_text(&show, &plan_file_str, &unit_dir, &env, "").await
                } else {
                    None
                }
            };
            let (summary, stored, text) =
                tokio::join!(describe, store_plan(ports, &key, bytes), render);
            *unit_plan = text;
            let (summary, json) = summary?;
            // Judged before the plan is recorded: a denied plan never reaches
            // the vote (the state machine's Plan Failed ends the execution,
            // the approval request sends nothing), unless POLICY_OVERRIDE is
            // on: then its denials are recorded before the plan, so no vote
            // can see the plan without them.
            let mut policy_denials = Vec::new();
            if let Some(policies) = &policies {
                let json_file = out_dir.join("unit.plan.json");
                let place = CommandPlace {
                    dir: &unit_dir,
                    env: &env,
                    json_file: &json_file,
                    prefix: "",
                };
                match policies.judge(json.clone(), place).await {
                    Judged::Passed => {}
                    Judged::Failed(denied) => {
                        return Err(TaskError::Policy {
                            subject: record.cfg_path.to_string(),
                            message: denied,
                        });
                    }
                    Judged::Overridable(denials) => {
                        println!(
                            "live-ci: {}: {}",
                            live_ci_core::policy::OVERRIDABLE,
                            denials.join("; ")
                        );
                        policy_denials = denials;
                    }
                }
            }
            let stored = stored?;
            if !policy_denials.is_empty() {
                let recorded = ports
                    .metadb
                    .record_policy_denials(&record.execution_id, &stored.sha256, &policy_denials)
                    .await
                    .port("metadb")?;
                if !recorded {
                    return Err(TaskError::PlanArtifact {
                        artifact: ports.artifacts.uri(&key),
                        message: format!(
                            "execution {:?} has ended: the policy denials were not recorded",
                            record.execution_id
                        ),
                    });
                }
            }
            // The lock file the plan ran with travels in the sealed JSON, so
            // the apply's `init` selects the plan's providers.
            let lock = planned_lock(&unit_dir)?;
            // The JSON the approval page shows, sealed to this plan's hash
            // and recorded with it in one statement.
            record_plan(
                ports,
                &record,
                &key,
                stored,
                json.as_bytes(),
                lock.as_deref(),
            )
            .await?;
            let (first_changes, more_changes) =
                plan_view::PlanView::from_show_json(json.as_bytes())
                    .map(|v| v.first_lines(live_ci_workflow::payload::FIRST_CHANGES))
                    .unwrap_or_default();
            let more_changes = u32::try_from(more_changes).unwrap_or(u32::MAX);
            let result = PlanResult {
                execution_id: record.execution_id.clone(),
                to_add: summary.add,
                to_change: summary.change,
                to_destroy: summary.destroy,
                to_replace: summary.replace,
                to_import: summary.import,
                to_forget: summary.forget,
                outputs_changed: summary.outputs_changed.clone(),
                skip_apply: config.common.skip_unchanged && !summary.has_changes(),
                plan_artifact: ports.artifacts.uri(&key),
                logs_url,
                first_changes,
                more_changes,
                policy_denials,
            };
            println!(
                "live-ci: plan saved to {} ({}){}",
                result.plan_artifact,
                result.summary(),
                if result.skip_apply {
                    ": nothing to approve or apply"
                } else {
                    ""
                }
            );
            Ok(TerraRunResult::Plan(result))
        }
        Some((bytes, for_apply)) => {
            // Before the command's `init`: the providers the plan selected.
            restore_lock(&unit_dir, for_apply.lock_file.as_deref())?;
            std::fs::write(&plan_file, bytes)
                .map_err(|e| TaskError::Io(format!("writing {plan_file_str:?}: {e}")))?;
            // Readable by the child's group (the apply reads it), whatever
            // the task's umask; not writable by it.
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&plan_file, std::fs::Permissions::from_mode(0o640))
                    .map_err(|e| TaskError::Io(format!("sharing {plan_file_str:?}: {e}")))?;
            }
            // Which providers' resources this apply records for a rollback,
            // worked out while the command runs: the static reading reads
            // git objects of the commit, never the unit's directory the
            // command writes in (generated files, the restored lock).
            let (ran, new_providers) = tokio::join!(
                run_with_heartbeat(config, ports.tokens, token, &command, &unit_dir, &env),
                rollback_providers(&checkout, &record, &for_apply.new_providers)
            );
            timeline::mark("terraform");
            // An apply that failed or was interrupted may have created part of
            // its resources first: they are recorded as a successful apply's
            // are, so the run's rollback destroys them too
            // (`deploy::rollback::plan_rollbacks` takes failed applies).
            let finished = match ran {
                Ok(finished) => finished,
                Err(e @ TaskError::Interrupted { .. }) => {
                    record_partial(
                        ports.metadb,
                        &record,
                        &new_providers,
                        &command,
                        &unit_dir,
                        &env,
                    )
                    .await;
                    return Err(e);
                }
                Err(e) => return Err(e),
            };
            log_command_time(&record, phase, &finished);
            if finished.code != Some(0) {
                if is_stale_plan(&finished.output) {
                    // Refused before it changed anything.
                    let artifact = match &config.phase {
                        PhaseInput::Apply { plan_artifact } => plan_artifact.clone(),
                        PhaseInput::Plan => String::new(),
                    };
                    return Err(TaskError::StalePlan { artifact });
                }
                record_partial(
                    ports.metadb,
                    &record,
                    &new_providers,
                    &command,
                    &unit_dir,
                    &env,
                )
                .await;
                return Err(run::failed(&command, &unit_dir, &finished));
            }
            let counts = parse_apply_summary(&finished.output).unwrap_or_default();
            let new_resources = record_new_resources(
                ports.metadb,
                &record,
                &new_providers,
                &command,
                &unit_dir,
                &env,
            )
            .await?;
            timeline::mark("resources");
            Ok(TerraRunResult::Apply(ApplyResult {
                execution_id: record.execution_id.clone(),
                added: counts.add,
                changed: counts.change,
                destroyed: counts.destroy,
                new_resources,
                logs_url,
            }))
        }
    }
}

/// A unit's checkout and the credentials of its account's role for the phase.
struct Prepared {
    checkout: Checkout,
    unit_dir: std::path::PathBuf,
    credentials: Option<live_ci_core::port::TemporaryCredentials>,
}

/// Checks out the commit the unit runs from and assumes its role.
async fn prepare<M: RunStore, A: ArtifactStore, T, G, R: RoleAssumer>(
    config: &TerraRunConfig,
    repo: &Repo,
    ports: &TerraRunPorts<'_, M, A, T, G, R>,
    record: &ExecutionRecord,
    phase: Phase,
) -> Result<Prepared> {
    // A removed unit exists only before its removal: its destroy runs from the
    // checkout of the run's range start. A rollback is a destroy too, but of
    // what this run applied at its own commit, so it runs from that commit.
    let source = match record.action {
        Action::Apply => record.commit_id.clone(),
        Action::Destroy if record.is_rollback => record.commit_id.clone(),
        Action::Destroy => {
            ports
                .metadb
                .run(record.run_id)
                .await
                .port("metadb")?
                .ok_or_else(|| TaskError::UnknownExecution(record.execution_id.clone()))?
                .base_sha
        }
    };
    let checked_out = async {
        let checkout = check_out(ports.artifacts, repo, record, &source).await?;
        timeline::mark("checkout");
        let unit_dir = checkout.dir().join(record.cfg_path.as_str());
        if !unit_dir.is_dir() {
            return Err(TaskError::Unit {
                unit: record.cfg_path.to_string(),
                message: format!("no such directory at commit {source:?}"),
            });
        }
        Ok((checkout, unit_dir))
    };
    // The role (an STS round trip) needs only the record: it is assumed
    // while the checkout is made instead of after it. Nothing is handed the
    // credentials before both succeed, and a failed checkout still wins over
    // a refused role, as when they ran one after the other.
    let assumed = async {
        let role = unit_role(config, record, phase)?;
        let credentials = sandbox::assume(
            ports.roles,
            role,
            &format!("{}-{}", phase.as_str(), record.execution_id),
        )
        .await;
        timeline::mark("role");
        credentials
    };
    let (checked_out, credentials) = tokio::join!(checked_out, assumed);
    let (checkout, unit_dir) = checked_out?;
    let credentials = credentials?;
    Ok(Prepared {
        checkout,
        unit_dir,
        credentials,
    })
}

/// The policies (`POLICY_DIR`) at the run's base commit: a one-commit fetch
/// of it, read from git, never the checkout being planned.
async fn base_policies<M: RunStore, A, T, G, R>(
    repo: &Repo,
    ports: &TerraRunPorts<'_, M, A, T, G, R>,
    record: &ExecutionRecord,
    dir: &RepoPath,
) -> Result<Rego> {
    let base = ports
        .metadb
        .run(record.run_id)
        .await
        .port("metadb")?
        .ok_or_else(|| TaskError::UnknownExecution(record.execution_id.clone()))?
        .base_sha;
    let (repo, dir) = (repo.clone(), dir.clone());
    tokio::task::spawn_blocking(move || {
        let checkout = Checkout::commit_only(&repo, &base)?;
        Rego::load(&checkout.git, &checkout.commit, &dir)
    })
    .await
    .map_err(|e| TaskError::Io(format!("reading the base commit's policies stopped: {e}")))?
}

/// The checkout of `source`: the run's packed checkout when it has one of that
/// commit (downloaded, its SHA-256 checked against the record, then unpacked),
/// else a fetch of the commit from the repository. A packed checkout whose
/// content is not the recorded one is an error and nothing runs; one that is
/// missing or unreadable falls back to the fetch, with a warning.
async fn check_out<A: ArtifactStore>(
    artifacts: &A,
    repo: &Repo,
    record: &ExecutionRecord,
    source: &str,
) -> Result<Checkout> {
    match &record.checkout {
        Some(packed) if source == record.commit_id => {
            let uri = artifacts.uri(&packed.key);
            match artifacts.get(&packed.key).await {
                Ok(Some(bytes)) => {
                    timeline::mark("checkout_download");
                    let sha256 = sha256_hex(&bytes);
                    if sha256 != packed.sha256 {
                        return Err(TaskError::CachedCheckout {
                            key: packed.key.clone(),
                            message: format!(
                                "its content (sha-256 {sha256}) is not the run's recorded checkout (sha-256 {}): refusing to unpack it; nothing was run",
                                packed.sha256
                            ),
                        });
                    }
                    let size = bytes.len();
                    let (key, commit) = (packed.key.clone(), source.to_string());
                    // Unpacking writes thousands of files: off the runtime's threads.
                    let checkout = tokio::task::spawn_blocking(move || {
                        Checkout::unpacked(&key, &bytes, &commit)
                    })
                    .await
                    .map_err(|e| TaskError::Io(format!("unpacking {uri:?} stopped: {e}")))??;
                    println!(
                        "live-ci: checkout of {source} unpacked from the run's packed checkout {uri} ({size} bytes)"
                    );
                    return Ok(checkout);
                }
                Ok(None) => {
                    tracing::warn!(%uri, "the run's packed checkout is missing: fetching the commit");
                    println!(
                        "live-ci: warning: the run's packed checkout {uri} is missing; fetching {source} from the repository"
                    );
                }
                Err(e) => {
                    tracing::warn!(%uri, error = %e, "reading the run's packed checkout: fetching the commit");
                    println!(
                        "live-ci: warning: reading the run's packed checkout {uri}: {e}; fetching {source} from the repository"
                    );
                }
            }
        }
        Some(_) => println!(
            "live-ci: a destroy of a removed unit runs from the range's start {source}, not the run's packed commit: fetching it"
        ),
        None => println!("live-ci: the run has no packed checkout: fetching {source}"),
    }
    // git runs as blocking child processes: off the runtime's threads, so the
    // status and the plan download go on meanwhile.
    let (repo, commit) = (repo.clone(), source.to_string());
    tokio::task::spawn_blocking(move || Checkout::commit_only(&repo, &commit))
        .await
        .map_err(|e| TaskError::Io(format!("the checkout of {source:?} stopped: {e}")))?
}

/// The plan the voters approved, as bytes: `artifact` must be the execution's
/// saved plan, and its content must hash to what the plan task recorded.
/// With it, what its sealed JSON carries for the apply (the plan's lock
/// file, its new providers), under the hash recorded in the same statement:
/// a sealed JSON that is missing or not the recorded one refuses the apply.
async fn approved_plan<M: ExecutionStore, A: ArtifactStore, T, G, R>(
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
            println!(
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
                println!(
                    "live-ci: new providers from the plan, not visible in the unit's files: {from_plan:?}"
                );
            }
            out
        }
        Err(e) => {
            tracing::warn!(execution_id = %record.execution_id, error = %e, "reading the unit's providers");
            println!(
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
    let (graph, _) = live_ci_engine::discover(&*tree).into_graph();
    let i = graph
        .index_of(unit)
        .ok_or_else(|| format!("no unit {unit:?} at {commit:?}"))?;
    live_ci_engine::providers::ProviderIndex::new(&*tree)
        .and_then(|index| index.providers(graph.unit(i)))
        .map_err(|e| e.to_string())
}

/// The most of a lock file read back from the plan's unit directory.
const MAX_LOCK_FILE_BYTES: u64 = 1 << 20;

/// Where terraform keeps the dependency lock file of a unit. Terragrunt
/// copies it from the unit's directory into its cache directory before
/// `init` and back after it (a terragrunt behaviour, not terraform's), so the
/// unit's directory is where both the plan leaves it and the apply finds it.
const LOCK_FILE: &str = ".terraform.lock.hcl";

/// The lock file the plan command left in the unit's directory, if any.
/// Written by repository code: read as untrusted input (no link followed, a
/// size cap), and only text.
fn planned_lock(unit_dir: &Path) -> Result<Option<String>> {
    let path = unit_dir.join(LOCK_FILE);
    let refused = |message: String| TaskError::PlanArtifact {
        artifact: path.display().to_string(),
        message,
    };
    match sandbox::read_child_file(&path, MAX_LOCK_FILE_BYTES) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| refused("the plan's lock file is not UTF-8 text: refused".into())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(refused(format!("the plan's lock file is refused: {e}"))),
    }
}

/// Puts the plan's lock file in the unit's directory of the apply's fresh
/// checkout, in place of whatever is there (a committed lock, or a link the
/// checkout holds, removed rather than followed), owned by the task and
/// readable by the child like every committed file. Nothing to do when the
/// plan had none.
fn restore_lock(unit_dir: &Path, lock: Option<&str>) -> Result<()> {
    use std::io::Write;
    let Some(lock) = lock else {
        return Ok(());
    };
    let path = unit_dir.join(LOCK_FILE);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(TaskError::file("replacing", &path, e)),
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .and_then(|mut f| f.write_all(lock.as_bytes()))
        .map_err(|e| TaskError::file("writing", &path, e))?;
    sandbox::share_read_only(&path, 0o640)?;
    println!("live-ci: the plan's lock file restored to {LOCK_FILE} before the apply");
    Ok(())
}

/// Uploads a new plan. The hash is taken here, in the task, from the bytes
/// it uploads: the apply accepts this content only.
async fn store_plan<M, A: ArtifactStore, T, G, R>(
    ports: &TerraRunPorts<'_, M, A, T, G, R>,
    key: &str,
    bytes: Vec<u8>,
) -> Result<SavedPlan> {
    let sha256 = sha256_hex(&bytes);
    let version_id = ports.artifacts.put(key, bytes).await.port("plan store")?;
    timeline::mark("upload");
    Ok(SavedPlan {
        key: key.to_string(),
        sha256,
        version_id,
        json_sha256: None,
    })
}

/// Stores the plan's `show -json` sealed to its hash, with the plan's lock
/// file and new providers (`plan_view::seal_with_lock`), beside it, then
/// records both hashes for the execution in one statement.
async fn record_plan<M: ExecutionStore, A: ArtifactStore, T, G, R>(
    ports: &TerraRunPorts<'_, M, A, T, G, R>,
    record: &ExecutionRecord,
    key: &str,
    mut saved: SavedPlan,
    show_json: &[u8],
    lock: Option<&str>,
) -> Result<()> {
    let sealed = plan_view::seal_with_lock(&saved.sha256, show_json, lock).map_err(|message| {
        TaskError::PlanArtifact {
            artifact: ports.artifacts.uri(&plan_view::json_key(key)),
            message,
        }
    })?;
    saved.json_sha256 = Some(sha256_hex(&sealed));
    ports
        .artifacts
        .put(&plan_view::json_key(key), sealed)
        .await
        .port("plan store")?;
    let recorded = ports
        .metadb
        .record_saved_plan(&record.execution_id, &saved)
        .await
        .port("metadb")?;
    timeline::mark("recorded");
    if !recorded {
        return Err(TaskError::PlanArtifact {
            artifact: ports.artifacts.uri(key),
            message: format!(
                "execution {:?} has ended: the saved plan was not recorded",
                record.execution_id
            ),
        });
    }
    Ok(())
}

/// The command of this phase, from the metadb record: the state machine's
/// `LIVE_CI_COMMAND` may only repeat it, so a tampered execution input cannot
/// run another command (with the account's role) than the one recorded when
/// the run was created.
fn unit_command(config: &TerraRunConfig, record: &ExecutionRecord, phase: Phase) -> Result<String> {
    let recorded = match phase {
        Phase::Plan => &record.plan_command,
        Phase::Apply => &record.apply_command,
    };
    match config.command.as_deref().filter(|c| !c.is_empty()) {
        Some(asked) if asked != recorded => Err(TaskError::Refused {
            phase: phase.as_str(),
            execution_id: record.execution_id.clone(),
            reason: format!(
                "LIVE_CI_COMMAND {asked:?} is not the recorded {} command {recorded:?}",
                phase.as_str()
            ),
        }),
        _ => Ok(recorded.clone()),
    }
}

/// The role of the unit's own account for this phase, from the metadb record:
/// the state machine's `LIVE_CI_ROLE_ARN` may only repeat it, so a tampered
/// execution input cannot borrow another account's role.
fn unit_role<'r>(
    config: &TerraRunConfig,
    record: &'r ExecutionRecord,
    phase: Phase,
) -> Result<&'r str> {
    let role = match phase {
        Phase::Plan => record.plan_role_arn.as_str(),
        Phase::Apply => record.apply_role_arn.as_str(),
    };
    match config.role_arn.as_deref().filter(|r| !r.is_empty()) {
        Some(asked) if asked != role => Err(TaskError::Unit {
            unit: record.cfg_path.to_string(),
            message: format!(
                "LIVE_CI_ROLE_ARN {asked:?} is not the {} role of account {:?} ({role:?}); refusing to assume it",
                phase.as_str(),
                record.account_name
            ),
        }),
        _ => Ok(role),
    }
}

/// One line per plan or apply command with its duration: `make bench-pipeline`
/// reads these from the task logs to separate terraform's time from the
/// pipeline's own (keep the message and field names stable).
fn log_command_time(record: &ExecutionRecord, phase: Phase, finished: &run::Finished) {
    tracing::info!(
        execution_id = %record.execution_id,
        cfg_path = %record.cfg_path,
        phase = phase.as_str(),
        command_ms = u64::try_from(finished.elapsed.as_millis()).unwrap_or(u64::MAX),
        exit_code = finished.code.unwrap_or(-1),
        "terraform command finished"
    );
}

async fn run_with_heartbeat<T: TaskTokens>(
    config: &TerraRunConfig,
    tokens: &T,
    token: &str,
    command: &str,
    dir: &Path,
    env: &[(String, String)],
) -> Result<run::Finished> {
    let finished = run::run(
        command,
        dir,
        env,
        "",
        Duration::from_secs(config.common.heartbeat_seconds),
        move || async move {
            match tokens.heartbeat(token).await {
                Ok(TokenDelivery::Delivered) => Tick::Continue,
                Ok(TokenDelivery::Gone { reason }) => {
                    tracing::warn!(%reason, "heartbeat refused: stopping the command");
                    Tick::Stop
                }
                Err(e) => {
                    // A lost heartbeat is not fatal; the next one may get through.
                    tracing::warn!(error = %e, "heartbeat failed");
                    Tick::Continue
                }
            }
        },
    )
    .await?;
    if finished.interrupted {
        return Err(TaskError::Interrupted {
            command: command.to_string(),
            code: finished.code,
        });
    }
    if finished.code.is_none() {
        return Err(TaskError::Tokens(format!(
            "{command:?} was stopped: the state machine no longer waits for this task"
        )));
    }
    Ok(finished)
}

/// [`record_new_resources`] after an apply that did not succeed: the apply's
/// own failure is what the token reports, so a failure to record is logged.
async fn record_partial<M: ExecutionStore>(
    metadb: &M,
    record: &ExecutionRecord,
    new_providers: &[String],
    apply_command: &str,
    unit_dir: &Path,
    env: &[(String, String)],
) {
    if let Err(e) =
        record_new_resources(metadb, record, new_providers, apply_command, unit_dir, env).await
    {
        tracing::warn!(execution_id = %record.execution_id, error = %e, "recording a failed apply's new resources");
        println!(
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
        println!(
            "live-ci: warning: execution {:?} is no longer running; its new resources were not stored",
            record.execution_id
        );
    }
    println!(
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
