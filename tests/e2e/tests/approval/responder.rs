//! The approval_response handler against a real PostgreSQL metadb, with the
//! approval_request handler producing the real links: every refusal path,
//! vote changes, the decision sent once under concurrency, and a dead task
//! token reported on the page. Moved here from approval-response's tests
//! (they need both Lambdas; Lambdas do not dev-depend on each other).
#![allow(clippy::unwrap_used)]

use crate::requester_fakes::Fakes as RequesterFakes;
use live_ci_testkit::approval as support;

use std::sync::Arc;

use live_ci_approval_request::{ApprovalRequester, RequestSettings};
use live_ci_approval_response::PageRequest;
use live_ci_core::approval::VoteLink;
use live_ci_core::deploy::{Outcome, Vote};
use live_ci_core::port::{ApprovalStore, Email, ExecutionStore, TokenDelivery};
use live_ci_metadb::{PgMetadb, Sql};
use serde_json::{Value, json};
use support::*;

use crate::pages::{assert_page, get, now_ms, post, responder};

fn settings() -> RequestSettings {
    RequestSettings {
        approval_url: "https://approve.example.com".into(),
        from_address: "live-ci@example.com".into(),
        approval_timeout_secs: 3600,
        repository: "acme/live".into(),
        github_web_url: "https://github.com".into(),
    }
}

/// Mails the voters of `record` and returns the mails.
async fn mail(
    db: &PgMetadb,
    record: &live_ci_core::deploy::ExecutionRecord,
    task_token: &str,
) -> Vec<Email> {
    let fakes = RequesterFakes::new(
        db.clone(),
        RecordingMailer::default(),
        cipher().await,
        live_ci_testkit::approval::RecordingFailures::default(),
    );
    let requester = ApprovalRequester::new(settings(), key(), fakes.clone());
    requester
        .handle(&request_for(record, task_token), now())
        .await
        .unwrap();
    fakes.mailer.sent()
}

fn link(mails: &[Email], voter: &str, label: &str) -> String {
    let mail = mails.iter().find(|m| m.to == voter).unwrap();
    token_of(&text_link(mail, label))
}

#[tokio::test]
async fn an_outputs_only_plan_reads_as_outputs_change_on_the_page_as_in_the_mail() {
    let (_tdb, db, record) = awaiting("run-1-c8c5-dev-out-001", &["alice@example.com"], 1, 1).await;
    let mut request = request_for(&record, "token-outputs");
    request.plan.to_add = 0;
    request.plan.to_change = 0;
    request.plan.outputs_changed = vec!["vpc_id".into(), "zone".into()];
    let fakes = RequesterFakes::new(
        db.clone(),
        RecordingMailer::default(),
        cipher().await,
        live_ci_testkit::approval::RecordingFailures::default(),
    );
    let requester = ApprovalRequester::new(settings(), key(), fakes.clone());
    requester.handle(&request, now()).await.unwrap();
    let mails = fakes.mailer.sent();
    let approve = link(&mails, "alice@example.com", "Approve");
    let resp = responder(&db).await.handle(&get(&approve), now_ms()).await;
    assert_page(
        &resp,
        200,
        "<th>Plan</th><td>outputs change: vpc_id, zone</td>",
    );
    assert!(!resp.body.contains("0 to add"), "{}", resp.body);
    assert!(mails[0].text.contains("outputs change: vpc_id, zone"));
}

#[tokio::test]
async fn get_shows_a_confirmation_page_and_changes_nothing() {
    let (tdb, db, record) = awaiting(
        "run-1-c8c5-dev-get-001",
        &["alice@example.com", "bob@example.com"],
        1,
        1,
    )
    .await;
    let mails = mail(&db, &record, "token-get").await;
    let r = responder(&db).await;
    let approve = link(&mails, "alice@example.com", "Approve");
    for _ in 0..3 {
        // A mail scanner prefetching the link, three times.
        let resp = r.handle(&get(&approve), now_ms()).await;
        assert_page(
            &resp,
            200,
            "<button type=\"submit\" id=\"vote\" class=\"approve\">Approve</button>",
        );
        assert!(resp.body.contains("2 to add, 1 to change, 0 to destroy"));
        assert!(resp.body.contains("Approvals: 0 of 1 needed"));
        assert!(resp.body.contains("until a decision is reached"));
        assert!(
            resp.body
                .contains(&format!("name=\"t\" value=\"{approve}\""))
        );
    }
    let head = r
        .handle(
            &PageRequest {
                method: "HEAD".into(),
                ..get(&approve)
            },
            now_ms(),
        )
        .await;
    assert_eq!((head.status, head.body.as_str()), (200, ""));
    let tally = db.tally(&record.execution_id).await.unwrap().unwrap();
    assert!(tally.approval_voters.is_empty() && tally.decision.is_none());
    assert!(r.tokens.calls().is_empty());
    tdb.drop_db().await;
}

