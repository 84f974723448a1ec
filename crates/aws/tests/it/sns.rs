//! The notifications adapter off and on: without a topic (the module's
//! default) a publish makes no request at all; with one it does, and its
//! failure names the topic. (Delivery through LocalStack's SNS to the
//! notifier and an HTTP endpoint: `lambdas/notifier/tests/it/delivery.rs`.)
#![allow(clippy::unwrap_used)]

use live_ci_aws::{NOTIFICATION_TOPIC_ENV, SnsNotifications};
use live_ci_core::notification::Event;
use live_ci_core::port::{Classify, ErrorKind, Notifications};
use live_ci_testkit::aws::sdk_config_for;

/// A client whose every request fails to connect: a request made shows.
fn unreachable() -> live_ci_aws::sdk::sns::Client {
    live_ci_aws::sdk::sns::Client::new(&sdk_config_for("http://127.0.0.1:9"))
}

fn finished() -> Event {
    Event::RunFinished {
        repository: "acme/live".into(),
        run_id: "42".into(),
        pull_request: None,
        units: 3,
        page_url: None,
    }
}

#[tokio::test]
async fn without_a_topic_nothing_is_published_and_with_one_a_request_is_made() {
    for topic in [None, Some(String::new()), Some("  ".into())] {
        let off = SnsNotifications::new(unreachable(), topic.clone());
        assert!(!off.is_on(), "{topic:?}");
        off.publish(&finished()).await.unwrap();
    }
    let arn = "arn:aws:sns:us-east-1:000000000000:live-ci-notifications";
    let on = SnsNotifications::new(unreachable(), Some(arn.into()));
    assert!(on.is_on());
    let err = on.publish(&finished()).await.unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("sns publish to {arn:?}: ")),
        "{err}"
    );
    assert_eq!(err.kind(), ErrorKind::Retryable, "{err}");
    let env = |k: &str| (k == NOTIFICATION_TOPIC_ENV).then(|| arn.to_string());
    assert_eq!(SnsNotifications::topic_from(env).as_deref(), Some(arn));
    assert_eq!(SnsNotifications::topic_from(|_| Some(String::new())), None);
}
