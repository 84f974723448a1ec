//! The SES v2 mailer: the exact SendEmail request on the wire, against a
//! wiremock server (LocalStack serves SES v2 only with the `localcloud` plugin;
//! the round trip through it is `tests/e2e/tests/approval/ses_localstack.rs`).
#![allow(clippy::unwrap_used)] // test set-up panics by design

use live_ci_aws::SesMailer;
use live_ci_core::port::{Email, Mailer};
use live_ci_testkit::aws_wire::{Call, Wire};
use live_ci_testkit::wire_client;
use serde_json::json;

fn email(to: &str) -> Email {
    Email {
        from: "live-ci@example.com".into(),
        to: to.into(),
        subject: "live-ci: approve apply of dev/vpc (dev) from PR #7?".into(),
        text: "Approve:  https://approve.example.com/?t=abc\n".into(),
        html: "<p><a href=\"https://approve.example.com/?t=abc\">Approve</a> caf\u{e9}</p>".into(),
    }
}

/// The SendEmail body for `to`: simple content, every part UTF-8, no CC/BCC.
fn send_email(to: &str, configuration_set: Option<&str>) -> Call {
    let mut body = json!({
        "FromEmailAddress": "live-ci@example.com",
        "Destination": {"ToAddresses": [to]},
        "Content": {"Simple": {
            "Subject": {"Data": "live-ci: approve apply of dev/vpc (dev) from PR #7?", "Charset": "UTF-8"},
            "Body": {
                "Text": {"Data": "Approve:  https://approve.example.com/?t=abc\n", "Charset": "UTF-8"},
                "Html": {"Data": "<p><a href=\"https://approve.example.com/?t=abc\">Approve</a> caf\u{e9}</p>", "Charset": "UTF-8"},
            },
        }},
    });
    if let Some(set) = configuration_set {
        body["ConfigurationSetName"] = json!(set);
    }
    Call::rest_json("/v2/email/outbound-emails", body)
}

#[tokio::test]
async fn send_email_request_is_exact() {
    let wire = Wire::start(vec![
        send_email("alice@example.com", Some("live-ci"))
            .answer_json(json!({"MessageId": "0100018f-mail"})),
    ])
    .await;
    let mailer =
        SesMailer::new(wire_client!(aws_sdk_sesv2, wire)).with_configuration_set("live-ci");
    assert_eq!(
        mailer.send(&email("alice@example.com")).await.unwrap(),
        "0100018f-mail"
    );
    wire.verify().await;
}

#[tokio::test]
async fn a_refused_mail_names_the_recipient() {
    let wire = Wire::start(vec![send_email("bob@example.com", None).error(
        400,
        "MessageRejected",
        "Email address is not verified.",
    )])
    .await;
    let err = SesMailer::new(wire_client!(aws_sdk_sesv2, wire))
        .send(&email("bob@example.com"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("ses send-email to \"bob@example.com\": "),
        "{err}"
    );
    assert!(err.contains("Email address is not verified."), "{err}");
    assert!(err.contains("MessageRejected"), "{err}");
    wire.verify().await;
}
