//! Delivery in the local cloud (LocalStack + the live-ci plugin, IAM
//! enforced): an event published by the publishers' adapter
//! ([`SnsNotifications`], as a role holding only the module's
//! `notification_publish` grants) to a KMS-encrypted topic reaches the real
//! notifier binary, run by LocalStack as a Lambda subscribed to the topic
//! (one per format), which reads its URL from a SecureString and posts to an
//! HTTP receiver in this process on 127.0.0.1. The receiver checks the exact
//! payloads; one Slack and one JSON payload are saved under
//! `target/test-artifacts/notifier/delivered-*.json`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use live_ci_aws::{SnsNotifications, sdk};
use live_ci_core::notification::{Counts, Event, Format, PullRequest, render};
use live_ci_core::port::Notifications;
use live_ci_testkit::aws::{role_session, sdk_config_for, service_role};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// The notifier binary of this package, zipped as a `provided` runtime's
/// `bootstrap`.
fn bootstrap_zip(dir: &std::path::Path) -> Vec<u8> {
    let bootstrap = dir.join("bootstrap");
    std::fs::copy(env!("CARGO_BIN_EXE_notifier"), &bootstrap).unwrap();
    let zip = dir.join("notifier.zip");
    let status = std::process::Command::new("zip")
        .arg("-jq")
        .arg(&zip)
        .arg(&bootstrap)
        .status()
        .expect("zip is installed");
    assert!(status.success());
    std::fs::read(zip).unwrap()
}

fn artifacts() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| live_ci_testkit::repo_root().join("target"));
    let dir = target.join("test-artifacts/notifier");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Creates the notifier for `format`, posting to `url`, subscribed to `topic`.
async fn notifier(
    endpoint: &str,
    zip: &[u8],
    key_arn: &str,
    format: &str,
    url: &str,
    topic: &str,
) -> String {
    let admin = sdk_config_for(endpoint);
    let name = live_ci_testkit::unique(&format!("live-ci-notifier-{format}"));
    let param = format!("/{name}/notification-url");
    sdk::ssm::Client::new(&admin)
        .put_parameter()
        .name(&param)
        .value(url)
        .r#type(sdk::ssm::types::ParameterType::SecureString)
        // The module's key, as its placeholder parameter is created.
        .key_id(key_arn)
        .send()
        .await
        .unwrap();
    // The module's notifier policy: this one parameter, decrypted.
    let policy = format!(
        r#"{{"Version":"2012-10-17","Statement":[
            {{"Effect":"Allow","Action":"ssm:GetParameter","Resource":"arn:aws:ssm:us-east-1:000000000000:parameter{param}"}},
            {{"Effect":"Allow","Action":"kms:Decrypt","Resource":"{key_arn}"}},
            {{"Effect":"Allow","Action":["logs:CreateLogStream","logs:PutLogEvents","logs:CreateLogGroup"],"Resource":"*"}}]}}"#
    );
    let role = service_role(&name, "lambda.amazonaws.com", &policy).await;
    let lambda = sdk::lambda::Client::new(&admin);
    let env = sdk::lambda::types::Environment::builder()
        .variables("NOTIFICATION_FORMAT", format)
        .variables("NOTIFICATION_URL_SSM_KEY", &param)
        .variables("RUST_LOG", "info")
        .build();
    let created = lambda
        .create_function()
        .function_name(&name)
        .runtime(sdk::lambda::types::Runtime::Providedal2023)
        .handler("bootstrap")
        .role(role)
        .environment(env)
        .timeout(30)
        .code(
            sdk::lambda::types::FunctionCode::builder()
                .zip_file(sdk::lambda::primitives::Blob::new(zip))
                .build(),
        )
        .send()
        .await
        .unwrap();
    let arn = created.function_arn.unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let state = lambda
            .get_function()
            .function_name(&name)
            .send()
            .await
            .unwrap()
            .configuration
            .and_then(|c| c.state);
        if state == Some(sdk::lambda::types::State::Active) {
            break;
        }
        assert!(Instant::now() < deadline, "{name} not active: {state:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    lambda
        .add_permission()
        .function_name(&name)
        .statement_id("AllowNotificationsTopic")
        .action("lambda:InvokeFunction")
        .principal("sns.amazonaws.com")
        .source_arn(topic)
        .send()
        .await
        .unwrap();
    sdk::sns::Client::new(&admin)
        .subscribe()
        .topic_arn(topic)
        .protocol("lambda")
        .endpoint(&arn)
        .send()
        .await
        .unwrap();
    arn
}

