//! A denied call surfaces naming role, action and resource (issue 28, item 5;
//! approval-response): the decision's task token is decrypted with the
//! function role's `kms:Decrypt`; a role without it gets KMS's
//! AccessDeniedException from the local cloud's IAM. The voter's page says the
//! decision was not delivered (no AWS text on a public page), nothing is sent
//! to Step Functions, and the function's log line carries AWS's text naming the
//! role, the action and the key, at once (no retry loop).
#![allow(clippy::unwrap_used)]

use crate::requester_fakes::Fakes as RequesterFakes;
use std::io::Write;
use std::sync::{Arc, Mutex};

use live_ci_approval_request::{ApprovalRequester, RequestSettings};
use live_ci_approval_response::PageRequest;
use live_ci_aws::{KmsTokenCipher, sdk};
use live_ci_testkit::approval::*;

/// What the handler logged, as the Lambda's log would show it.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_decrypt_the_role_may_not_make_is_logged_naming_role_action_and_key() {
    let endpoint = live_ci_testkit::localstack_endpoint().unwrap();
    if !live_ci_testkit::aws::iam_enforced(&endpoint).await {
        eprintln!("skipping: the local cloud does not enforce IAM");
        return;
    }
    let key_id = kms_key().await;
    let key_arn = kms_client()
        .describe_key()
        .key_id(&key_id)
        .send()
        .await
        .unwrap()
        .key_metadata
        .unwrap()
        .arn
        .unwrap();
    let role = live_ci_testkit::unique("approval-response");
    let (role_arn, config) = live_ci_testkit::aws::role_session(
        &endpoint,
        &role,
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"kms:Encrypt","Resource":"*"}]}"#,
    )
    .await;
    let id = "run-1-c8c5-dev-denied-001";
    let (tdb, db, record) = awaiting(id, &["alice@example.com"], 1, 1).await;
    let fakes = RequesterFakes::new(
        db.clone(),
        RecordingMailer::default(),
        KmsTokenCipher::new(kms_client(), key_id.clone()),
        live_ci_testkit::approval::RecordingFailures::default(),
    );
    let requester = ApprovalRequester::new(
        RequestSettings {
            approval_url: "https://approve.example.com".into(),
            from_address: "live-ci@example.com".into(),
            approval_timeout_secs: 3600,
            repository: "acme/live".into(),
            github_web_url: "https://github.com".into(),
        },
        key(),
        fakes.clone(),
    );
    requester
        .handle(&request_for(&record, "token-denied"), now())
        .await
        .unwrap();
    let mails = fakes.mailer.sent();
    let token = token_of(&text_link(&mails[0], "Approve"));
    let responder = crate::ports::responder(
        key(),
        db.clone(),
        RecordingTokens::default(),
        KmsTokenCipher::new(sdk::kms::Client::new(&config), key_id),
    );
    let log = Log::default();
    let writer = log.clone();
    let _guard = tracing::subscriber::set_default(
        tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish(),
    );
    let started = std::time::Instant::now();
    let page = responder
        .handle(
            &PageRequest {
                method: "POST".into(),
                query: String::new(),
                headers: [(
                    "content-type".to_string(),
                    "application/x-www-form-urlencoded".to_string(),
                )]
                .into(),
                body: format!("t={token}").into_bytes(),
            },
            i64::try_from(now()).unwrap() * 1000,
        )
        .await;
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert!(page.status >= 500, "{} {}", page.status, page.body);
    assert!(!page.body.contains("not authorized"), "{}", page.body);
    assert!(responder.tokens.calls().is_empty());
    let logged = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    let session = role_arn
        .replace(":iam::", ":sts::")
        .replace(":role/", ":assumed-role/");
    assert!(
        logged.contains(&format!(
            "User: {session}/test is not authorized to perform: kms:Decrypt on resource: {key_arn}"
        )),
        "{logged}"
    );
    tdb.drop_db().await;
}
