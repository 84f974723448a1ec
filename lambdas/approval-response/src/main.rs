//! The approval_response Lambda's entry point: wires the metadb, Step Functions,
//! KMS and S3 (the saved plans) clients, the vote-link key and the run-link key into [`ApprovalResponder`] once per
//! cold start, and serves Function URL requests with it.

use anyhow::Context;
use aws_lambda_events::event::lambda_function_urls::LambdaFunctionUrlRequest;
use live_ci_approval_response::{ApprovalResponder, Config, from_function_url, to_function_url};
use live_ci_aws::{KmsTokenCipher, S3ArtifactStore, sdk};
use live_ci_lambda_boot::{Boot, serve};
use live_ci_workflow::SfnTaskTokens;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let boot = Boot::start().await;
    let config = Config::from_env().context("approval_response configuration")?;
    let key = boot.link_key(&config.vote_link_key_param).await?;
    let run_key = boot.run_link_key(&config.run_link_key_param).await?;
    let metadb = boot.metadb(&config.metadb, 2)?;
    let tokens = SfnTaskTokens::new(aws_sdk_sfn::Client::new(&boot.aws));
    let cipher = KmsTokenCipher::new(sdk::kms::Client::new(&boot.aws), &config.task_token_key_id);
    let plans = S3ArtifactStore::new(sdk::s3::Client::new(&boot.aws), &config.plan_bucket);
    let responder = &ApprovalResponder::new(key, metadb, tokens, cipher)
        .with_plan_store(plans)
        .with_run_key(run_key);
    Ok(serve(|event: LambdaFunctionUrlRequest| async move {
        let response = responder.handle(&from_function_url(&event), now_ms()).await;
        Ok::<_, std::convert::Infallible>(to_function_url(&response))
    })
    .await?)
}

fn now_ms() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}
