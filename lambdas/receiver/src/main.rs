//! The receiver Lambda's entry point: builds the AWS and GitHub clients once per
//! cold start and serves Function URL requests with [`Receiver`].

use anyhow::Context;
use aws_lambda_events::event::lambda_function_urls::{
    LambdaFunctionUrlRequest, LambdaFunctionUrlResponse,
};
use lambda_runtime::{LambdaEvent, service_fn};
use live_ci_aws::{EcsTaskLauncher, SsmParamStore};
use live_ci_core::params::ParamStore;
use live_ci_github::{GitHubClient, GitHubConfig, RetryPolicy};
use live_ci_metadb::AnyMetadb;
use live_ci_receiver::{Config, MetadbLock, Receiver, from_function_url, to_function_url};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    live_ci_aws::runtime::init_tracing();
    let config = Config::from_env().context("receiver configuration")?;
    let aws = aws_config::load_from_env().await;
    let params = SsmParamStore::new(aws_sdk_ssm_client(&aws));
    let token = params
        .get(&config.github_token_param)
        .await
        .context("reading the github token")?;
    let github = GitHubClient::new(GitHubConfig {
        api_base: config.github_api_url.clone(),
        repository: config.handler.repository.clone(),
        token,
        retry: RetryPolicy::default(),
    })?;
    let launcher = EcsTaskLauncher::new(aws_sdk_ecs_client(&aws), config.ecs.clone());
    let metadb = AnyMetadb::from_config(&config.metadb, &aws, 1)?;
    let receiver = Receiver::new(config.handler, params, github, launcher)
        .await?
        .with_lock_check(MetadbLock(metadb));
    let receiver = &receiver;
    lambda_runtime::run(service_fn(
        move |event: LambdaEvent<LambdaFunctionUrlRequest>| async move {
            let resp = receiver.handle(&from_function_url(&event.payload)).await;
            Ok::<LambdaFunctionUrlResponse, lambda_runtime::Error>(to_function_url(&resp))
        },
    ))
    .await
    .map_err(|e| anyhow::anyhow!("lambda runtime: {e}"))
}

fn aws_sdk_ssm_client(cfg: &aws_config::SdkConfig) -> live_ci_aws::sdk::ssm::Client {
    live_ci_aws::sdk::ssm::Client::new(cfg)
}

fn aws_sdk_ecs_client(cfg: &aws_config::SdkConfig) -> live_ci_aws::sdk::ecs::Client {
    live_ci_aws::sdk::ecs::Client::new(cfg)
}
