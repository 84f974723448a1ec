//! The approval_request handler on the stored SNS fixture against a real
//! PostgreSQL metadb: one mail per voter with that voter's own signed links,
//! escaped HTML, repeated deliveries mail nobody twice, bad requests fail
//! clearly and change nothing.
#![allow(clippy::unwrap_used)]

mod fakes;

use live_ci_testkit::approval as support;

use aws_lambda_events::event::sns::SnsEvent;
use fakes::Fakes;
use live_ci_approval_request::{
    ApprovalRequester, MAIL_REFUSED, RequestError, RequestSettings, parse_sns_event,
};
use live_ci_core::deploy::Vote;
use live_ci_core::port::{ApprovalStore, Classify, Email, ErrorKind, Mailer, TokenDelivery};
use live_ci_stepfunctions::ApprovalRequest;
use support::*;

fn settings() -> RequestSettings {
    RequestSettings {
        approval_url: "https://abc.lambda-url.us-west-2.on.aws/".into(),
        from_address: "live-ci@example.com".into(),
        approval_timeout_secs: 86_400,
        repository: "acme/infrastructure-live".into(),
        github_web_url: "https://github.com".into(),
    }
}

fn fixture() -> ApprovalRequest {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/sns/approval-request.json"
    );
    let event: SnsEvent = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut requests = parse_sns_event(&event).unwrap();
    assert_eq!(requests.len(), 1);
    requests.remove(0)
}

#[tokio::test]
async fn the_sns_fixture_mails_each_voter_their_own_links_once() {
    let request = fixture();
    let id = request.execution.execution_id.clone();
    let (tdb, db, _) = awaiting(&id, &["alice@example.com", "bob@example.com"], 1, 1).await;
    let fakes = Fakes::new(
        db.clone(),
        RecordingMailer::default(),
        cipher().await,
        live_ci_testkit::approval::RecordingFailures::default(),
    );
    let requester = ApprovalRequester::new(settings(), key(), fakes.clone());
    let now = now();
    let report = requester.handle(&request, now).await.unwrap();
    assert_eq!(report.mailed, ["alice@example.com", "bob@example.com"]);
    let mails = fakes.mailer.sent();
    assert_eq!(mails.len(), 2);
    let mut tokens = Vec::new();
    for (mail, voter) in mails.iter().zip(["alice@example.com", "bob@example.com"]) {
        assert_eq!(mail.to, voter);
        assert_eq!(mail.from, "live-ci@example.com");
        assert_eq!(
            mail.subject,
            "live-ci: approve apply of directory_dependency/dev-account/us-west-2/env-one/baz (dev) from PR #1?"
        );
        for part in [&mail.text, &mail.html] {
            assert!(part.contains("directory_dependency/dev-account/us-west-2/env-one/baz"));
            assert!(part.contains("2 to add, 1 to change, 0 to destroy"));
            assert!(part.contains("https://github.com/acme/infrastructure-live/pull/1"));
            assert!(part.contains("https://github.com/acme/infrastructure-live/commit/c8c5f6afc7345bd21cd79acaf740dc18b60755e3"));
            assert!(part.contains("until a decision is reached"));
        }
        // The logs URL is escaped in HTML (its `&` and `$` survive as text).
        assert!(mail.text.contains(&request.plan.logs_url));
        assert!(mail.html.contains("href=\"https://us-west-2.console.aws.amazon.com/cloudwatch/home?region=us-west-2#logsV2:log-groups"));
        assert!(
            !mail.text.contains(&request.task_token),
            "the task token is never mailed"
        );
        assert!(!mail.html.contains(&request.task_token));
        for (label, vote) in [("Approve", Vote::Approve), ("Reject", Vote::Reject)] {
            let url = text_link(mail, label);
            assert!(
                url.starts_with("https://abc.lambda-url.us-west-2.on.aws/?t="),
                "{url}"
            );
            assert!(
                mail.html.contains(&format!("href=\"{url}\"")),
                "html carries {url}"
            );
            assert!(url.len() < 260, "{}", url.len());
            let link = key().verify(&token_of(&url), now).unwrap();
            assert_eq!(
                (link.execution_id.as_str(), link.voter.as_str(), link.vote),
                (id.as_str(), voter, vote)
            );
            assert_eq!(link.task_token_hash, hash(&request.task_token));
            assert_eq!(link.expires_at, now + 86_400);
            tokens.push(token_of(&url));
        }
    }
    tokens.sort();
    tokens.dedup();
    assert_eq!(tokens.len(), 4, "every voter and vote has its own link");
    let stored = db.approval_request(&id).await.unwrap().unwrap();
    assert_eq!(stored.task_token_hash, hash_hex(&request.task_token));
    assert_ne!(
        stored.task_token_ciphertext.as_deref(),
        Some(request.task_token.as_str())
    );
    assert_eq!(
        (stored.to_add, stored.to_change, stored.to_destroy),
        (2, 1, 0)
    );
    assert_eq!(
        stored.expires_at,
        i64::try_from((now + 86_400) * 1000).unwrap()
    );
    // SNS delivers again (later): nobody is mailed twice, links keep their expiry.
    let again = requester.handle(&request, now + 60).await.unwrap();
    assert!(again.mailed.is_empty());
    assert_eq!(
        again.already_mailed,
        ["alice@example.com", "bob@example.com"]
    );
    assert_eq!(fakes.mailer.sent().len(), 2);
    tdb.drop_db().await;
}

