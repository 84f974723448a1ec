//! What the approval path costs in metadb round trips: approval_request and
//! approval_response over the real PostgreSQL metadb through a connection
//! that logs every call (each statement and each BEGIN/COMMIT is one RDS Data
//! API call in AWS). The counts are exact and asserted, so a change that adds
//! a round trip to a vote's path fails here. The calls a deciding POST makes
//! before SendTaskSuccess are counted apart: they are the unit's latency.

#![allow(clippy::unwrap_used)]

use crate::requester_fakes::Fakes as RequesterFakes;
use std::sync::Mutex;

use live_ci_approval_request::{ApprovalRequester, RequestSettings};
use live_ci_approval_response::{PageRequest, PageResponse};
use live_ci_core::port::{TaskTokens, TokenDelivery};
use live_ci_metadb::{PgSql, Store};
use live_ci_testkit::approval::{
    FakeError, RecordingMailer, RecordingTokens, awaiting, cipher, key, now, request_for,
    text_link, token_of,
};
use live_ci_testkit::round_trips::Counting;

/// Step Functions' task tokens that note the metadb calls made before each
/// SendTaskSuccess (taking them from the log, so what remains is what follows).
#[derive(Debug)]
struct TokensAfterCalls {
    sql: Counting<PgSql>,
    inner: RecordingTokens,
    before_send: Mutex<Vec<Vec<String>>>,
}

impl TaskTokens for TokensAfterCalls {
    type Error = FakeError;

    async fn send_success(&self, token: &str, output: &str) -> Result<TokenDelivery, FakeError> {
        self.before_send.lock().unwrap().push(self.sql.take());
        self.inner.send_success(token, output).await
    }

    async fn send_failure(&self, t: &str, e: &str, c: &str) -> Result<TokenDelivery, FakeError> {
        self.inner.send_failure(t, e, c).await
    }

    async fn heartbeat(&self, t: &str) -> Result<TokenDelivery, FakeError> {
        self.inner.heartbeat(t).await
    }
}

type Responder = crate::ports::Wired<Store<Counting<PgSql>>, TokensAfterCalls>;

fn settings() -> RequestSettings {
    RequestSettings {
        approval_url: "https://approve.example.com".into(),
        from_address: "live-ci@example.com".into(),
        approval_timeout_secs: 3600,
        repository: "acme/live".into(),
        github_web_url: "https://github.com".into(),
    }
}

fn now_ms() -> i64 {
    i64::try_from(now()).unwrap() * 1000
}

fn request(method: &str, token: &str) -> PageRequest {
    if method == "GET" {
        return PageRequest {
            method: "GET".into(),
            query: format!("t={token}"),
            ..Default::default()
        };
    }
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

/// One execution awaiting approval of `voters` (`min_approval_count` of them
/// approve), mailed through a counting store; returns the responder on
/// another counting store, the approve links by voter, and the requester's
/// calls.
async fn mailed(
    id: &str,
    voters: &[&str],
    min_approval_count: u32,
) -> (
    live_ci_testkit::pg::TestDb,
    Responder,
    Counting<PgSql>,
    Vec<String>,
    Vec<String>,
) {
    let (tdb, db, record) = awaiting(id, voters, min_approval_count, 2).await;
    drop(db);
    let sql = Counting::new(PgSql::connect(&tdb.url, 4).unwrap());
    let fakes = RequesterFakes::new(
        Store::new(sql.clone()),
        RecordingMailer::default(),
        cipher().await,
        live_ci_testkit::approval::RecordingFailures::default(),
    );
    let requester = ApprovalRequester::new(settings(), key(), fakes.clone());
    sql.take();
    requester
        .handle(&request_for(&record, &format!("token-{id}")), now())
        .await
        .unwrap();
    let request_calls = sql.take();
    let mails = fakes.mailer.sent();
    let links = voters
        .iter()
        .map(|v| {
            let mail = mails.iter().find(|m| m.to == *v).unwrap();
            token_of(&text_link(mail, "Approve"))
        })
        .collect();
    let responder = crate::ports::responder(
        key(),
        Store::new(sql.clone()),
        TokensAfterCalls {
            sql: sql.clone(),
            inner: RecordingTokens::default(),
            before_send: Mutex::default(),
        },
        cipher().await,
    );
    (tdb, responder, sql, links, request_calls)
}

async fn counted(
    r: &Responder,
    sql: &Counting<PgSql>,
    req: &PageRequest,
) -> (PageResponse, Vec<String>) {
    sql.take();
    let resp = r.handle(req, now_ms()).await;
    (resp, sql.take())
}

/// approval_request is one call before the first mail (store, expiry and who
/// was mailed) and one after the last (every mail recorded). A GET is one read (execution, request and tally); a POST one call
/// (`live_ci_vote`: check, vote, decide, tally, claim) and, when it sent the
/// decision, the record of the delivery after SendTaskSuccess. Before issue
/// 17's approval functions (this test at da8fe1f): approval_request with two
/// voters 5 calls (store, read back, mailed voters, one record per mail); a
/// GET 3; a POST that does not decide 7; a POST that decides 8 before
/// SendTaskSuccess and 9 in all.
#[tokio::test]
async fn the_approval_path_costs_a_bounded_number_of_round_trips() {
    let voters = ["alice@example.com", "bob@example.com"];
    let (tdb, r, sql, links, request_calls) = mailed("run-1-c8c5-dev-rt-001", &voters, 2).await;
    println!("approval_request, two voters: {request_calls:?}");

    let (resp, get_calls) = counted(&r, &sql, &request("GET", &links[0])).await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    println!("GET: {get_calls:?}");

    // The threshold is two: the first approval decides nothing.
    let (resp, undecided) = counted(&r, &sql, &request("POST", &links[0])).await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert!(resp.body.contains("No decision yet"), "{}", resp.body);
    assert!(r.tokens.before_send.lock().unwrap().is_empty());
    println!("POST, no decision: {undecided:?}");

    // The second decides and hands the token over.
    let (resp, after_send) = counted(&r, &sql, &request("POST", &links[1])).await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert!(
        resp.body.contains("The votes decided: approve"),
        "{}",
        resp.body
    );
    let before_send = r.tokens.before_send.lock().unwrap().clone();
    assert_eq!(before_send.len(), 1, "one SendTaskSuccess");
    assert_eq!(r.tokens.inner.calls().len(), 1);
    let before_send = &before_send[0];
    println!("POST, decides: before SendTaskSuccess {before_send:?}, after {after_send:?}");

    assert_eq!(request_calls.len(), 2, "{request_calls:?}");
    assert_eq!(get_calls.len(), 1, "{get_calls:?}");
    assert_eq!(undecided.len(), 1, "{undecided:?}");
    assert_eq!(before_send.len(), 1, "{before_send:?}");
    assert_eq!(after_send.len(), 1, "{after_send:?}");
    tdb.drop_db().await;
}
