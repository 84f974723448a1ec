//! The approval_response handler on its own, without a mailed link: the
//! Function URL event's decoding, and a failed port's page. The tests that
//! vote through the links the real approval_request handler mails are
//! live-ci-e2e's (`tests/e2e/tests/approval/responder.rs`): Lambdas do not
//! dev-depend on each other.
#![allow(clippy::unwrap_used)]

use live_ci_approval_response::{PageResponse, from_function_url};
use live_ci_core::approval::VoteLink;
use live_ci_core::deploy::Vote;
use live_ci_metadb::PgMetadb;
use live_ci_testkit::approval::{hash, key, now, pg};
use serde_json::json;

use crate::pages::{assert_page, get, now_ms, post, responder};

#[tokio::test]
async fn function_url_events_decode_base64_form_bodies() {
    let event: aws_lambda_events::event::lambda_function_urls::LambdaFunctionUrlRequest =
        serde_json::from_value(json!({
            "version": "2.0",
            "rawPath": "/",
            "rawQueryString": "t=abc",
            "headers": {"content-type": "application/x-www-form-urlencoded", "host": "x.lambda-url.us-west-2.on.aws"},
            "requestContext": {"http": {"method": "POST", "path": "/", "protocol": "HTTP/1.1", "sourceIp": "192.0.2.1", "userAgent": "test"}, "timeEpoch": 0},
            "body": "dD1kZWYlMkIlMkY=",
            "isBase64Encoded": true
        }))
        .unwrap();
    let req = from_function_url(&event);
    assert_eq!(req.method, "POST");
    assert_eq!(req.form_field("t").as_deref(), Some("def+/"));
    assert_eq!(req.query_param("t").as_deref(), Some("abc"));
    assert_eq!(
        req.header("Content-Type"),
        Some("application/x-www-form-urlencoded")
    );
    let resp = live_ci_approval_response::to_function_url(&PageResponse {
        status: 410,
        headers: vec![("content-type", "text/html; charset=utf-8".into())],
        body: "<p>x</p>".into(),
    });
    assert_eq!(resp.status_code, 410);
    assert_eq!(resp.headers["content-type"], "text/html; charset=utf-8");
}

/// A failed port is answered by its kind, by one mapping for every call: a
/// metadb that cannot be reached (retrying may help) is a 503, one that
/// refuses the request (no such database: the same call fails again) a 502.
/// The page names the port and holds neither the token nor the error text.
#[tokio::test]
async fn a_failed_port_is_a_503_when_retryable_and_a_502_when_not() {
    let token = key()
        .sign(&VoteLink {
            execution_id: "run-1-c8c5-dev-port-001".into(),
            voter: "alice@example.com".into(),
            vote: Vote::Approve,
            task_token_hash: hash("token-port"),
            expires_at: now() + 600,
        })
        .unwrap();
    // Nothing listens on port 1: the connection is refused.
    let unreachable = PgMetadb::connect("postgresql://live_ci@127.0.0.1:1/live_ci", 1).unwrap();
    let missing = PgMetadb::connect(
        &live_ci_metadb::with_database(&pg::server_url(), "live_ci_no_such_database"),
        1,
    )
    .unwrap();
    for (db, status, text) in [
        (unreachable, 503, "The metadb could not be reached"),
        (missing, 502, "The metadb refused the request"),
    ] {
        let r = responder(&db).await;
        for req in [get(&token), post(&token)] {
            let resp = r.handle(&req, now_ms()).await;
            assert_page(&resp, status, text);
            assert!(!resp.body.contains(&token), "{}", resp.body);
            assert!(!resp.body.contains("live_ci_no_such_database"));
        }
        assert!(r.tokens.calls().is_empty());
    }
}
