//! A denied call surfaces naming role, action and resource (issue 28, item 5;
//! receiver): the webhook secret read as a role whose policy names another
//! parameter is refused by the local cloud's IAM; the delivery is answered 503
//! at once, its body carrying AWS's AccessDenied text (and the log line the same).

use std::sync::Arc;
use std::time::{Duration, Instant};

use live_ci_aws::{SsmParamStore, sdk};
use live_ci_github::{Credentials, GitHubClient, GitHubConfig, Job, RetryPolicy};
use live_ci_receiver::Receiver;
use live_ci_testkit::aws::{iam_enforced, role_session, sdk_config_for};
use live_ci_testkit::tasks::RecordingLauncher as Launcher;

use crate::ports::Fakes;
use crate::receiver::{fixture, handler_config, signed};

#[tokio::test]
async fn a_secret_read_the_role_may_not_make_answers_503_naming_role_action_and_resource() {
    let endpoint = live_ci_testkit::localstack_endpoint().unwrap();
    if !iam_enforced(&endpoint).await {
        eprintln!("skipping: the local cloud does not enforce IAM");
        return;
    }
    let prefix = format!("/{}", live_ci_testkit::unique("receiver"));
    let mut config = handler_config();
    config.webhook_secret_param = format!("{prefix}/webhook-secret");
    config.merge_lock_param = format!("{prefix}/merge-lock");
    let admin = sdk::ssm::Client::new(&sdk_config_for(&endpoint));
    admin
        .put_parameter()
        .name(&config.webhook_secret_param)
        .value(crate::receiver::SECRET)
        .r#type(sdk::ssm::types::ParameterType::String)
        .send()
        .await
        .unwrap();
    let allowed = format!("arn:aws:ssm:us-east-1:000000000000:parameter{prefix}/merge-lock");
    let policy = format!(
        r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Action":"ssm:GetParameter","Resource":"{allowed}"}}]}}"#
    );
    let role = live_ci_testkit::unique("receiver");
    let (role_arn, aws) = role_session(&endpoint, &role, &policy).await;
    let github = GitHubClient::new(GitHubConfig {
        api_base: "http://127.0.0.1:9".into(),
        repository: "acme/infrastructure-live".into(),
        credentials: Credentials::Token("ghs_token".into()),
        job: Job::Receiver,
        retry: RetryPolicy {
            max_attempts: 1,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(1),
        },
    })
    .unwrap();
    let params = SsmParamStore::new(sdk::ssm::Client::new(&aws));
    let launcher = Arc::new(Launcher::with_logs());
    let ports = Fakes::new(Arc::new(params), github, launcher.clone());
    let receiver = Receiver::new(config.clone(), ports).await.unwrap();
    let started = Instant::now();
    let response = receiver
        .handle(&signed(
            "pull_request",
            "denied-1",
            fixture("pull_request_closed_merged.json"),
        ))
        .await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(response.status, 503, "{}", response.body);
    let session = role_arn
        .replace(":iam::", ":sts::")
        .replace(":role/", ":assumed-role/");
    let secret_arn = format!(
        "arn:aws:ssm:us-east-1:000000000000:parameter{}",
        config.webhook_secret_param
    );
    let body = response.body.to_string();
    assert!(
        body.contains(&format!(
            "User: {session}/test is not authorized to perform: ssm:GetParameter on resource: {secret_arn}"
        )),
        "{body}"
    );
    assert!(launcher.started().is_empty());
}