#[tokio::test]
async fn bad_expired_and_foreign_links_are_403_and_change_nothing() {
    let id = "run-1-c8c5-dev-sig-002";
    let (tdb, db, record) = awaiting(id, &["alice@example.com", "bob@example.com"], 1, 1).await;
    let mails = mail(&db, &record, "token-sig").await;
    let r = responder(&db).await;
    let approve = link(&mails, "alice@example.com", "Approve");
    // Tampered: one character changed.
    let mut bad = approve.clone().into_bytes();
    bad[10] = if bad[10] == b'A' { b'B' } else { b'A' };
    let bad = String::from_utf8(bad).unwrap();
    for req in [get(&bad), post(&bad)] {
        assert_page(&r.handle(&req, now_ms()).await, 403, "not valid");
    }
    assert_page(
        &r.handle(&post("garbage!"), now_ms()).await,
        403,
        "not valid",
    );
    // Signed with another key.
    let other =
        live_ci_core::approval::LinkKey::new(b"another-key-of-at-least-32-bytes!!").unwrap();
    let foreign = other
        .sign(&VoteLink {
            execution_id: id.into(),
            voter: "alice@example.com".into(),
            vote: Vote::Approve,
            task_token_hash: hash("token-sig"),
            expires_at: now() + 600,
        })
        .unwrap();
    assert_page(&r.handle(&post(&foreign), now_ms()).await, 403, "not valid");
    // Expired: the same link after the approval timeout (3600 s).
    let later = now_ms() + 3_601_000;
    assert_page(&r.handle(&get(&approve), later).await, 403, "expired");
    assert_page(&r.handle(&post(&approve), later).await, 403, "expired");
    // Validly signed, but not one of the execution's voters.
    let mallory = key()
        .sign(&VoteLink {
            execution_id: id.into(),
            voter: "mallory@example.com".into(),
            vote: Vote::Approve,
            task_token_hash: hash("token-sig"),
            expires_at: now() + 600,
        })
        .unwrap();
    assert_page(
        &r.handle(&get(&mallory), now_ms()).await,
        403,
        "is not one of the voters",
    );
    assert_page(
        &r.handle(&post(&mallory), now_ms()).await,
        403,
        "is not one of the voters",
    );
    // No token, wrong method, wrong body type.
    assert_page(
        &r.handle(&get(""), now_ms()).await,
        400,
        "parameter t is missing",
    );
    let put = r
        .handle(
            &PageRequest {
                method: "PUT".into(),
                ..post(&approve)
            },
            now_ms(),
        )
        .await;
    assert_eq!(put.status, 405);
    assert_eq!(put.header("allow"), Some("GET, HEAD, POST"));
    let mut json_post = post(&approve);
    json_post
        .headers
        .insert("content-type".into(), "application/json".into());
    assert_eq!(r.handle(&json_post, now_ms()).await.status, 415);
    let tally = db.tally(id).await.unwrap().unwrap();
    assert!(tally.approval_voters.is_empty() && tally.rejection_voters.is_empty());
    assert!(r.tokens.calls().is_empty());
    tdb.drop_db().await;
}

