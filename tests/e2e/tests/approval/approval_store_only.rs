//! approval_response needs the approval store port and no other metadb port:
//! driven by the real metadb behind testkit's `ApprovalsOnly`, which exposes
//! `ApprovalStore` only, two voters' links (mailed by approval_request through
//! the same store) reach one decision, and its task token is handed over once.
//! Widening `ApprovalResponder`'s bound to another metadb port (an
//! `ExecutionStore` for the execution, say) stops this test compiling.
#![allow(clippy::unwrap_used)]

use crate::requester_fakes::Fakes as RequesterFakes;
use live_ci_approval_request::{ApprovalRequester, RequestSettings};
use live_ci_approval_response::{PageRequest, PageResponse};
use live_ci_core::deploy::Vote;
use live_ci_core::port::{ApprovalStore, Email, ExecutionStore, TokenDelivery};
use live_ci_testkit::approval::{
    ApprovalsOnly, RecordingMailer, RecordingTokens, awaiting, cipher, key, now, request_for,
    text_link, token_of,
};

fn post(mails: &[Email], voter: &str, label: &str) -> PageRequest {
    let mail = mails.iter().find(|m| m.to == voter).unwrap();
    PageRequest {
        method: "POST".into(),
        query: String::new(),
        headers: [(
            "content-type".to_string(),
            "application/x-www-form-urlencoded".to_string(),
        )]
        .into(),
        body: format!("t={}", token_of(&text_link(mail, label))).into_bytes(),
    }
}

fn now_ms() -> i64 {
    i64::try_from(now()).unwrap() * 1000
}

fn assert_page(resp: &PageResponse, status: u16, text: &str) {
    assert_eq!(resp.status, status, "{}", resp.body);
    assert!(resp.body.contains(text), "{text:?} not in {}", resp.body);
}

#[tokio::test]
async fn votes_reach_one_decision_through_the_approval_store_alone() {
    let id = "run-1-c8c5-dev-narrow-001";
    let voters = ["alice@example.com", "bob@example.com"];
    let (tdb, db, record) = awaiting(id, &voters, 2, 2).await;
    let store = ApprovalsOnly(db.clone());
    let fakes = RequesterFakes::new(
        store.clone(),
        RecordingMailer::default(),
        cipher().await,
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
        .handle(&request_for(&record, "token-narrow"), now())
        .await
        .unwrap();
    let mails = fakes.mailer.sent();
    assert_eq!(mails.len(), 2);
    let r = crate::ports::responder(
        key(),
        store.clone(),
        RecordingTokens::default(),
        cipher().await,
    );

    let resp = r
        .handle(&post(&mails, "alice@example.com", "Approve"), now_ms())
        .await;
    assert_page(
        &resp,
        200,
        "Approvals: 1 of 2 needed. Rejections: 0 of 2 needed.",
    );
    assert!(r.tokens.calls().is_empty());
    assert_eq!(db.execution(id).await.unwrap().unwrap().decision, None);

    // Bob's approval reaches the threshold: decided and sent, once.
    let resp = r
        .handle(&post(&mails, "bob@example.com", "Approve"), now_ms())
        .await;
    assert_page(
        &resp,
        200,
        "The votes decided: approve. The deployment goes on to Apply.",
    );
    let calls = r.tokens.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0, "token-narrow", "the decrypted task token");
    assert_eq!(
        db.execution(id).await.unwrap().unwrap().decision,
        Some(Vote::Approve)
    );
    let approval = store.approval_request(id).await.unwrap().unwrap();
    assert_eq!(approval.delivery, Some(TokenDelivery::Delivered));

    // A vote after the decision changes nothing and sends nothing.
    let resp = r
        .handle(&post(&mails, "alice@example.com", "Reject"), now_ms())
        .await;
    assert_page(&resp, 410, "The votes decided: approve");
    assert_eq!(r.tokens.calls().len(), 1);
    let tally = store.tally(id).await.unwrap().unwrap();
    assert_eq!(tally.approval_voters, voters);
    assert!(tally.rejection_voters.is_empty());
    tdb.drop_db().await;
}