#[tokio::test]
async fn values_are_escaped_and_only_web_urls_become_links() {
    let (tdb, db, record) = awaiting("run-1-c8c5-dev-esc-001", &["alice@example.com"], 1, 1).await;
    let mut request = request_for(&record, "token-esc");
    request.execution.account_name = "<b>dev</b> & \"prod\"".into();
    request.plan.logs_url = "javascript:alert('x')".into();
    let fakes = Fakes::new(
        db,
        RecordingMailer::default(),
        cipher().await,
        live_ci_testkit::approval::RecordingFailures::default(),
    );
    let requester = ApprovalRequester::new(settings(), key(), fakes.clone());
    requester.handle(&request, now()).await.unwrap();
    let html = &fakes.mailer.sent()[0].html;
    assert!(
        html.contains("&lt;b&gt;dev&lt;/b&gt; &amp; &quot;prod&quot;"),
        "{html}"
    );
    assert!(!html.contains("<b>dev</b>"));
    assert!(!html.contains("href=\"javascript:"));
    assert!(html.contains("javascript:alert(&#39;x&#39;)"));
    tdb.drop_db().await;
}

/// A plan that changes only outputs (read from `show -json`) still asks for
/// approval, and the voters read "outputs change" rather than three zeros.
#[tokio::test]
async fn an_outputs_only_plan_says_outputs_change() {
    let (tdb, db, record) = awaiting("run-1-c8c5-dev-out-003", &["alice@example.com"], 1, 1).await;
    let mut request = request_for(&record, "token-out");
    request.plan.to_add = 0;
    request.plan.to_change = 0;
    request.plan.to_destroy = 0;
    request.plan.outputs_changed = vec!["vpc_id".into(), "zone".into()];
    let fakes = Fakes::new(
        db,
        RecordingMailer::default(),
        cipher().await,
        live_ci_testkit::approval::RecordingFailures::default(),
    );
    let requester = ApprovalRequester::new(settings(), key(), fakes.clone());
    requester.handle(&request, now()).await.unwrap();
    let mail = &fakes.mailer.sent()[0];
    for part in [&mail.text, &mail.html] {
        assert!(part.contains("outputs change: vpc_id, zone"), "{part}");
        assert!(!part.contains("0 to add"), "{part}");
    }
    tdb.drop_db().await;
}