#[tokio::test]
async fn a_voter_may_change_their_vote_until_the_decision_which_is_sent_once() {
    let id = "run-1-c8c5-dev-chg-003";
    let voters = ["alice@example.com", "bob@example.com", "carol@example.com"];
    let (tdb, db, record) = awaiting(id, &voters, 2, 2).await;
    let mails = mail(&db, &record, "token-chg").await;
    let r = responder(&db).await;
    let resp = r
        .handle(
            &post(&link(&mails, "alice@example.com", "Approve")),
            now_ms(),
        )
        .await;
    assert_page(&resp, 200, "Vote recorded: approve");
    assert!(
        resp.body
            .contains("Approvals: 1 of 2 needed. Rejections: 0 of 2 needed.")
    );
    assert!(resp.body.contains("you may change your vote"));
    // Alice changes her mind: still one vote.
    let resp = r
        .handle(
            &post(&link(&mails, "alice@example.com", "Reject")),
            now_ms(),
        )
        .await;
    assert_page(
        &resp,
        200,
        "Approvals: 0 of 2 needed. Rejections: 1 of 2 needed.",
    );
    assert!(
        resp.body
            .contains("Your current vote (alice@example.com): <b>reject</b>")
    );
    // Repeating a vote changes nothing.
    r.handle(
        &post(&link(&mails, "alice@example.com", "Reject")),
        now_ms(),
    )
    .await;
    let resp = r
        .handle(&post(&link(&mails, "bob@example.com", "Approve")), now_ms())
        .await;
    assert_page(
        &resp,
        200,
        "Approvals: 1 of 2 needed. Rejections: 1 of 2 needed.",
    );
    assert!(r.tokens.calls().is_empty());
    // Carol's approval reaches the threshold (>=, not ==): sent once, exactly.
    let resp = r
        .handle(
            &post(&link(&mails, "carol@example.com", "Approve")),
            now_ms(),
        )
        .await;
    assert_page(
        &resp,
        200,
        "The votes decided: approve. The deployment goes on to Apply.",
    );
    let calls = r.tokens.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0, "token-chg");
    let payload: Value = serde_json::from_str(&calls[0].1).unwrap();
    assert_eq!(
        payload,
        json!({"decision": "approve",
               "approval_voters": ["bob@example.com", "carol@example.com"],
               "rejection_voters": ["alice@example.com"]})
    );
    let decided: live_ci_stepfunctions::ApprovalDecision =
        serde_json::from_str(&calls[0].1).unwrap();
    assert_eq!(decided.decision, live_ci_stepfunctions::Decision::Approve);
    let approval = db.approval_request(id).await.unwrap().unwrap();
    assert_eq!(approval.delivery, Some(TokenDelivery::Delivered));
    assert!(approval.decision_sent_at.is_some());
    // After the decision: 410 for every link, votes closed, nothing re-sent.
    for (voter, label) in [
        ("alice@example.com", "Approve"),
        ("bob@example.com", "Reject"),
    ] {
        let l = link(&mails, voter, label);
        assert_page(
            &r.handle(&post(&l), now_ms()).await,
            410,
            "The votes decided: approve",
        );
        assert_page(
            &r.handle(&get(&l), now_ms()).await,
            410,
            "The votes decided: approve",
        );
    }
    assert_eq!(r.tokens.calls().len(), 1);
    let tally = db.tally(id).await.unwrap().unwrap();
    assert_eq!(tally.rejection_voters, ["alice@example.com"]);
    tdb.drop_db().await;
}

#[tokio::test]
async fn an_execution_no_longer_running_or_a_superseded_link_is_410() {
    let id = "run-1-c8c5-dev-end-004";
    let (tdb, db, record) = awaiting(id, &["alice@example.com"], 1, 1).await;
    let old = mail(&db, &record, "token-old").await;
    // A new request (new task token) replaces the old one: old links are dead.
    let new = mail(&db, &record, "token-new").await;
    let r = responder(&db).await;
    let old_link = link(&old, "alice@example.com", "Approve");
    assert_page(
        &r.handle(&get(&old_link), now_ms()).await,
        410,
        "earlier approval request",
    );
    assert_page(
        &r.handle(&post(&old_link), now_ms()).await,
        410,
        "earlier approval request",
    );
    let new_link = link(&new, "alice@example.com", "Approve");
    assert_page(
        &r.handle(&get(&new_link), now_ms()).await,
        200,
        "Approve deployment of",
    );
    // The execution ends (e.g. aborted) before anyone votes.
    db.record_finished(id, Outcome::Failed, Some("aborted"))
        .await
        .unwrap();
    assert_page(
        &r.handle(&get(&new_link), now_ms()).await,
        410,
        "no longer waiting for approval (it is failed)",
    );
    assert_page(
        &r.handle(&post(&new_link), now_ms()).await,
        410,
        "no longer waiting for approval",
    );
    assert!(
        db.tally(id)
            .await
            .unwrap()
            .unwrap()
            .approval_voters
            .is_empty()
    );
    assert!(r.tokens.calls().is_empty());
    tdb.drop_db().await;
}

