//! The trigger_sf Lambda's entry point: wires the metadb, Step Functions, SSM
//! and (optionally) GitHub and ECS clients into [`TriggerSf`] once per cold
//! start, and serves every invocation with it.

use anyhow::Context;
use live_ci_aws::{EcsTaskLauncher, SnsNotifications, sdk};
use live_ci_boot::{Boot, serve};
use live_ci_core::port::{
    ApprovalStore, BranchHead, DeployCommentStore, ExecutionStore, GitHost, Notifications,
    ParamStore, RunStore, SweepStore, TaskLauncher, WorkflowEngine,
};
use live_ci_core::status::NoGitHost;
use live_ci_github::Job;
use live_ci_stepfunctions::SfnEngine;
use live_ci_trigger_sf::{Config, TriggerError, TriggerSf, TrunkSweep, parse_input};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let boot = Boot::start().await;
    let config = Config::from_env().context("trigger_sf configuration")?;
    let engine = SfnEngine::new(
        aws_sdk_sfn::Client::new(&boot.aws),
        config.state_machine_arn,
    );
    let metadb = boot.metadb(&config.metadb, 2)?;
    let mut handler = config.handler;
    handler.run_pages = boot.run_pages(config.run_pages.as_ref()).await?;
    let params = boot.params();
    // Off (a no-op) without NOTIFICATION_TOPIC_ARN.
    let notifications = SnsNotifications::new(
        sdk::sns::Client::new(&boot.aws),
        config.notification_topic_arn.clone(),
    );
    let (Some(auth), Some(repo)) = (&config.github, &config.repository) else {
        // No GitHub token: no statuses, and no trunk head to sweep.
        return run(TriggerSf::new(handler, metadb, engine, params, NoGitHost)
            .with_notifications(notifications))
        .await;
    };
    let github = boot
        .github(auth, &config.github_api_url, repo, Job::TriggerSf)
        .await?;
    // A GitHub client to write with: runs get their deploy comment.
    handler.deploy_comments = true;
    let trunk = config.ecs.map(|ecs| TrunkSweep {
        head: github.clone(),
        launcher: EcsTaskLauncher::new(sdk::ecs::Client::new(&boot.aws), ecs),
        cooldown_secs: config.trunk_sweep_cooldown_secs,
        deploy_direct_pushes: config.deploy_direct_pushes,
    });
    let handler = TriggerSf::new(handler, metadb, engine, params, github);
    match trunk {
        Some(trunk) => {
            run(handler
                .with_trunk_sweep(trunk)
                .with_notifications(notifications))
            .await
        }
        None => run(handler.with_notifications(notifications)).await,
    }
}

/// The runtime loop for either handler (with or without the trunk sweep).
async fn run<M, W, P, G, H, L, N>(handler: TriggerSf<M, W, P, G, H, L, N>) -> anyhow::Result<()>
where
    M: RunStore + ExecutionStore + SweepStore + ApprovalStore + DeployCommentStore,
    W: WorkflowEngine,
    P: ParamStore,
    G: GitHost,
    H: BranchHead,
    L: TaskLauncher,
    N: Notifications,
{
    let handler = &handler;
    Ok(serve(|event: serde_json::Value| async move {
        // Boxed: the handler's future is deep enough to reach the compiler's
        // layout recursion limit when inlined into main's.
        let report = Box::pin(handler.handle(&parse_input(&event)?)).await?;
        tracing::info!(report = ?report, "done");
        Ok::<_, TriggerError>(report)
    })
    .await?)
}