#[tokio::test]
async fn bad_requests_fail_clearly_and_change_nothing() {
    let id = "run-1-c8c5-dev-bad-002";
    let (tdb, db, record) = awaiting(id, &["alice@example.com"], 1, 1).await;
    let fakes = Fakes::new(
        db.clone(),
        RecordingMailer::default(),
        cipher().await,
        live_ci_testkit::approval::RecordingFailures::default(),
    );
    let requester = ApprovalRequester::new(settings(), key(), fakes.clone());
    type Change = Box<dyn Fn(&mut ApprovalRequest)>;
    let cases: Vec<(Change, &str)> = vec![
        (
            Box::new(|r| r.execution.voters.clear()),
            "execution.voters: is empty",
        ),
        (
            Box::new(|r| r.execution.voters.push("bob@example".into())),
            "execution.voters: \"bob@example\" has no valid dotted domain",
        ),
        (
            Box::new(|r| {
                r.execution
                    .voters
                    .push("eve@example.com, mallory@example.com".into())
            }),
            "execution.voters: \"eve@example.com, mallory@example.com\" contains",
        ),
        (Box::new(|r| r.task_token.clear()), "task_token: is empty"),
    ];
    for (change, message) in cases {
        let mut request = request_for(&record, "token-bad");
        change(&mut request);
        let err = requester.handle(&request, now()).await.unwrap_err();
        assert!(matches!(err, RequestError::Invalid { .. }), "{err}");
        assert!(err.to_string().contains(message), "{err}");
        assert!(err.to_string().contains(id), "{err}");
    }
    assert!(db.approval_request(id).await.unwrap().is_none());
    assert!(fakes.mailer.sent().is_empty());
    // An execution the metadb does not know.
    let mut unknown = request_for(&record, "token-bad");
    unknown.execution.execution_id = "run-9-ffff-dev-nope-999".into();
    let err = requester.handle(&unknown, now()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "execution \"run-9-ffff-dev-nope-999\" is not in the metadb"
    );
    assert!(fakes.mailer.sent().is_empty());
    // A message that is not an approval request names the record.
    let event: SnsEvent = serde_json::from_value(serde_json::json!({"Records": [{
        "EventSource": "aws:sns", "EventVersion": "1.0", "EventSubscriptionArn": "arn:x",
        "Sns": {"Type": "Notification", "MessageId": "m", "TopicArn": "arn:t",
                "Message": "{\"hello\": 1}", "Timestamp": "2026-11-21T10:20:20.123Z",
                "SignatureVersion": "1", "Signature": "s", "SigningCertUrl": "u",
                "UnsubscribeUrl": "u", "MessageAttributes": {}}}]}))
    .unwrap();
    let err = parse_sns_event(&event).unwrap_err().to_string();
    assert!(
        err.starts_with("sns record 0: message is not an approval request: missing field"),
        "{err}"
    );
    tdb.drop_db().await;
}

#[tokio::test]
async fn a_failed_mail_fails_the_invocation_and_the_retry_mails_only_the_missed_voter() {
    let id = "run-1-c8c5-dev-retry-003";
    let (tdb, db, record) = awaiting(id, &["alice@example.com", "bob@example.com"], 1, 1).await;
    let fakes = Fakes::new(
        db.clone(),
        RecordingMailer::default(),
        cipher().await,
        live_ci_testkit::approval::RecordingFailures::default(),
    );
    let requester = ApprovalRequester::new(settings(), key(), fakes.clone());
    fakes
        .mailer
        .fail_for
        .lock()
        .unwrap()
        .push("alice@example.com".into());
    let request = request_for(&record, "token-retry");
    let err = requester.handle(&request, now()).await.unwrap_err();
    assert!(err.to_string().contains("mailing 1 of 2 voters"), "{err}");
    assert!(
        err.to_string()
            .contains("\"alice@example.com\": ses refused"),
        "{err}"
    );
    assert_eq!(fakes.mailer.sent().len(), 1);
    fakes.mailer.fail_for.lock().unwrap().clear();
    let report = requester.handle(&request, now()).await.unwrap();
    assert_eq!(report.mailed, ["alice@example.com"]);
    assert_eq!(report.already_mailed, ["bob@example.com"]);
    assert_eq!(fakes.mailer.sent().len(), 2);
    // A new task token (a new request) mails everyone again, with new links.
    let report = requester
        .handle(&request_for(&record, "token-retry-2"), now())
        .await
        .unwrap();
    assert_eq!(report.mailed, ["alice@example.com", "bob@example.com"]);
    assert_eq!(
        db.mailed_voters(
            id,
            &live_ci_core::approval::task_token_hash_hex("token-retry-2")
        )
        .await
        .unwrap(),
        ["alice@example.com", "bob@example.com"]
    );
    tdb.drop_db().await;
}

