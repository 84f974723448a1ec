//! The plan task that stays up for its unit's approved apply: terra-run
//! creates a queue of its own while it plans, answers a plan that needs an
//! apply with the queue's URL (any other plan deletes the queue), and waits there for the state machine's Apply job
//! (`live_ci_workflow::ApplyJob`) while the voters decide. It then applies in
//! this same task, so the apply costs no new task start (a Fargate start is
//! tens of seconds; here it is LocalStack's `ecs:runTask` submission and a
//! process launch).
//!
//! Why this is safe:
//! - The task applies only its own execution's job, with the same checks as a
//!   new apply task: the metadb record, the apply role of the unit's account,
//!   the approved plan's digest and version.
//! - A job is taken off the queue before it is worked on: taken at most once.
//! - No process of the plan is left when the task offers to wait: it is the
//!   child subreaper of its commands and kills whatever they left
//!   (`crate::leftovers`), and then offers no queue, so a new task applies.
//!   Otherwise a detached process of the repository's plan code could read
//!   the apply command's environment (the apply role's credentials).
//! - Anyone allowed to send to the queue is untrusted: a job of another
//!   execution, or of this one before its voters approved it (the metadb's
//!   decision), is refused: its token is failed with `LiveCi.HandoffRefused`,
//!   which sends that apply to a new task, and the wait goes on. A body that
//!   is no job has no token to answer: it is logged and the wait goes on, so
//!   no message can end the wait early or start an apply.
//! - A task stopped with SIGTERM (ECS's StopTask) deletes its queue first.
//! - The wait ends when the execution ends without an apply (rejected, timed
//!   out, stopped: the metadb record leaves `running`) or after
//!   `APPLY_WAIT_SECONDS`. The queue is deleted then, so a later send fails and
//!   the state machine starts a new apply task instead; a job lost between the
//!   last receive and the deletion reaches the Apply state's heartbeat, which
//!   does the same.

use std::time::{Duration, Instant};

use live_ci_core::deploy::{ExecutionRecord, ExecutionStatus, Vote};
use live_ci_core::port::{
    ApplyQueue, ArtifactStore, ExecutionStore, GitHost, PortResultExt, RoleAssumer, RunStore,
    TaskTokens, sha256_hex,
};
use live_ci_workflow::payload::{ApplyJob, HANDOFF_REFUSED, PlanResult, decode};

use crate::checkout::Repo;
use crate::config::{ApplyWait, PhaseInput, TerraRunConfig};
use crate::error::{Result, TaskError};
use crate::leftovers::Subreaper;
use crate::terra_run::{TerraRunPorts, TerraRunResult, terra_run, terra_run_with};
use crate::timeline;

/// Where this task waits for its apply, and for how long.
#[derive(Debug)]
pub struct Handoff<'a, Q> {
    pub queue: &'a Q,
    pub wait: &'a ApplyWait,
    /// This process as the parent of whatever the plan left behind: the
    /// queue is offered only when nothing is.
    pub leftovers: &'a Subreaper,
}

/// terra-run for the state machine: the phase the environment names; after a
/// plan, with `handoff`, the approved apply of the same unit as well.
pub async fn terra_run_handing_off<
    M: RunStore + ExecutionStore,
    A: ArtifactStore,
    T: TaskTokens,
    G: GitHost,
    R: RoleAssumer,
    Q: ApplyQueue,