#[tokio::test]
async fn a_dead_task_token_is_reported_on_the_page_not_as_a_500() {
    let id = "run-1-c8c5-dev-gone-005";
    let (tdb, db, record) = awaiting(id, &["alice@example.com"], 1, 1).await;
    let mails = mail(&db, &record, "token-gone").await;
    let r = responder(&db).await;
    *r.tokens.answer.lock().unwrap() = Ok(TokenDelivery::Gone {
        reason: "TaskTimedOut: Task Timed Out: 'Provided task does not exist anymore'".into(),
    });
    let resp = r
        .handle(
            &post(&link(&mails, "alice@example.com", "Reject")),
            now_ms(),
        )
        .await;
    assert_page(
        &resp,
        410,
        "Step Functions no longer waits for this approval",
    );
    assert!(resp.body.contains("TaskTimedOut: Task Timed Out"));
    let approval = db.approval_request(id).await.unwrap().unwrap();
    assert!(
        matches!(&approval.delivery, Some(TokenDelivery::Gone { reason }) if reason.starts_with("TaskTimedOut")),
        "{:?}",
        approval.delivery
    );
    assert_eq!(r.tokens.calls().len(), 1);
    // A transport failure is a 502 page, and the next POST after the lease retries.
    tdb.drop_db().await;
}

#[tokio::test]
async fn a_failed_hand_over_is_a_502_page_and_is_not_lost() {
    let id = "run-1-c8c5-dev-fail-006";
    let (tdb, db, record) = awaiting(id, &["alice@example.com", "bob@example.com"], 1, 1).await;
    let mails = mail(&db, &record, "token-fail").await;
    let r = responder(&db).await;
    *r.tokens.answer.lock().unwrap() = Err("connection reset".into());
    let approve = link(&mails, "alice@example.com", "Approve");
    let resp = r.handle(&post(&approve), now_ms()).await;
    assert_page(&resp, 502, "could not be reached");
    // Within the lease nobody else sends it.
    *r.tokens.answer.lock().unwrap() = Ok(TokenDelivery::Delivered);
    let resp = r
        .handle(&post(&link(&mails, "bob@example.com", "Approve")), now_ms())
        .await;
    assert_page(&resp, 410, "being sent to Step Functions");
    assert_eq!(r.tokens.calls().len(), 1);
    // After the lease (aged in the database), the next POST delivers it.
    db.sql()
        .execute(
            "UPDATE approval_requests SET delivery_claimed_at = delivery_claimed_at - interval '1 minute'",
            &[],
        )
        .await
        .unwrap();
    let resp = r.handle(&post(&approve), now_ms()).await;
    assert_page(
        &resp,
        410,
        "The votes decided: approve. The deployment goes on to Apply.",
    );
    assert_eq!(r.tokens.calls().len(), 2);
    tdb.drop_db().await;
}

#[tokio::test]
async fn concurrent_votes_crossing_the_threshold_send_the_token_once() {
    let voters = [
        "alice@example.com",
        "bob@example.com",
        "carol@example.com",
        "dave@example.com",
    ];
    let id = "run-1-c8c5-dev-race-007";
    let (tdb, db, record) = awaiting(id, &voters, 2, 3).await;
    let mails = mail(&db, &record, "token-race").await;
    let tokens = RecordingTokens {
        delay_ms: 50,
        ..Default::default()
    };
    let r = Arc::new(crate::ports::responder(
        key(),
        db.clone(),
        tokens,
        cipher().await,
    ));
    // All four approve at once: the threshold of two is crossed by several
    // of them concurrently, and the token must still go out exactly once.
    let mut tasks = Vec::new();
    for voter in voters {
        let r = Arc::clone(&r);
        let req = post(&link(&mails, voter, "Approve"));
        tasks.push(tokio::spawn(async move { r.handle(&req, now_ms()).await }));
    }
    let mut statuses = Vec::new();
    for t in tasks {
        statuses.push(t.await.unwrap().status);
    }
    assert_eq!(r.tokens.calls().len(), 1, "statuses {statuses:?}");
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 410),
        "{statuses:?}"
    );
    let approval = db.approval_request(id).await.unwrap().unwrap();
    assert_eq!(approval.delivery, Some(TokenDelivery::Delivered));
    tdb.drop_db().await;
}

