//! The responder tests' requests and page checks: a vote link opened (GET)
//! and posted as the page's form does (POST), the time, a page's status and
//! headers, and a responder on a metadb with recording task tokens. Also
//! included (`#[path]`) by live-ci-e2e's approval tests, which mail the links
//! through the real requester.
#![allow(dead_code)] // each including test crate uses its part
#![allow(clippy::unwrap_used)]

use live_ci_approval_response::{PageRequest, PageResponse};
use live_ci_metadb::PgMetadb;
use live_ci_testkit::approval::{RecordingTokens, cipher, key, now};

/// A vote link opened: `GET /?t=<token>`.
pub(crate) fn get(token: &str) -> PageRequest {
    PageRequest {
        method: "GET".into(),
        query: format!("t={token}"),
        ..Default::default()
    }
}

/// The confirmation page's form posted with `token`.
pub(crate) fn post(token: &str) -> PageRequest {
    PageRequest {
        method: "POST".into(),
        query: String::new(),
        headers: [(
            "content-type".to_string(),
            "application/x-www-form-urlencoded".to_string(),
        )]
        .into(),
        body: format!("t={token}").into_bytes(),
    }
}

/// Now, in Unix milliseconds (the handler's clock).
pub(crate) fn now_ms() -> i64 {
    i64::try_from(now()).unwrap() * 1000
}

/// `resp` has `status`, holds `text`, and is an uncached HTML page.
pub(crate) fn assert_page(resp: &PageResponse, status: u16, text: &str) {
    assert_eq!(resp.status, status, "{}", resp.body);
    assert!(resp.body.contains(text), "{text:?} not in {}", resp.body);
    assert_eq!(
        resp.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(resp.header("cache-control"), Some("no-store, max-age=0"));
}

/// A responder on `db`, recording the decisions it sends.
pub(crate) async fn responder(db: &PgMetadb) -> crate::ports::Wired<PgMetadb, RecordingTokens> {
    crate::ports::responder(
        key(),
        db.clone(),
        RecordingTokens::default(),
        cipher().await,
    )
}
