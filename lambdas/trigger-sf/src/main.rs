//! The trigger_sf Lambda's entry point: builds the metadb, Step Functions, SSM
//! and (optionally) GitHub and ECS clients once per cold start and serves every
//! invocation with [`TriggerSf`].

use anyhow::Context;
use lambda_runtime::{LambdaEvent, service_fn};
use live_ci_aws::{EcsTaskLauncher, SsmParamStore};
use live_ci_core::params::ParamStore;
use live_ci_core::port::{Metadb, WorkflowEngine};
use live_ci_core::status::{BranchHead, GitHost};
use live_ci_core::task::TaskLauncher;
use live_ci_github::{GitHubClient, GitHubConfig, RetryPolicy};
use live_ci_metadb::AnyMetadb;
use live_ci_trigger_sf::{Config, Report, TriggerSf, TrunkSweep, parse_input};
use live_ci_workflow::SfnEngine;
use serde_json::Value;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    live_ci_aws::runtime::init_tracing();
    let config = Config::from_env().context("trigger_sf configuration")?;
    let aws = aws_config::load_from_env().await;
    let params = SsmParamStore::new(live_ci_aws::sdk::ssm::Client::new(&aws));
    let github = match (&config.github_token_param, &config.repository) {
        (Some(param), Some(repository)) => {
            let token = params
                .get(param)
                .await
                .context("reading the github token")?;
            Some(GitHubClient::new(GitHubConfig {
                api_base: config.github_api_url.clone(),
                repository: repository.clone(),
                token,
                retry: RetryPolicy::default(),
            })?)
        }
        _ => None,
    };
    let engine = SfnEngine::new(
        aws_sdk_sfn::Client::new(&aws),
        config.state_machine_arn.clone(),
    );
    let metadb = AnyMetadb::from_config(&config.metadb, &aws, 2)?;
    let trunk = match (&config.ecs, &github) {
        (Some(ecs), Some(github)) => Some(TrunkSweep {
            head: github.clone(),
            launcher: EcsTaskLauncher::new(live_ci_aws::sdk::ecs::Client::new(&aws), ecs.clone()),
            cooldown_secs: config.trunk_sweep_cooldown_secs,
        }),
        _ => None,
    };
    let handler = TriggerSf::new(config.handler, metadb, engine, params, github);
    match trunk {
        Some(trunk) => serve(handler.with_trunk_sweep(trunk)).await,
        None => serve(handler).await,
    }
}

async fn serve<M, W, P, G, H, L>(handler: TriggerSf<M, W, P, G, H, L>) -> anyhow::Result<()>
where
    M: Metadb,
    W: WorkflowEngine,
    P: ParamStore,
    G: GitHost,
    H: BranchHead,
    L: TaskLauncher,
{
    let handler = &handler;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        let input = parse_input(&event.payload)?;
        let report: Report = handler.handle(&input).await?;
        tracing::info!(report = ?report, "done");
        Ok::<Report, lambda_runtime::Error>(report)
    }))
    .await
    .map_err(|e| anyhow::anyhow!("lambda runtime: {e}"))
}
