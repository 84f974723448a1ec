//! The trigger_sf Lambda's entry point: wires the metadb, Step Functions, SSM
//! and (optionally) GitHub and ECS clients into [`Production`] ports for
//! [`TriggerSf`] once per cold start, and serves every invocation with it.

use anyhow::Context;
use live_ci_aws::{EcsTaskLauncher, SnsNotifications, sdk};
use live_ci_boot::{Boot, serve};
use live_ci_core::port::GitHost;
use live_ci_core::status::NoGitHost;
use live_ci_github::Job;
use live_ci_stepfunctions::SfnEngine;
use live_ci_trigger_sf::{Config, Production, TriggerError, TriggerSf, TrunkSweep, parse_input};

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
        let ports = Production {
            metadb,
            engine,
            params,
            github: NoGitHost,
            trunk: None,
            notifications,
        };
        return run(TriggerSf::new(handler, ports)).await;
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
    let ports = Production {
        metadb,
        engine,
        params,
        github,
        trunk,
        notifications,
    };
    run(TriggerSf::new(handler, ports)).await
}

/// The runtime loop for either handler (with or without a GitHub client).
async fn run<G: GitHost>(handler: TriggerSf<Production<G>>) -> anyhow::Result<()> {
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