/// Replaces the stored ciphertext of `id`, as a writer of the metadb could.
async fn store_ciphertext(db: &PgMetadb, id: &str, ciphertext: Option<&str>) {
    db.sql()
        .execute(
            "UPDATE approval_requests SET task_token_ciphertext = :c WHERE execution_id = :id",
            &[
                ("c", live_ci_metadb::Param::opt_text(ciphertext)),
                ("id", live_ci_metadb::Param::text(id)),
            ],
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn a_ciphertext_bound_to_another_execution_is_never_sent() {
    use live_ci_core::port::TokenCipher;
    let id = "run-1-c8c5-dev-ctx-009";
    let (tdb, db, record) = awaiting(id, &["alice@example.com"], 1, 1).await;
    let mails = mail(&db, &record, "token-ctx").await;
    // The right token, encrypted for another execution (a row copied across
    // executions): its hash matches, only the encryption context differs.
    let moved = cipher()
        .await
        .encrypt("token-ctx", "run-1-c8c5-dev-other-010")
        .await
        .unwrap();
    store_ciphertext(&db, id, Some(&moved)).await;
    let r = responder(&db).await;
    let resp = r
        .handle(
            &post(&link(&mails, "alice@example.com", "Approve")),
            now_ms(),
        )
        .await;
    assert_page(&resp, 502, "could not be verified, so nothing was sent");
    assert!(!resp.body.contains("token-ctx"), "{}", resp.body);
    assert!(r.tokens.calls().is_empty());
    let approval = db.approval_request(id).await.unwrap().unwrap();
    assert_eq!(approval.delivery, None);
    assert!(approval.decision_sent_at.is_none());
    tdb.drop_db().await;
}

#[tokio::test]
async fn a_ciphertext_of_another_token_is_refused_against_the_links_hash() {
    use live_ci_core::port::TokenCipher;
    let id = "run-1-c8c5-dev-hash-011";
    let (tdb, db, record) = awaiting(id, &["alice@example.com"], 1, 1).await;
    let mails = mail(&db, &record, "token-hash").await;
    // A token of this execution, but not the one the links were signed for
    // (say, an older request's): it decrypts, and the hash check refuses it.
    let other = cipher().await.encrypt("token-older", id).await.unwrap();
    store_ciphertext(&db, id, Some(&other)).await;
    let r = responder(&db).await;
    let resp = r
        .handle(
            &post(&link(&mails, "alice@example.com", "Approve")),
            now_ms(),
        )
        .await;
    assert_page(&resp, 502, "nothing was sent to Step Functions");
    assert!(r.tokens.calls().is_empty());
    tdb.drop_db().await;
}

#[tokio::test]
async fn a_request_stored_before_encryption_is_refused_and_records_no_vote() {
    let id = "run-1-c8c5-dev-legacy-012";
    let (tdb, db, record) = awaiting(id, &["alice@example.com"], 1, 1).await;
    let mails = mail(&db, &record, "token-legacy").await;
    // What migration 0006 leaves of a request that was waiting: no token.
    store_ciphertext(&db, id, None).await;
    let r = responder(&db).await;
    let approve = link(&mails, "alice@example.com", "Approve");
    assert_page(
        &r.handle(&get(&approve), now_ms()).await,
        410,
        "stored before task tokens were encrypted",
    );
    assert_page(
        &r.handle(&post(&approve), now_ms()).await,
        410,
        "stored before task tokens were encrypted",
    );
    assert!(r.tokens.calls().is_empty());
    let tally = db.tally(id).await.unwrap().unwrap();
    assert!(tally.approval_voters.is_empty(), "{tally:?}");
    tdb.drop_db().await;
}

/// `policy_override`: a plan the policies denied (its denials recorded with
/// the plan) is voted on. The mail and the page show the denials, escaped;
/// the approve page asks for a reason. An approve posted without one is
/// refused (422) and records nothing; with one it is counted and the reason
/// stored with the vote (the run page shows it). A reject needs none.
#[tokio::test]
async fn an_approve_of_a_denied_plan_needs_a_reason_and_records_it() {
    let id = "run-1-c8c5-dev-deny-001";
    let (tdb, db, record) = awaiting(id, &["alice@example.com", "bob@example.com"], 2, 2).await;
    let plan = live_ci_core::port::SavedPlan {
        key: format!("{id}/plan.tfplan"),
        sha256: "cd".repeat(32),
        version_id: None,
        json_sha256: None,
    };
    let denial = "data.live_ci.iam.deny: aws_iam_user.bob: <script>no</script>".to_string();
    assert!(
        db.record_policy_denials(id, &plan.sha256, std::slice::from_ref(&denial))
            .await
            .unwrap()
    );
    assert!(db.record_saved_plan(id, &plan).await.unwrap());
    let mut request = request_for(&record, "token-deny");
    request.plan.policy_denials = vec![denial.clone()];
    let fakes = RequesterFakes::new(
        db.clone(),
        RecordingMailer::default(),
        cipher().await,
        live_ci_testkit::approval::RecordingFailures::default(),
    );
    let requester = ApprovalRequester::new(settings(), key(), fakes.clone());
    requester.handle(&request, now()).await.unwrap();
    let mails = fakes.mailer.sent();
    let mail = mails.iter().find(|m| m.to == "alice@example.com").unwrap();
    assert!(
        mail.text
            .contains("Denied by policy (voters may override with a reason):"),
        "{}",
        mail.text
    );
    assert!(mail.text.contains(&denial), "{}", mail.text);
    assert!(
        mail.html
            .contains("aws_iam_user.bob: &lt;script&gt;no&lt;/script&gt;"),
        "{}",
        mail.html
    );
    assert!(!mail.html.contains("<script>"), "{}", mail.html);
    let r = responder(&db).await;
    let approve = link(&mails, "alice@example.com", "Approve");
    let page = r.handle(&get(&approve), now_ms()).await;
    assert_page(&page, 200, "<b>Denied by policy.</b>");
    assert!(page.body.contains("&lt;script&gt;no&lt;/script&gt;"));
    assert!(!page.body.contains("<script>"));
    assert!(
        page.body
            .contains("name=\"reason\" rows=\"3\" cols=\"60\" maxlength=\"2000\" required"),
        "{}",
        page.body
    );
    let with_reason = |token: &str, reason: &str| {
        let mut req = post(token);
        req.body = format!(
            "t={token}&reason={}",
            form_urlencoded::byte_serialize(reason.as_bytes()).collect::<String>()
        )
        .into_bytes();
        req
    };
    for blank in [post(&approve), with_reason(&approve, "  \n ")] {
        let refused = r.handle(&blank, now_ms()).await;
        assert_page(&refused, 422, "approving it needs a reason");
        assert!(refused.body.contains("Nothing was recorded"));
    }
    let tally = db.tally(id).await.unwrap().unwrap();
    assert!(tally.approval_voters.is_empty(), "{tally:?}");
    let counted = r
        .handle(
            &with_reason(&approve, "risk accepted: INC-42 <b>"),
            now_ms(),
        )
        .await;
    assert_eq!(counted.status, 200, "{}", counted.body);
    let tally = db.tally(id).await.unwrap().unwrap();
    assert_eq!(tally.approval_voters, ["alice@example.com"]);
    // A reject needs no reason.
    let reject = link(&mails, "bob@example.com", "Reject");
    let rejected = r.handle(&post(&reject), now_ms()).await;
    assert_eq!(rejected.status, 200, "{}", rejected.body);
    let run = db.run_view(record.run_id, 10).await.unwrap().unwrap();
    let votes: Vec<(String, Option<String>)> = run.units[0]
        .votes
        .iter()
        .map(|v| (v.voter.clone(), v.reason.clone()))
        .collect();
    assert_eq!(
        votes,
        [
            (
                "alice@example.com".to_string(),
                Some("risk accepted: INC-42 <b>".to_string())
            ),
            ("bob@example.com".to_string(), None)
        ]
    );
    let html = run.to_html(now_ms());
    assert!(html.contains("risk accepted: INC-42 &lt;b&gt;"), "{html}");
    assert!(html.contains("Denied by policy"), "{html}");
    tdb.drop_db().await;
}