#[tokio::test]
async fn a_published_event_reaches_the_endpoint_through_sns_and_the_notifier() {
    let endpoint = live_ci_testkit::localstack_endpoint().unwrap();
    let admin = sdk_config_for(&endpoint);
    let receiver = MockServer::start().await;
    for hook in ["/hooks/slack", "/hooks/json"] {
        Mock::given(method("POST"))
            .and(path(hook))
            .respond_with(ResponseTemplate::new(200))
            .mount(&receiver)
            .await;
    }
    // The module's topic: its own, under the module's KMS key.
    let key = sdk::kms::Client::new(&admin)
        .create_key()
        .description(live_ci_testkit::unique("live-ci-notifications"))
        .send()
        .await
        .unwrap()
        .key_metadata
        .unwrap();
    let topic = sdk::sns::Client::new(&admin)
        .create_topic()
        .name(live_ci_testkit::unique("live-ci-notifications"))
        .attributes("KmsMasterKeyId", key.key_id())
        .send()
        .await
        .unwrap()
        .topic_arn
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let zip = bootstrap_zip(dir.path());
    for format in ["slack", "json"] {
        let url = format!("{}/hooks/{format}", receiver.uri());
        notifier(&endpoint, &zip, key.arn().unwrap(), format, &url, &topic).await;
    }
    // The publishers' grant (infra/notifications.tf notification_publish).
    let policy = format!(
        r#"{{"Version":"2012-10-17","Statement":[
            {{"Sid":"PublishNotifications","Effect":"Allow","Action":"sns:Publish","Resource":"{topic}"}},
            {{"Sid":"NotificationsTopicKey","Effect":"Allow","Action":["kms:GenerateDataKey","kms:Decrypt"],"Resource":"{}"}}]}}"#,
        key.arn().unwrap()
    );
    let (_, publisher) = role_session(
        &endpoint,
        &live_ci_testkit::unique("live-ci-publisher"),
        &policy,
    )
    .await;
    let event = Event::ApprovalPending {
        repository: "acme/live".into(),
        run_id: "42".into(),
        unit: "prod/us-east-1/<!channel> vpc".into(),
        account: "prod".into(),
        pull_request: Some(PullRequest {
            number: 7,
            url: "https://github.com/acme/live/pull/7".into(),
        }),
        counts: Counts {
            add: 2,
            change: 1,
            destroy: 0,
        },
        page_url: Some("https://abc.lambda-url.us-east-1.on.aws/?r=djEucnVuLnBhZ2U".into()),
    };
    SnsNotifications::new(sdk::sns::Client::new(&publisher), Some(topic.clone()))
        .publish(&event)
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let delivered = loop {
        let got = receiver.received_requests().await.unwrap_or_default();
        if got.len() >= 2 {
            break got;
        }
        assert!(
            Instant::now() < deadline,
            "delivered {} of 2 notifications",
            got.len()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(delivered.len(), 2, "each notifier posts once");
    for (format, hook) in [
        (Format::Slack, "/hooks/slack"),
        (Format::Json, "/hooks/json"),
    ] {
        let request = delivered
            .iter()
            .find(|r| r.url.path() == hook)
            .unwrap_or_else(|| panic!("nothing posted to {hook}"));
        assert_eq!(
            request
                .headers
                .get("content-type")
                .map(|v| v.to_str().unwrap()),
            Some("application/json"),
            "{hook}"
        );
        let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
        assert_eq!(body, render(&event, format), "{hook}");
        let name = match format {
            Format::Slack => "delivered-slack.json",
            _ => "delivered-json.json",
        };
        std::fs::write(
            artifacts().join(name),
            serde_json::to_string_pretty(&body).unwrap(),
        )
        .unwrap();
    }
}
