//! Votes of one execution at the same moment, against the real PostgreSQL
//! metadb: the store's one-call vote (`live_ci_vote`) must still count every
//! vote once, reach the decision once and hand it to Step Functions once.
//! Each round starts every voter's POST together, on connections of their own.
#![allow(clippy::unwrap_used)]

use crate::requester_fakes::Fakes as RequesterFakes;
use std::sync::Arc;

use live_ci_approval_request::{ApprovalRequester, RequestSettings};
use live_ci_approval_response::PageRequest;
use live_ci_core::deploy::Vote;
use live_ci_core::port::{ApprovalStore, Email, TokenDelivery};
use live_ci_testkit::approval::{
    RecordingMailer, RecordingTokens, awaiting, cipher, key, now, request_for, text_link, token_of,
};

const ROUNDS: usize = 6;

async fn mails(
    db: &live_ci_metadb::PgMetadb,
    record: &live_ci_core::deploy::ExecutionRecord,
) -> Vec<Email> {
    let fakes = RequesterFakes::new(
        db.clone(),
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
        .handle(&request_for(record, "token-race"), now())
        .await
        .unwrap();
    fakes.mailer.sent()
}

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

/// Every voter of a fresh execution approves at once; returns the statuses,
/// the sends and the tally afterwards.
async fn race(
    round: usize,
    voters: &[&str],
    min_approval_count: u32,
) -> (
    Vec<u16>,
    usize,
    live_ci_core::deploy::Tally,
    Option<TokenDelivery>,
) {
    let id = format!("run-1-c8c5-dev-race-{round:03}");
    let (tdb, db, record) = awaiting(&id, voters, min_approval_count, 1).await;
    let mails = mails(&db, &record).await;
    let r = Arc::new(crate::ports::responder(
        key(),
        db.clone(),
        RecordingTokens {
            // Holds the hand-over open while the other voters' POSTs run.
            delay_ms: 30,
            ..Default::default()
        },
        cipher().await,
    ));
    // Opens a connection per voter first: a POST that waits for a new
    // connection (a TLS handshake) would come after the others instead of
    // with them.
    let (a, b, c) = tokio::join!(db.vote_view(&id), db.vote_view(&id), db.vote_view(&id));
    assert!(a.unwrap().is_some() && b.unwrap().is_some() && c.unwrap().is_some());
    let now_ms = i64::try_from(now()).unwrap() * 1000;
    let tasks: Vec<_> = voters
        .iter()
        .map(|voter| {
            let r = Arc::clone(&r);
            let req = post(&mails, voter, "Approve");
            tokio::spawn(async move { r.handle(&req, now_ms).await })
        })
        .collect();
    let mut statuses = Vec::new();
    for t in tasks {
        let resp = t.await.unwrap();
        assert!(
            resp.status == 200 || resp.status == 410,
            "{}: {}",
            resp.status,
            resp.body
        );
        statuses.push(resp.status);
    }
    let tally = db.tally(&id).await.unwrap().unwrap();
    let delivery = db.approval_request(&id).await.unwrap().unwrap().delivery;
    let sends = r.tokens.calls().len();
    tdb.drop_db().await;
    (statuses, sends, tally, delivery)
}

/// Two voters, two approvals needed, both POST at once: both votes count, the
/// decision is reached once and sent once. Without the execution's row lock
/// in `live_ci_vote` the two transactions each count only their own vote (no
/// decision) or deadlock on the decide.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_voters_deciding_at_once_send_the_decision_once_and_both_votes_count() {
    let voters = ["alice@example.com", "bob@example.com"];
    for round in 0..ROUNDS {
        let (statuses, sends, tally, delivery) = race(round, &voters, 2).await;
        assert_eq!(statuses, [200, 200], "round {round}");
        assert_eq!(sends, 1, "round {round}: {statuses:?}");
        assert_eq!(tally.approval_voters, voters, "round {round}");
        assert_eq!(tally.decision, Some(Vote::Approve), "round {round}");
        assert_eq!(delivery, Some(TokenDelivery::Delivered), "round {round}");
    }
}

/// Three voters, one approval needed, all POST at once: one vote decides and
/// is sent; the others come after the decision, are not counted (410) and
/// send nothing. Without the hand-over claim in `live_ci_vote` each of them
/// would send the decided token again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn votes_after_a_decision_at_the_same_moment_send_nothing_more() {
    let voters = ["alice@example.com", "bob@example.com", "carol@example.com"];
    for round in 0..ROUNDS {
        let (mut statuses, sends, tally, delivery) = race(100 + round, &voters, 1).await;
        statuses.sort_unstable();
        assert_eq!(statuses, [200, 410, 410], "round {round}");
        assert_eq!(sends, 1, "round {round}");
        assert_eq!(tally.approval_voters.len(), 1, "round {round}: {tally:?}");
        assert_eq!(delivery, Some(TokenDelivery::Delivered), "round {round}");
    }
}
