//! The notifier against a real HTTP endpoint (wiremock): delivery, retries
//! of 429 and 5xx (bounded, honouring `Retry-After`), and the secret URL
//! never in a log line or an error; and (`delivery`) the whole path in the
//! local cloud: SNS, the notifier as a Lambda, the endpoint.
#![allow(clippy::unwrap_used)]

mod delivery;
mod screens;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use live_ci_core::notification::{Counts, Event, Format, PullRequest, UnitError, render};
use live_ci_notifier::{Notifier, Retry, SnsEvent};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// The secret part of the endpoint's path, looked for in logs.
const SECRET: &str = "T000/B000/s3cr3tw3bh00kp4th";

fn pending() -> Event {
    Event::ApprovalPending {
        repository: "acme/live".into(),
        run_id: "run-42".into(),
        unit: "prod/us-east-1/vpc".into(),
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
        page_url: Some("https://abc.lambda-url.us-east-1.on.aws/?r=djEucnVu".into()),
    }
}

fn sns(e: &Event) -> SnsEvent {
    serde_json::from_value(serde_json::json!({
        "Records": [{"Sns": {"Message": serde_json::to_string(e).unwrap()}}]
    }))
    .unwrap()
}

fn fast() -> Retry {
    Retry {
        attempts: 3,
        base: Duration::from_millis(10),
        max_wait: Duration::from_secs(2),
    }
}

#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'w> tracing_subscriber::fmt::MakeWriter<'w> for Logs {
    type Writer = Logs;
    fn make_writer(&'w self) -> Logs {
        self.clone()
    }
}

impl Logs {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

async fn setup(
    server: &MockServer,
    format: Format,
) -> (Notifier, Logs, tracing::subscriber::DefaultGuard) {
    let logs = Logs::default();
    let guard = tracing::subscriber::set_default(live_ci_boot::subscriber(logs.clone()));
    let url = format!("{}/services/{SECRET}", server.uri());
    (
        Notifier::new(format, &url).unwrap().with_retry(fast()),
        logs,
        guard,
    )
}

#[tokio::test(flavor = "current_thread")]
async fn a_notification_is_posted_once_as_rendered() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(format!("/services/{SECRET}")))
        .respond_with(ResponseTemplate::new(200))
        .expect(1)
        .mount(&server)
        .await;
    let (n, logs, _g) = setup(&server, Format::Slack).await;
    n.handle(&sns(&pending())).await.unwrap();
    let got = server.received_requests().await.unwrap();
    let body: serde_json::Value = serde_json::from_slice(&got[0].body).unwrap();
    assert_eq!(body, render(&pending(), Format::Slack));
    assert_eq!(got[0].headers["content-type"], "application/json");
    assert!(
        logs.text().contains("notification delivered"),
        "{}",
        logs.text()
    );
    assert!(!logs.text().contains(SECRET), "{}", logs.text());
}

#[tokio::test(flavor = "current_thread")]
async fn a_429_is_retried_after_retry_after() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "1"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&server)
        .await;
    let (n, logs, _g) = setup(&server, Format::Teams).await;
    let start = Instant::now();
    n.send(&pending()).await.unwrap();
    assert!(
        start.elapsed() >= Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
    let text = logs.text();
    assert!(text.contains("\"status\":429"), "{text}");
    assert!(!text.contains(SECRET), "{text}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_failing_endpoint_is_tried_a_bounded_number_of_times_and_logged() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .mount(&server)
        .await;
    let (n, logs, _g) = setup(&server, Format::Json).await;
    let err = n.handle(&sns(&pending())).await.unwrap_err();
    assert_eq!(err.to_string(), "endpoint answered 500 after 3 attempts");
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
    let text = logs.text();
    assert!(text.contains("notification not delivered"), "{text}");
    assert!(!text.contains(SECRET), "{text}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_4xx_is_not_retried_and_an_unreachable_endpoint_hides_its_url() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(404))
        .mount(&server)
        .await;
    let (n, logs, _g) = setup(&server, Format::Slack).await;
    let err = n.send(&pending()).await.unwrap_err();
    assert_eq!(err.to_string(), "endpoint answered 404 after 1 attempts");
    // a closed port: reqwest's error would name the URL
    let closed = Notifier::new(
        Format::Slack,
        &format!("http://127.0.0.1:9/services/{SECRET}"),
    )
    .unwrap()
    .with_retry(fast());
    let err = closed.send(&pending()).await.unwrap_err().to_string();
    assert!(
        err.starts_with("endpoint unreachable after 3 attempts"),
        "{err}"
    );
    assert!(!err.contains(SECRET), "{err}");
    assert!(!logs.text().contains(SECRET), "{}", logs.text());
}

/// Real payloads for the note: one Slack message and one generic JSON
/// document, as posted, under `target/test-artifacts/notifier/`.
#[test]
fn rendered_payloads_are_saved_for_review() {
    let failed = Event::RunFailed {
        repository: "acme/live".into(),
        run_id: "run-43".into(),
        pull_request: Some(PullRequest {
            number: 8,
            url: "https://github.com/acme/live/pull/8".into(),
        }),
        failed: vec![UnitError {
            unit: "prod/us-east-1/db".into(),
            error: "terraform apply exited 1: Error: creating RDS instance <db>: InvalidParameterCombination".into(),
        }],
        page_url: Some("https://abc.lambda-url.us-east-1.on.aws/?r=djEucnVu".into()),
    };
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("test-artifacts/notifier");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, v) in [
        (
            "slack-approval-pending.json",
            render(&pending(), Format::Slack),
        ),
        ("slack-run-failed.json", render(&failed, Format::Slack)),
        (
            "teams-approval-pending.json",
            render(&pending(), Format::Teams),
        ),
        ("json-run-failed.json", render(&failed, Format::Json)),
    ] {
        std::fs::write(dir.join(name), serde_json::to_string_pretty(&v).unwrap()).unwrap();
    }
}
