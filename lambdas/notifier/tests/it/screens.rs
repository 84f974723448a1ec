//! A Slack notification as the channel sees it: the notifier posts an
//! approval-pending event to a local HTTP receiver (wiremock) standing in for
//! the incoming webhook; the payload it received is rendered as Slack renders
//! Block Kit mrkdwn (testkit's `screens`) and opened in headless Chromium.
//! Screenshot: `target/test-artifacts/notifier/notification.png`.

use live_ci_core::notification::{Counts, Event, Format, PullRequest};
use live_ci_notifier::Notifier;
use live_ci_testkit::screens;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// Repository and configuration text that would mention the channel, turn
/// bold or italic.
const UNIT: &str = "prod/us-east-1/<!channel>*vpc*_x_";
const ACCOUNT: &str = "prod & *co* _eu_";
const PAGE: &str = "https://abc.lambda-url.us-east-1.on.aws/?r=djEucnVu&s=1";
const PR: &str = "https://github.com/acme/live/pull/7";

#[tokio::test(flavor = "current_thread")]
async fn the_channel_sees_the_facts_in_bold_two_links_and_repository_text_inert() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200))
        .expect(1)
        .mount(&server)
        .await;
    let event = Event::ApprovalPending {
        repository: "acme/live".into(),
        run_id: "run-42".into(),
        unit: UNIT.into(),
        account: ACCOUNT.into(),
        pull_request: Some(PullRequest {
            number: 7,
            url: PR.into(),
        }),
        counts: Counts {
            add: 2,
            change: 1,
            destroy: 0,
        },
        page_url: Some(PAGE.into()),
    };
    let url = format!("{}/services/T000/B000/x", server.uri());
    Notifier::new(Format::Slack, &url)
        .unwrap()
        .send(&event)
        .await
        .unwrap();
    let got = server.received_requests().await.unwrap();
    assert_eq!(got.len(), 1);
    let payload: serde_json::Value = serde_json::from_slice(&got[0].body).unwrap();

    let dir = screens::artifacts("notifier");
    std::fs::write(dir.join("notification.json"), format!("{payload:#}")).unwrap();
    let page = screens::slack_page("live-ci", &screens::slack_html(&payload));
    let seen = screens::open(
        &dir,
        "notification",
        &page,
        &[
            "live-ci: Approval pending",
            "2 to add, 1 to change, 0 to destroy",
        ],
        false,
    );
    let state = &seen["states"][0];
    assert_eq!(
        state["visible"]["live-ci: Approval pending"], true,
        "{seen}"
    );
    assert_eq!(
        state["visible"]["2 to add, 1 to change, 0 to destroy"], true,
        "{seen}"
    );
    // Each fact's label in bold, and nothing else.
    let bold: Vec<&str> = seen["bold"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap())
        .collect();
    assert_eq!(
        bold,
        [
            "live-ci",
            "Repository",
            "Unit",
            "Account",
            "Plan",
            "Run",
            "Pull request"
        ],
        "{seen}"
    );
    // The unit and account as typed (zero-width spaces aside): no mention,
    // no emphasis, the ampersand once.
    let text = state["text"].as_str().unwrap().replace('\u{200B}', "");
    assert!(text.contains(&format!("Unit\n{UNIT}")), "{text}");
    assert!(text.contains(&format!("Account\n{ACCOUNT}")), "{text}");
    assert!(!text.contains("@channel"), "{text}");
    assert!(
        !seen["elements"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e == "i" || e == "s"),
        "{seen}"
    );
    // Two links: the read-only run page (never a vote link) and the PR.
    let links: Vec<(&str, &str)> = seen["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["text"].as_str().unwrap(), l["href"].as_str().unwrap()))
        .collect();
    assert_eq!(
        links,
        [("Open the run page", PAGE), ("Pull request", PR)],
        "{seen}"
    );
    assert_eq!(seen["scripts"], 0, "{seen}");
    assert!(dir.join("notification.png").metadata().unwrap().len() > 1000);
}
