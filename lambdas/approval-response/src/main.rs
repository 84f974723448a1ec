//! The approval_response Lambda's entry point: reads the vote-link key and
//! builds the metadb, Step Functions and KMS clients once per cold start, then
//! serves Function URL requests with [`ApprovalResponder`].

use anyhow::Context;
use aws_lambda_events::event::lambda_function_urls::{
    LambdaFunctionUrlRequest, LambdaFunctionUrlResponse,
};
use lambda_runtime::{LambdaEvent, service_fn};
use live_ci_approval_response::{ApprovalResponder, Config, from_function_url, to_function_url};
use live_ci_aws::{KmsTokenCipher, SsmParamStore};
use live_ci_core::approval::LinkKey;
use live_ci_core::params::ParamStore;
use live_ci_metadb::AnyMetadb;
use live_ci_workflow::SfnTaskTokens;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    live_ci_aws::runtime::init_tracing();
    let config = Config::from_env().context("approval_response configuration")?;
    let aws = aws_config::load_from_env().await;
    let params = SsmParamStore::new(live_ci_aws::sdk::ssm::Client::new(&aws));
    let secret = params
        .get(&config.vote_link_key_param)
        .await
        .context("reading the vote-link key")?;
    let key = LinkKey::new(secret.as_bytes())
        .with_context(|| format!("parameter {:?}", config.vote_link_key_param))?;
    let metadb = AnyMetadb::from_config(&config.metadb, &aws, 2)?;
    let tokens = SfnTaskTokens::new(aws_sdk_sfn::Client::new(&aws));
    let cipher = KmsTokenCipher::new(
        live_ci_aws::sdk::kms::Client::new(&aws),
        &config.task_token_key_id,
    );
    let responder = ApprovalResponder::new(key, metadb, tokens, cipher);
    let responder = &responder;
    lambda_runtime::run(service_fn(
        move |event: LambdaEvent<LambdaFunctionUrlRequest>| async move {
            let now_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
                .unwrap_or_default();
            let resp = responder
                .handle(&from_function_url(&event.payload), now_ms)
                .await;
            Ok::<LambdaFunctionUrlResponse, lambda_runtime::Error>(to_function_url(&resp))
        },
    ))
    .await
    .map_err(|e| anyhow::anyhow!("lambda runtime: {e}"))
}