>(
    config: &TerraRunConfig,
    repo: &Repo,
    logs_url: Option<&str>,
    ports: &TerraRunPorts<'_, M, A, T, G, R>,
    prefetched: Option<ExecutionRecord>,
    handoff: Option<Handoff<'_, Q>>,
) -> Result<()> {
    let Some(handoff) = handoff.filter(|_| config.phase == PhaseInput::Plan) else {
        return terra_run_with(config, repo, logs_url, ports, prefetched, |_| {
            std::future::ready(None)
        })
        .await
        .map(drop);
    };
    let created = tokio::sync::OnceCell::new();
    // ECS stops a task with SIGTERM (StopTask, a scale-in; SIGKILL follows):
    // a queue left by a killed task would stay until SQS drops it as inactive,
    // after about 30 days. Listened to before any command runs.
    let terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .inspect_err(|e| {
            tracing::warn!(error = %e, "cannot listen for SIGTERM: a stopped task leaves its apply queue");
        });
    let handing_off = hand_off(
        config, repo, logs_url, ports, prefetched, &handoff, &created,
    );
    let Ok(mut terminate) = terminate else {
        return handing_off.await;
    };
    let mut handing_off = std::pin::pin!(handing_off);
    tokio::select! {
        done = &mut handing_off => done,
        _ = terminate.recv() => {
            let queue = match created.get() {
                Some(queue) => queue.clone(),
                // Its creation may be under way: CreateQueue of the same name
                // and attributes answers the same queue.
                None => open_queue(handoff.queue, handoff.wait, config).await,
            };
            if let Some(url) = queue {
                match handoff.queue.delete(&url).await {
                    Ok(()) => tracing::info!(queue = %url, "stopped (SIGTERM): the apply queue is deleted"),
                    // Already deleted when the wait had ended.
                    Err(e) => tracing::info!(error = %e, queue = %url, "stopped (SIGTERM): deleting the apply queue"),
                }
            }
            if crate::run::commands_running() {
                // The running plan or apply got SIGINT from `run::run`: let it
                // stop cleanly (ECS's SIGKILL bounds this). It ends the hand-off
                // with its own error, answered on its token.
                return match handing_off.await {
                    Err(e @ TaskError::Interrupted { .. }) => Err(e),
                    _ => Err(TaskError::Terminated),
                };
            }
            // Nothing runs: the wait for a job is dropped, so no job taken
            // after the stop starts an apply.
            Err(TaskError::Terminated)
        }
    }
}

/// The plan, the wait and the apply of [`terra_run_handing_off`]; `created`
/// holds the queue once it was asked for.
async fn hand_off<
    M: RunStore + ExecutionStore,
    A: ArtifactStore,
    T: TaskTokens,
    G: GitHost,
    R: RoleAssumer,
    Q: ApplyQueue,
>(
    config: &TerraRunConfig,
    repo: &Repo,
    logs_url: Option<&str>,
    ports: &TerraRunPorts<'_, M, A, T, G, R>,
    prefetched: Option<ExecutionRecord>,
    handoff: &Handoff<'_, Q>,
    created: &tokio::sync::OnceCell<Option<String>>,
) -> Result<()> {
    // The queue is created while the plan runs, so the plan's answer does not
    // wait for it; a plan that fails or needs no apply deletes it again.
    let create = || open_queue(handoff.queue, handoff.wait, config);
    // Offered only once no process of the plan is left (called when none of
    // this task's commands runs any more); otherwise the unused queue is
    // deleted below and a new task applies.
    let offer = |_: &PlanResult| async {
        if let Err(refusal) = handoff.leftovers.clear().await {
            tracing::warn!(execution_id = %config.execution_id,
                "not waiting for the apply: {refusal}; a new task will apply");
            return None;
        }
        created.get_or_init(create).await.clone()
    };
    let (_, planned) = tokio::join!(
        created.get_or_init(create),
        terra_run_with(config, repo, logs_url, ports, prefetched, offer)
    );
    let offered = match &planned {
        Ok(TerraRunResult::Plan(plan)) => plan.apply_queue_url.clone(),
        _ => None,
    };
    let Some(url) = offered else {
        if let Some(Some(unused)) = created.get()
            && let Err(e) = handoff.queue.delete(unused).await
        {
            tracing::warn!(error = %e, queue = %unused, "deleting the unused apply queue");
        }
        return planned.map(drop);
    };
    let started = Instant::now();
    let job = wait_for_apply(handoff, ports, config, &url).await;
    // Whatever the wait's end, nothing more is sent to this task.
    if let Err(e) = handoff.queue.delete(&url).await {
        tracing::warn!(error = %e, queue = %url, "deleting the apply queue");
    }
    let Some(job) = job? else {
        tracing::info!(
            execution_id = %config.execution_id,
            waited_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            "no apply for this task: done"
        );
        return Ok(());
    };
    timeline::restart();
    tracing::info!(
        execution_id = %config.execution_id,
        waited_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "the approved apply reached the plan task"
    );
    let apply = apply_config(config, job);
    terra_run(&apply, repo, logs_url, ports).await.map(drop)
}

/// The queue's name: the prefix the module's IAM allows, and a digest of the
/// plan's task token, unique per plan attempt (SQS refuses a name deleted less
/// than a minute ago, so a retried plan must not reuse its predecessor's).
pub fn queue_name(prefix: &str, plan_task_token: &str) -> String {
    let digest = sha256_hex(plan_task_token.as_bytes());
    format!("{prefix}{}", &digest[..24])
}

