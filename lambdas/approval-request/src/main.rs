//! The approval_request Lambda's entry point: wires the metadb, SES v2, KMS and
//! Step Functions clients and the vote-link key into [`ApprovalRequester`] once
//! per cold start.

use anyhow::Context;
use aws_lambda_events::event::sns::SnsEvent;
use live_ci_approval_request::{
    ApprovalRequester, Config, Production, RequestError, parse_sns_event,
};
use live_ci_aws::{KmsTokenCipher, SesMailer, SnsNotifications, sdk};
use live_ci_boot::{Boot, serve};
use live_ci_stepfunctions::SfnTaskTokens;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let boot = Boot::start().await;
    let config = Config::from_env().context("approval_request configuration")?;
    let key = boot.link_key(&config.vote_link_key_param).await?;
    let metadb = boot.metadb(&config.metadb, 2)?;
    let mut mailer = SesMailer::new(sdk::sesv2::Client::new(&boot.aws));
    if let Some(set) = &config.ses_configuration_set {
        mailer = mailer.with_configuration_set(set);
    }
    let cipher = KmsTokenCipher::new(sdk::kms::Client::new(&boot.aws), &config.task_token_key_id);
    // Only SendTaskFailure, through the TaskFailures port: a refused voter.
    let tokens = SfnTaskTokens::new(aws_sdk_sfn::Client::new(&boot.aws));
    // Off (a no-op) without NOTIFICATION_TOPIC_ARN.
    let notifications = SnsNotifications::new(
        sdk::sns::Client::new(&boot.aws),
        config.notification_topic_arn.clone(),
    );
    let ports = Production {
        store: metadb,
        mailer,
        cipher,
        tokens,
        notifications,
    };
    let handler = &ApprovalRequester::new(config.settings, key, ports);
    Ok(serve(|event: SnsEvent| async move {
        let mut reports = Vec::new();
        for request in parse_sns_event(&event)? {
            let report = handler.handle(&request, now_secs()).await?;
            tracing::info!(report = ?report, "mailed");
            reports.push(report);
        }
        Ok::<_, RequestError>(reports)
    })
    .await?)
}

fn now_secs() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map(|d| d.as_secs()).unwrap_or_default()
}
