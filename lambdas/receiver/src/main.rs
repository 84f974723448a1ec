//! The receiver Lambda's entry point: wires the parameter store, GitHub, ECS
//! and metadb clients into [`Receiver`] once per cold start, and serves
//! Function URL requests with it.

use anyhow::Context;
use aws_lambda_events::event::lambda_function_urls::LambdaFunctionUrlRequest;
use live_ci_aws::{EcsTaskLauncher, LambdaInvoker, sdk};
use live_ci_boot::{Boot, serve};
use live_ci_github::Job;
use live_ci_receiver::{
    Config, METADB_RESUME_DEADLINE, MetadbDeliveries, MetadbLock, Production, Receiver,
    from_function_url, to_function_url,
};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let boot = Boot::start().await;
    let config = Config::from_env().context("receiver configuration")?;
    let repository = &config.handler.repository;
    let github = boot
        .github(
            &config.github,
            &config.github_api_url,
            repository,
            Job::Receiver,
        )
        .await?;
    let launcher = EcsTaskLauncher::new(sdk::ecs::Client::new(&boot.aws), config.ecs.clone());
    // One connection, shared (clones share the pool): a delivery uses it in turn.
    let metadb = boot
        .metadb(&config.metadb, 1)?
        .with_resume_deadline(METADB_RESUME_DEADLINE);
    // Votes from the pull request go to approval_response; without its name
    // a vote comment is answered "not enabled".
    let votes = config.approval_response_function.as_ref().map(|function| {
        let invoker = LambdaInvoker::new(sdk::lambda::Client::new(&boot.aws));
        (invoker, function.clone())
    });
    let ports = Production {
        params: boot.params(),
        github,
        launcher,
        lock: MetadbLock(metadb.clone()),
        deliveries: MetadbDeliveries(metadb),
        votes,
    };
    let receiver = &Receiver::new(config.handler.clone(), ports).await?;
    Ok(serve(|event: LambdaFunctionUrlRequest| async move {
        let response = receiver.handle(&from_function_url(&event)).await;
        Ok::<_, std::convert::Infallible>(to_function_url(&response))
    })
    .await?)
}
