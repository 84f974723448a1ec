//! The SES v2 mailer: the exact SendEmail request through the SDK's mock
//! interceptor (LocalStack serves SES v2 only with the `localcloud` plugin;
//! the round trip through it is `tests/e2e/tests/approval/ses_localstack.rs`).
#![allow(clippy::unwrap_used)] // test set-up panics by design

use aws_sdk_sesv2::Client;
use aws_sdk_sesv2::operation::send_email::{SendEmailInput, SendEmailOutput};
use aws_smithy_mocks::{mock, mock_client};
use live_ci_aws::SesMailer;
use live_ci_core::port::{Email, Mailer};

fn email(to: &str) -> Email {
    Email {
        from: "live-ci@example.com".into(),
        to: to.into(),
        subject: "live-ci: approve apply of dev/vpc (dev) from PR #7?".into(),
        text: "Approve:  https://approve.example.com/?t=abc\n".into(),
        html: "<p><a href=\"https://approve.example.com/?t=abc\">Approve</a> caf\u{e9}</p>".into(),
    }
}

fn exact_request(req: &SendEmailInput) -> bool {
    let simple = req.content().unwrap().simple().unwrap();
    let body = simple.body().unwrap();
    let subject = simple.subject().unwrap();
    let (text, html) = (body.text().unwrap(), body.html().unwrap());
    req.from_email_address() == Some("live-ci@example.com")
        && req.destination().unwrap().to_addresses() == ["alice@example.com"]
        && req.destination().unwrap().cc_addresses().is_empty()
        && req.destination().unwrap().bcc_addresses().is_empty()
        && subject.data() == "live-ci: approve apply of dev/vpc (dev) from PR #7?"
        && subject.charset() == Some("UTF-8")
        && text.data() == "Approve:  https://approve.example.com/?t=abc\n"
        && text.charset() == Some("UTF-8")
        && html.data()
            == "<p><a href=\"https://approve.example.com/?t=abc\">Approve</a> caf\u{e9}</p>"
        && html.charset() == Some("UTF-8")
        && req.configuration_set_name() == Some("live-ci")
}

#[tokio::test]
async fn send_email_request_is_exact() {
    let rule = mock!(Client::send_email)
        .match_requests(exact_request)
        .then_output(|| {
            SendEmailOutput::builder()
                .message_id("0100018f-mail")
                .build()
        });
    let client = mock_client!(aws_sdk_sesv2, [&rule]);
    let mailer = SesMailer::new(client).with_configuration_set("live-ci");
    assert_eq!(
        mailer.send(&email("alice@example.com")).await.unwrap(),
        "0100018f-mail"
    );
    assert_eq!(rule.num_calls(), 1);
}

#[tokio::test]
async fn a_refused_mail_names_the_recipient() {
    let rule = mock!(Client::send_email).then_error(|| {
        aws_sdk_sesv2::operation::send_email::SendEmailError::MessageRejected(
            aws_sdk_sesv2::types::error::MessageRejected::builder()
                .message("Email address is not verified.")
                .build(),
        )
    });
    let client = mock_client!(aws_sdk_sesv2, [&rule]);
    let err = SesMailer::new(client)
        .send(&email("bob@example.com"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("ses send-email to \"bob@example.com\": "),
        "{err}"
    );
    assert!(err.contains("Email address is not verified."), "{err}");
}
