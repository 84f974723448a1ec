//! The approval_response Lambda's entry point: wires the metadb, Step Functions,
//! KMS and S3 (the saved plans) clients, the vote-link key and the run-link key into [`ApprovalResponder`] once per
//! cold start, and serves Function URL requests with it. With votes from
//! the pull request configured, it wires GitHub too and counts the vote
//! comments the receiver invokes it with (`{"github_vote": …}`).

use anyhow::Context;
use aws_lambda_events::event::lambda_function_urls::LambdaFunctionUrlRequest;
use live_ci_approval_response::{
    ApprovalResponder, Config, GitHubVoteError, GitHubVoteEvent, Production, from_function_url,
    to_function_url,
};
use live_ci_aws::{KmsTokenCipher, S3ArtifactStore, sdk};
use live_ci_boot::{Boot, serve};
use live_ci_github::Job;
use live_ci_stepfunctions::SfnTaskTokens;

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
    // GitHub joins the ports only with votes from the pull request
    // configured; who may vote (the accounts, the logins map) is checked at
    // the cold start with it.
    let (github, voting) = match &config.github_votes {
        None => (None, None),
        Some(c) => {
            let voting = c.voting()?;
            let job = Job::ApprovalResponse;
            let github = boot.github(&c.auth, &c.api_url, &c.repository, job).await?;
            (Some(github), Some(voting))
        }
    };
    let ports = Production {
        db: metadb,
        tokens,
        cipher,
        plans,
        github,
    };
    let responder = &ApprovalResponder::new(key, ports).with_run_key(run_key);
    let voting = &voting;
    Ok(serve(|event: serde_json::Value| async move {
        // Only a direct invoke can put `github_vote` at the top level: a
        // Function URL event's keys are AWS's.
        if event.get("github_vote").is_some() {
            let request: GitHubVoteEvent = serde_json::from_value(event)
                .map_err(|e| format!("a github_vote invoke that does not parse: {e}"))?;
            let Some(voting) = voting else {
                return Err(GitHubVoteError::NotConfigured.to_string());
            };
            // An error (a port failed before the vote) fails the invoke:
            // Lambda retries an asynchronous invoke, and nothing changed.
            let outcome = responder
                .github_vote(voting, &request.github_vote)
                .await
                .map_err(|e| e.to_string())?;
            tracing::info!(counted = outcome.counted, note = %outcome.note, "vote from the pull request");
            return serde_json::to_value(&outcome).map_err(|e| e.to_string());
        }
        let event: LambdaFunctionUrlRequest = serde_json::from_value(event)
            .map_err(|e| format!("not a Function URL request: {e}"))?;
        let response = responder.handle(&from_function_url(&event), now_ms()).await;
        serde_json::to_value(to_function_url(&response)).map_err(|e| e.to_string())
    })
    .await?)
}

fn now_ms() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}