/// The task token never lands in the metadb: every column of every table is
/// searched for it (and for its base64, in case a ciphertext were only an
/// encoding) after a request is stored and mailed; the stored ciphertext
/// decrypts to it only for its own execution.
#[tokio::test]
async fn the_metadb_holds_no_plain_task_token() {
    use base64::Engine;
    use live_ci_core::port::TokenCipher;
    use live_ci_metadb::Sql;
    let id = "run-1-c8c5-dev-enc-006";
    let token = "AQCEAAAAKgAAAAMAAAAAAAAAAc-plain-task-token-006";
    let (tdb, db, record) = awaiting(id, &["alice@example.com"], 1, 1).await;
    let fakes = Fakes::new(
        db.clone(),
        RecordingMailer::default(),
        cipher().await,
        live_ci_testkit::approval::RecordingFailures::default(),
    );
    let requester = ApprovalRequester::new(settings(), key(), fakes.clone());
    requester
        .handle(&request_for(&record, token), now())
        .await
        .unwrap();
    let tables = db
        .sql()
        .query(
            "SELECT table_name::text FROM information_schema.tables \
             WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
            &[],
        )
        .await
        .unwrap();
    assert!(
        tables.iter().any(|t| t == "approval_requests"),
        "{tables:?}"
    );
    let encoded = base64::engine::general_purpose::STANDARD.encode(token);
    for table in &tables {
        for row in db
            .sql()
            .query(&format!("SELECT row_to_json(t)::text FROM {table} t"), &[])
            .await
            .unwrap()
        {
            assert!(
                !row.contains(token) && !row.contains(&encoded),
                "{table} holds the task token: {row}"
            );
        }
    }
    let stored = db.approval_request(id).await.unwrap().unwrap();
    assert_eq!(stored.task_token_hash, hash_hex(token));
    let ciphertext = stored.task_token_ciphertext.unwrap();
    assert_eq!(
        cipher().await.decrypt(&ciphertext, id).await.unwrap(),
        token
    );
    assert!(
        cipher()
            .await
            .decrypt(&ciphertext, "run-1-c8c5-dev-other-007")
            .await
            .is_err()
    );
    // The mail carries neither the token nor its ciphertext.
    let mail = &fakes.mailer.sent()[0];
    for part in [&mail.text, &mail.html] {
        assert!(!part.contains(token) && !part.contains(&ciphertext));
    }
    tdb.drop_db().await;
}

