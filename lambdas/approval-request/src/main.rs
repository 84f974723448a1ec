//! The approval_request Lambda's entry point: reads the vote-link key and
//! builds the metadb, SES v2 and KMS clients once per cold start, then handles
//! every SNS delivery with [`ApprovalRequester`].

use anyhow::Context;
use aws_lambda_events::event::sns::SnsEvent;
use lambda_runtime::{LambdaEvent, service_fn};
use live_ci_approval_request::{ApprovalRequester, Config, parse_sns_event};
use live_ci_aws::{KmsTokenCipher, SesMailer, SsmParamStore};
use live_ci_core::approval::LinkKey;
use live_ci_core::params::ParamStore;
use live_ci_metadb::AnyMetadb;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    live_ci_aws::runtime::init_tracing();
    let config = Config::from_env().context("approval_request configuration")?;
    let aws = aws_config::load_from_env().await;
    let params = SsmParamStore::new(live_ci_aws::sdk::ssm::Client::new(&aws));
    let secret = params
        .get(&config.vote_link_key_param)
        .await
        .context("reading the vote-link key")?;
    let key = LinkKey::new(secret.as_bytes())
        .with_context(|| format!("parameter {:?}", config.vote_link_key_param))?;
    let metadb = AnyMetadb::from_config(&config.metadb, &aws, 2)?;
    let mailer = SesMailer::new(live_ci_aws::sdk::sesv2::Client::new(&aws));
    let cipher = KmsTokenCipher::new(
        live_ci_aws::sdk::kms::Client::new(&aws),
        &config.task_token_key_id,
    );
    let handler = ApprovalRequester::new(config.settings, key, metadb, mailer, cipher);
    let handler = &handler;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SnsEvent>| async move {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        let mut reports = Vec::new();
        for request in parse_sns_event(&event.payload)? {
            let report = handler.handle(&request, now).await?;
            tracing::info!(report = ?report, "mailed");
            reports.push(report);
        }
        Ok::<_, lambda_runtime::Error>(serde_json::to_value(reports)?)
    }))
    .await
    .map_err(|e| anyhow::anyhow!("lambda runtime: {e}"))
}