/// Creates this task's queue; `None` (a new task will apply) when it cannot.
async fn open_queue<Q: ApplyQueue>(
    queue: &Q,
    wait: &ApplyWait,
    config: &TerraRunConfig,
) -> Option<String> {
    let name = queue_name(&wait.queue_prefix, &config.task_token);
    // Kept past the wait, so a job sent at its very end is not dropped by SQS
    // before the deletion makes the send fail.
    match queue
        .create(&name, wait.seconds + wait.poll_seconds * 3)
        .await
    {
        Ok(url) => {
            timeline::mark("apply_queue");
            Some(url)
        }
        Err(e) => {
            tracing::warn!(error = %e, execution_id = %config.execution_id, queue = %name,
                "cannot create the apply queue: a new task will apply");
            None
        }
    }
}

/// Waits for this execution's approved apply job: `None` when the execution
/// ended without one or the wait ran out. Any other message is refused (see
/// the module's notes) and the wait goes on.
async fn wait_for_apply<M: ExecutionStore, A, T: TaskTokens, G, R, Q: ApplyQueue>(
    handoff: &Handoff<'_, Q>,
    ports: &TerraRunPorts<'_, M, A, T, G, R>,
    config: &TerraRunConfig,
    url: &str,
) -> Result<Option<ApplyJob>> {
    let deadline = Instant::now() + Duration::from_secs(handoff.wait.seconds);
    loop {
        let left = deadline.saturating_duration_since(Instant::now()).as_secs();
        if left == 0 {
            return Ok(None);
        }
        let wait = u32::try_from(left.min(handoff.wait.poll_seconds.max(1))).unwrap_or(1);
        let body = handoff.queue.take(url, wait).await.port("apply queue")?;
        let record = ports
            .metadb
            .execution(&config.execution_id)
            .await
            .port("metadb")?;
        let Some(record) = record.filter(|r| r.status == ExecutionStatus::Running) else {
            return Ok(None);
        };
        let Some(body) = body else {
            continue;
        };
        let job: ApplyJob = match decode("apply job", &body) {
            Ok(job) => job,
            Err(e) => {
                tracing::warn!(queue = %url, error = %e,
                    "a message that is no apply job reached the apply queue: ignored, still waiting");
                continue;
            }
        };
        let refusal = if job.execution_id != config.execution_id {
            format!(
                "a job for execution {:?} reached the apply queue of {:?}",
                job.execution_id, config.execution_id
            )
        } else if record.decision != Some(Vote::Approve) {
            format!(
                "the voters have not approved execution {:?} (decision {:?})",
                config.execution_id,
                record.decision.map(Vote::as_str)
            )
        } else {
            return Ok(Some(job));
        };
        let cause = format!("{refusal}: the plan task refuses it; a new task applies instead");
        tracing::warn!(queue = %url, "{cause}");
        // Its Apply In Plan Task goes to a new task now, not at its heartbeat.
        match ports
            .tokens
            .send_failure(&job.task_token, HANDOFF_REFUSED, &cause)
            .await
        {
            Ok(delivery) => tracing::info!(?delivery, "answered the refused job"),
            Err(e) => tracing::warn!(error = %e, "answering the refused job"),
        }
    }
}

/// The apply phase as a new task would read it from the Apply state's
/// overrides: the command and role left to the record (they may only repeat it).
fn apply_config(plan: &TerraRunConfig, job: ApplyJob) -> TerraRunConfig {
    TerraRunConfig {
        common: plan.common.clone(),
        task_token: job.task_token,
        phase: PhaseInput::Apply {
            plan_artifact: job.plan_artifact,
        },
        execution_id: plan.execution_id.clone(),
        command: None,
        role_arn: None,
        sfn_execution_arn: Some(job.sfn_execution_arn),
        cfg_path: plan.cfg_path.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_names_fit_sqs_and_differ_per_plan_attempt() {
        let prefix = "live-ci-a-very-long-deployment-name-apply-";
        let first = queue_name(prefix, "token-of-attempt-1");
        let second = queue_name(prefix, "token-of-attempt-2");
        assert_ne!(first, second);
        assert!(first.starts_with(prefix));
        assert!(first.len() <= 80, "{first}");
        assert!(
            first
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "{first}"
        );
    }
}