/// A token that cannot be encrypted (here: the key does not exist) fails the
/// invocation, naming the execution, before anything is stored or mailed:
/// there is no fallback to storing it in plain text.
#[tokio::test]
async fn a_token_that_cannot_be_encrypted_is_not_stored_and_nobody_is_mailed() {
    let id = "run-1-c8c5-dev-nokey-008";
    let (tdb, db, record) = awaiting(id, &["alice@example.com"], 1, 1).await;
    let fakes = Fakes::new(
        db.clone(),
        RecordingMailer::default(),
        live_ci_aws::KmsTokenCipher::new(kms_client(), "alias/live-ci-no-such-key"),
        live_ci_testkit::approval::RecordingFailures::default(),
    );
    let requester = ApprovalRequester::new(settings(), key(), fakes.clone());
    let err = requester
        .handle(&request_for(&record, "token-nokey"), now())
        .await
        .unwrap_err();
    assert!(matches!(err, RequestError::Encrypt { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains(&format!("{id:?}")) && !text.contains("token-nokey"),
        "{text}"
    );
    assert!(db.approval_request(id).await.unwrap().is_none());
    assert!(fakes.mailer.sent().is_empty());
    tdb.drop_db().await;
}

/// A value with a line break, a terminal escape or a bidi override (an
/// account name here; unit paths holding them are refused at discovery) stays
/// one inert line in every part: the subject gains no header, the text part
/// no line, the HTML part no markup.
#[test]
fn control_characters_in_values_cannot_add_headers_lines_or_markup() {
    let mut request = fixture();
    request.execution.account_name =
        "dev\r\nBcc: eve@example.com\n\u{1b}[2J<b>\u{202E}gpj.exe".into();
    let settings = settings();
    let ctx = live_ci_approval_request::MailContext {
        settings: &settings,
        request: &request,
        voter: "alice@example.com",
        approve_url: "https://abc.lambda-url.us-west-2.on.aws/?t=a",
        reject_url: "https://abc.lambda-url.us-west-2.on.aws/?t=r",
        expires_at: 1_800_000_000,
    };
    let (subject, text, html) = live_ci_approval_request::render_email(&ctx);
    let shown = "dev\\u{d}\\u{a}Bcc: eve@example.com\\u{a}\\u{1b}[2J<b>\\u{202e}gpj.exe";
    assert_eq!(
        subject,
        format!(
            "live-ci: approve apply of directory_dependency/dev-account/us-west-2/env-one/baz ({shown}) from PR #1?"
        )
    );
    assert!(text.contains(&format!("Account:  {shown}\n")), "{text}");
    assert!(
        html.contains(
            "dev\\u{d}\\u{a}Bcc: eve@example.com\\u{a}\\u{1b}[2J&lt;b&gt;\\u{202e}gpj.exe"
        ),
        "{html}"
    );
    for part in [&subject, &text, &html] {
        assert!(!part.contains(['\r', '\u{1b}', '\u{202E}']), "{part:?}");
        assert!(!part.contains("\nBcc:"), "{part:?}");
    }
}

/// The mail carries the plan's first resource changes inline, bounded, each
/// line inert in both parts (no markup, no extra line), and how many more the
/// page shows.
#[test]
fn the_first_resource_changes_are_inline_bounded_and_escaped() {
    let mut request = fixture();
    request.plan.first_changes = (0..12)
        .map(|i| format!("create aws_s3_bucket.b{i}"))
        .collect();
    request.plan.first_changes[0] =
        "create terraform_data.x[\"<script>alert('x')</script>\"]\nApprove: https://evil.example/"
            .into();
    request.plan.more_changes = 4990;
    let settings = settings();
    let ctx = live_ci_approval_request::MailContext {
        settings: &settings,
        request: &request,
        voter: "alice@example.com",
        approve_url: "https://abc.lambda-url.us-west-2.on.aws/?t=a",
        reject_url: "https://abc.lambda-url.us-west-2.on.aws/?t=r",
        expires_at: 1_800_000_000,
    };
    let (_, text, html) = live_ci_approval_request::render_email(&ctx);
    assert!(text.contains("Changes:\n  create terraform_data.x[\"<script>alert('x')</script>\"]\\u{a}Approve: https://evil.example/\n"), "{text}");
    assert!(text.contains("  create aws_s3_bucket.b9\n"), "{text}");
    // At most FIRST_CHANGES lines, then the count of the rest.
    assert!(!text.contains("aws_s3_bucket.b10"), "{text}");
    assert!(text.contains("... and 4990 more"), "{text}");
    assert!(!text.contains("\nApprove: https://evil"), "{text}");
    assert!(html.contains("<li><code>create terraform_data.x[&quot;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot;]\\u{a}Approve: https://evil.example/</code></li>"), "{html}");
    assert!(!html.contains("<script"), "{html}");
    assert!(!html.contains("aws_s3_bucket.b10"), "{html}");
    assert!(html.contains("… and 4990 more"), "{html}");
}

/// A voter SES refuses for good can never be mailed, so the approval state is
/// failed at once (SendTaskFailure with the delivered token) naming the voter,
/// SES's answer and the account; the other voters are still mailed, and the
/// invocation still reports the refusal.
#[tokio::test]
async fn a_voter_refused_for_good_fails_the_approval_at_once_naming_voter_answer_and_account() {
    let id = "run-1-c8c5-dev-refused-005";
    let (tdb, db, record) = awaiting(id, &["alice@example.com", "bob@example.com"], 1, 1).await;
    let fakes = Fakes::new(
        db.clone(),
        RecordingMailer::default(),
        cipher().await,
        RecordingFailures::default(),
    );
    let requester = ApprovalRequester::new(settings(), key(), fakes.clone());
    fakes
        .mailer
        .fail_for
        .lock()
        .unwrap()
        .push("alice@example.com".into());
    let mut request = request_for(&record, "token-refused");
    request.sfn_execution_arn =
        format!("arn:aws:states:eu-west-1:123456789012:execution:live-ci-deployment:{id}");
    let err = requester.handle(&request, now()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Permanent, "{err}");
    assert_eq!(fakes.mailer.sent().len(), 1, "bob is still mailed");
    let calls = fakes.tokens.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    let (token, error, cause) = &calls[0];
    assert_eq!(
        (token.as_str(), error.as_str()),
        ("token-refused", MAIL_REFUSED)
    );
    assert!(
        cause.starts_with("SES of account 123456789012 (eu-west-1) refused the approval mail for good: \"alice@example.com\": ses refused \"alice@example.com\"."),
        "{cause}"
    );
    assert!(!cause.contains("bob@example.com"), "{cause}");
    tdb.drop_db().await;
}

/// SES answering "try later" is no reason to fail the deployment: the
/// invocation fails retryable (Lambda's retry mails the voter) and the approval
/// state keeps waiting.
#[tokio::test]
async fn a_transient_mail_failure_leaves_the_approval_waiting_for_the_retry() {
    let id = "run-1-c8c5-dev-throttled-006";
    let (tdb, db, record) = awaiting(id, &["alice@example.com"], 1, 1).await;
    let fakes = Fakes::new(
        db.clone(),
        Throttled,
        cipher().await,
        RecordingFailures::default(),
    );
    let requester = ApprovalRequester::new(settings(), key(), fakes.clone());
    let err = requester
        .handle(&request_for(&record, "token-throttled"), now())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Retryable, "{err}");
    assert!(
        err.to_string().contains("TooManyRequestsException"),
        "{err}"
    );
    assert_eq!(fakes.tokens.calls(), []);
    tdb.drop_db().await;
}

/// A token the execution no longer waits for (an earlier delivery failed it,
/// or the execution ended) is no error of its own: the refusal stays the
/// invocation's error.
#[tokio::test]
async fn a_refusal_after_the_approval_ended_reports_only_the_refusal() {
    let id = "run-1-c8c5-dev-refused-007";
    let (tdb, db, record) = awaiting(id, &["alice@example.com"], 1, 1).await;
    let failures = RecordingFailures::default();
    *failures.answer.lock().unwrap() = Ok(TokenDelivery::Gone {
        reason: "TaskTimedOut: gone".into(),
    });
    let fakes = Fakes::new(
        db.clone(),
        RecordingMailer::default(),
        cipher().await,
        failures,
    );
    let requester = ApprovalRequester::new(settings(), key(), fakes.clone());
    fakes
        .mailer
        .fail_for
        .lock()
        .unwrap()
        .push("alice@example.com".into());
    let err = requester
        .handle(&request_for(&record, "token-gone"), now())
        .await
        .unwrap_err();
    assert!(matches!(err, RequestError::Mail { .. }), "{err}");
    assert_eq!(fakes.tokens.calls().len(), 1);
    tdb.drop_db().await;
}

/// SES v2's throttling answer, retryable.
struct Throttled;

#[derive(Debug, thiserror::Error)]
#[error("TooManyRequestsException: maximum sending rate exceeded")]
struct ThrottledError;

impl Classify for ThrottledError {
    fn kind(&self) -> ErrorKind {
        ErrorKind::Retryable
    }
}

impl Mailer for Throttled {
    type Error = ThrottledError;

    async fn send(&self, _: &Email) -> Result<String, ThrottledError> {
        Err(ThrottledError)
    }
}

/// "approval pending" is published once per request (the delivery that
/// stores it; a repeated SNS delivery publishes nothing), names the unit,
/// account, pull request and counts, and carries neither the task token nor
/// a vote link: not as the publisher builds it, not as SNS carries it, not in
/// any rendered format.
#[tokio::test]
async fn approval_pending_is_published_once_without_task_token_or_vote_link() {
    use live_ci_approval_request::approval_pending;
    use live_ci_core::notification::{Counts, Event, Format, PullRequest, render};
    use live_ci_testkit::notify::RecordingNotifications;

    let id = "run-1-c8c5-dev-notify-009";
    let (tdb, db, record) = awaiting(id, &["alice@example.com"], 1, 1).await;
    let fakes = Fakes::new(
        db.clone(),
        RecordingMailer::default(),
        cipher().await,
        RecordingFailures::default(),
    )
    .notifying(RecordingNotifications::default());
    let requester = ApprovalRequester::new(settings(), key(), fakes.clone());
    let task_token = "AQCEAAAAKgAAAAMAAAAAAAAAAnotify-task-token-of-the-waiting-state";
    let request = request_for(&record, task_token);
    let report = requester.handle(&request, now()).await.unwrap();
    assert!(report.announced && report.warnings.is_empty(), "{report:?}");
    let again = requester.handle(&request, now() + 60).await.unwrap();
    assert!(!again.announced, "{again:?}");
    let published = fakes.notifications.published();
    assert_eq!(published.len(), 1, "{published:?}");
    assert_eq!(
        published[0],
        Event::ApprovalPending {
            repository: "acme/infrastructure-live".into(),
            run_id: record.run_id.to_string(),
            unit: record.cfg_path.as_str().to_string(),
            account: record.account_name.clone(),
            pull_request: Some(PullRequest {
                number: record.pr_id,
                url: format!(
                    "https://github.com/acme/infrastructure-live/pull/{}",
                    record.pr_id
                ),
            }),
            counts: Counts {
                add: 2,
                change: 1,
                destroy: 0
            },
            page_url: None,
        }
    );
    let mail = &fakes.mailer.sent()[0];
    let vote_tokens = [
        token_of(&text_link(mail, "Approve")),
        token_of(&text_link(mail, "Reject")),
    ];
    let raw = approval_pending(&settings(), &request, Some(record.run_id));
    let mut bodies = vec![
        serde_json::to_string(&raw).unwrap(),
        // What SnsNotifications publishes.
        serde_json::to_string(&published[0]).unwrap(),
    ];
    for format in [Format::Slack, Format::Teams, Format::Json] {
        bodies.push(render(&published[0], format).to_string());
    }
    for body in &bodies {
        assert!(!body.contains(task_token), "task token in {body}");
        assert!(!body.contains("notify-task-token"), "task token in {body}");
        for vote in &vote_tokens {
            assert!(!body.contains(vote.as_str()), "vote link in {body}");
        }
        assert!(!body.contains("?t="), "vote link in {body}");
        assert!(!body.contains("abc.lambda-url"), "approval url in {body}");
    }
    tdb.drop_db().await;
}

/// Notifications are advisory: a publish that fails is a warning in the
/// report, the voters are mailed and the request is handled.
#[tokio::test]
async fn a_failed_publish_is_a_warning_and_the_voters_are_mailed() {
    use live_ci_testkit::notify::RecordingNotifications;

    let id = "run-1-c8c5-dev-notify-010";
    let (tdb, db, record) = awaiting(id, &["alice@example.com"], 1, 1).await;
    let notifications = RecordingNotifications::default();
    *notifications.fail.lock().unwrap() = Some("sns throttled".into());
    let fakes = Fakes::new(
        db.clone(),
        RecordingMailer::default(),
        cipher().await,
        RecordingFailures::default(),
    )
    .notifying(notifications);
    let requester = ApprovalRequester::new(settings(), key(), fakes.clone());
    let report = requester
        .handle(&request_for(&record, "token-notify-fails"), now())
        .await
        .unwrap();
    assert_eq!(report.mailed, ["alice@example.com"]);
    assert_eq!(
        report.warnings,
        ["notification approval_pending: notifications: sns throttled"]
    );
    tdb.drop_db().await;
}
