//! The plan phase: runs the plan command, saves the plan (its hash taken
//! here, from the bytes uploaded), judges it by the policies of the run's
//! base, and records it with its sealed `show -json` for the vote.

use std::sync::Arc;

use live_ci_core::deploy::ExecutionRecord;
use live_ci_core::plan_view;
use live_ci_core::policy::Judged;
use live_ci_core::port::{
    ArtifactStore, ExecutionStore, GitHost, PortResultExt, SavedPlan, TaskTokens, sha256_hex,
};
use live_ci_core::status::Check;
use live_ci_core::terraform::plan_json::PlanSummary;
use live_ci_stepfunctions::payload::PlanResult;

use super::prepare::Workspace;
use super::{TerraRunPorts, lock_file, log_command_time, run_with_heartbeat};
use crate::config::TerraRunConfig;
use crate::error::{Result, TaskError};
use crate::output::say;
use crate::plans::{self, describe_plan_json};
use crate::policy::{CommandPlace, Policies};
use crate::{run, sandbox, timeline};

/// The plan phase, from the command to the recorded plan.
#[allow(clippy::too_many_arguments)]
pub(super) async fn plan<M: ExecutionStore, A: ArtifactStore, T: TaskTokens, G: GitHost, R>(
    config: &TerraRunConfig,
    ports: &TerraRunPorts<'_, M, A, T, G, R>,
    token: &str,
    record: &ExecutionRecord,
    ws: &Workspace,
    policies: Option<Arc<Policies>>,
    key: &str,
    logs_url: String,
    unit_plan: &mut Option<String>,
) -> Result<PlanResult> {
    let bytes = run_plan(config, ports.tokens, token, record, ws).await?;
    let (summary, stored) = inspect(config, ports, record, ws, key, bytes, unit_plan).await;
    let (summary, json) = summary?;
    // Judged before the plan is recorded: a denied plan never reaches the
    // vote (the state machine's Plan Failed ends the execution, the approval
    // request sends nothing), unless POLICY_OVERRIDE is on: then its denials
    // are recorded before the plan, so no vote can see the plan without them.
    let policy_denials = match &policies {
        Some(policies) => judge(policies, record, ws, &json).await?,
        None => Vec::new(),
    };
    let stored = stored?;
    if !policy_denials.is_empty() {
        record_denials(ports, record, key, &stored, &policy_denials).await?;
    }
    // The lock file the plan ran with travels in the sealed JSON, so the
    // apply's `init` selects the plan's providers.
    let lock = lock_file::planned_lock(&ws.unit_dir)?;
    // The JSON the approval page shows, sealed to this plan's hash and
    // recorded with it in one statement.
    record_plan(ports, record, key, stored, json.as_bytes(), lock.as_deref()).await?;
    let result = plan_result(
        config,
        ports,
        record,
        key,
        &summary,
        &json,
        logs_url,
        policy_denials,
    );
    say!(
        "live-ci: plan saved to {} ({}){}",
        result.plan_artifact,
        result.summary(),
        if result.skip_apply {
            ": nothing to approve or apply"
        } else {
            ""
        }
    );
    Ok(result)
}

/// Runs the plan command and reads the plan it saved. Written by repository
/// code: read as untrusted input (no link followed, a size cap).
async fn run_plan<T: TaskTokens>(
    config: &TerraRunConfig,
    tokens: &T,
    token: &str,
    record: &ExecutionRecord,
    ws: &Workspace,
) -> Result<Vec<u8>> {
    let finished =
        run_with_heartbeat(config, tokens, token, &ws.command, &ws.unit_dir, &ws.env).await?;
    timeline::mark("terraform");
    log_command_time(record, live_ci_core::terraform::Phase::Plan, &finished);
    if finished.code != Some(0) {
        return Err(run::failed(&ws.command, &ws.unit_dir, &finished));
    }
    sandbox::read_child_file(&ws.plan_file, sandbox::MAX_CHILD_FILE_BYTES).map_err(|e| {
        TaskError::PlanArtifact {
            artifact: ws.plan_file_str(),
            message: if e.kind() == std::io::ErrorKind::NotFound {
                "the plan command saved no plan; the template must write {plan_file}".to_string()
            } else {
                format!("the saved plan is refused: {e}")
            },
        }
    })
}

