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
use live_ci_core::deploy::{ExecutionRecord, RunId};
use live_ci_core::path::RepoPath;
use live_ci_core::plan_text;
use live_ci_core::port::GitHost;
use live_ci_core::port::PortResultExt;
use live_ci_core::port::{
    ArtifactStore, ExecutionStore, ParamStore, RoleAssumer, RunStore, TaskTokens, TokenDelivery,
};
use live_ci_core::status::{Check, CommitStatus, StatusState, Statuses, context};
use live_ci_core::terraform::{Phase, plan_key};
use live_ci_stepfunctions::payload::{ApplyResult, PlanResult};
use serde::Serialize;

use crate::checkout::Repo;
use crate::config::TerraRunConfig;
use crate::error::{Result, TaskError};
use crate::output::say;
use crate::run::{self, Tick};
use crate::timeline;

mod apply;
mod lock_file;
mod plan;
mod prepare;

/// The ports terra-run talks to.
#[derive(Debug)]
pub struct TerraRunPorts<'a, M, A, T, G, R> {
    /// The execution's record, its ending and the plan's JSON.
    pub metadb: &'a M,
    /// The saved plans and the run's packed checkout.
    pub artifacts: &'a A,
    /// Heartbeats and answers the state machine's task token.
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
    /// The plan phase's answer.
    Plan(PlanResult),
    /// The apply phase's answer.
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
    let status = final_status(config, ports, logs_url, unit.as_ref(), unit_plan, &outcome);
    let answer = answer(ports.tokens, &token, &outcome);
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

/// The unit's final plan or apply status, once the unit is known (a check
/// run, with an App, shows the plan; a status cannot).
async fn final_status<M, A, T, G: GitHost, R>(
    config: &TerraRunConfig,
    ports: &TerraRunPorts<'_, M, A, T, G, R>,
    logs_url: Option<&str>,
    unit: Option<&(String, RepoPath, RunId)>,
    unit_plan: Option<String>,
    outcome: &Result<TerraRunResult>,
) {
    let Some((commit, cfg_path, run_id)) = unit else {
        return;
    };
    let (state, description) = match outcome {
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
    let text = match outcome {
        Ok(TerraRunResult::Plan(_)) => unit_plan
            .as_deref()
            .map(|plan| plan_text::fit_plan(plan, logs_url, plan_text::CHECK_RUN_LIMIT)),
        _ => None,
    };
    post_status(
        ports,
        status_link(config, *run_id, logs_url).as_deref(),
        config.phase.phase(),
        commit,
        cfg_path,
        state,
        &description,
        text,
    )
    .await;
    timeline::mark("final_status");
}

/// Answers the task token with the result or the error.
async fn answer<T: TaskTokens>(
    tokens: &T,
    token: &str,
    outcome: &Result<TerraRunResult>,
) -> Result<TokenDelivery> {
    let sent = match outcome {
        Ok(result) => {
            let json = serde_json::to_string(result)
                .map_err(|e| TaskError::Tokens(format!("encoding the result: {e}")))?;
            tokens.send_success(token, &json).await
        }
        Err(e) => tokens.send_failure(token, e.name(), &e.to_string()).await,
    };
    timeline::mark("answered");
    Ok(sent.port("task tokens")?)
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
    let record = prepare::execution(config, ports, prefetched).await?;
    timeline::mark("execution");
    *unit = Some((
        record.commit_id.clone(),
        record.cfg_path.clone(),
        record.run_id,
    ));
    let command = prepare::unit_command(config, &record, phase)?;
    if phase == Phase::Apply {
        prepare::authorise_apply(ports, &record).await?;
        timeline::mark("authorised");
    }
    say!(
        "live-ci terra-run {}: execution {:?}, unit {:?}, commit {}",
        phase.as_str(),
        record.execution_id,
        record.cfg_path.as_str(),
        record.commit_id
    );
    let key = plan_key(&record.execution_id, &record.commit_id);
    let started = prepare::start(config, repo, logs_url, ports, &record, &key).await?;
    let workspace =
        prepare::Workspace::new(config, &record, started.prepared, &command, phase).await?;
    let logs_url = logs_url.unwrap_or_default().to_string();
    match started.approved {
        None => plan::plan(
            config,
            ports,
            token,
            &record,
            &workspace,
            started.policies,
            &key,
            logs_url,
            unit_plan,
        )
        .await
        .map(TerraRunResult::Plan),
        Some((bytes, for_apply)) => apply::apply(
            config, ports, token, &record, &workspace, bytes, for_apply, logs_url,
        )
        .await
        .map(TerraRunResult::Apply),
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