/// The plan's summary and `show -json` (a `show` process), its storage (S3,
/// then the metadb) and, when the host shows a status's text (a check run),
/// the plan as terraform shows it to people (`show -no-color`, as the child
/// user, into `unit_plan`): independent, they go at once.
#[allow(clippy::too_many_arguments)]
async fn inspect<M, A: ArtifactStore, T, G: GitHost, R>(
    config: &TerraRunConfig,
    ports: &TerraRunPorts<'_, M, A, T, G, R>,
    record: &ExecutionRecord,
    ws: &Workspace,
    key: &str,
    bytes: Vec<u8>,
    unit_plan: &mut Option<String>,
) -> (Result<(PlanSummary, String)>, Result<SavedPlan>) {
    let plan_file = ws.plan_file_str();
    let show = config.common.show_command.for_unit(&record.cfg_path);
    let describe = async {
        let summary = describe_plan_json(&show, &plan_file, &ws.unit_dir, &ws.env, "").await;
        timeline::mark("show");
        summary
    };
    let shows_text =
        ports.statuses.allows(Check::Plan) && ports.statuses.host().shows_status_text();
    let render = async {
        if shows_text {
            plans::plan_text(&show, &plan_file, &ws.unit_dir, &ws.env, "").await
        } else {
            None
        }
    };
    let (summary, stored, text) = tokio::join!(describe, store_plan(ports, key, bytes), render);
    *unit_plan = text;
    (summary, stored)
}

/// The policies' verdict on the plan: a denial fails the plan, unless it may
/// be overridden, when its denials are returned to be recorded.
async fn judge(
    policies: &Arc<Policies>,
    record: &ExecutionRecord,
    ws: &Workspace,
    json: &str,
) -> Result<Vec<String>> {
    let json_file = ws.out_dir.join("unit.plan.json");
    let place = CommandPlace {
        dir: &ws.unit_dir,
        env: &ws.env,
        json_file: &json_file,
        prefix: "",
    };
    match policies.judge(json.to_string(), place).await {
        Judged::Passed => Ok(Vec::new()),
        Judged::Failed(denied) => Err(TaskError::Policy {
            subject: record.cfg_path.to_string(),
            message: denied,
        }),
        Judged::Overridable(denials) => {
            say!(
                "live-ci: {}: {}",
                live_ci_core::policy::OVERRIDABLE,
                denials.join("; ")
            );
            Ok(denials)
        }
    }
}

/// Records the denials an override may pass, against the stored plan's hash.
async fn record_denials<M: ExecutionStore, A: ArtifactStore, T, G, R>(
    ports: &TerraRunPorts<'_, M, A, T, G, R>,
    record: &ExecutionRecord,
    key: &str,
    stored: &SavedPlan,
    denials: &[String],
) -> Result<()> {
    let recorded = ports
        .metadb
        .record_policy_denials(&record.execution_id, &stored.sha256, denials)
        .await
        .port("metadb")?;
    if recorded {
        return Ok(());
    }
    Err(TaskError::PlanArtifact {
        artifact: ports.artifacts.uri(key),
        message: format!(
            "execution {:?} has ended: the policy denials were not recorded",
            record.execution_id
        ),
    })
}

/// What the plan task answers the state machine.
#[allow(clippy::too_many_arguments)]
fn plan_result<M, A: ArtifactStore, T, G, R>(
    config: &TerraRunConfig,
    ports: &TerraRunPorts<'_, M, A, T, G, R>,
    record: &ExecutionRecord,
    key: &str,
    summary: &PlanSummary,
    json: &str,
    logs_url: String,
    policy_denials: Vec<String>,
) -> PlanResult {
    let (first_changes, more_changes) = plan_view::PlanView::from_show_json(json.as_bytes())
        .map(|v| v.first_lines(live_ci_stepfunctions::payload::FIRST_CHANGES))
        .unwrap_or_default();
    PlanResult {
        execution_id: record.execution_id.clone(),
        to_add: summary.add,
        to_change: summary.change,
        to_destroy: summary.destroy,
        to_replace: summary.replace,
        to_import: summary.import,
        to_forget: summary.forget,
        outputs_changed: summary.outputs_changed.clone(),
        skip_apply: config.common.skip_unchanged && !summary.has_changes(),
        plan_artifact: ports.artifacts.uri(key),
        logs_url,
        first_changes,
        more_changes: u32::try_from(more_changes).unwrap_or(u32::MAX),
        policy_denials,
    }
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
