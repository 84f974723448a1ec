//! The approval store against a real PostgreSQL (scripts/pg.sh): what a
//! repeated or newer approval request does, per-voter mail records, and the
//! one-time hand-over of the decision under concurrency.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use live_ci_testkit::pg as support;

use std::sync::Arc;

use live_ci_core::deploy::Vote;
use live_ci_core::port::{
    ApprovalStore, ExecutionStore, NewApprovalRequest, RequestStored, RunStore, TokenDelivery,
};
use live_ci_metadb::Sql;
use support::{TestDb, exec, run};

fn request(id: &str, token: &str) -> NewApprovalRequest {
    NewApprovalRequest {
        execution_id: id.into(),
        sfn_execution_arn: format!("arn:aws:states:us-west-2:1:execution:m:{id}"),
        task_token_ciphertext: format!("ciphertext-of-{token}"),
        task_token_hash: format!("hash-of-{token}"),
        to_add: 1,
        to_change: 0,
        to_destroy: 2,
        plan_summary: "1 to add, 0 to change, 2 to destroy".into(),
        logs_url: "https://logs".into(),
        expires_at: 4_102_444_800_000,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn requests_are_stored_once_replaced_by_new_tokens_and_handed_over_once() {
    let t = TestDb::new().await;
    let db = t.metadb(12).await;
    let r = db
        .create_run(&run("c1", 4, vec![exec("a", "dev", &[])]))
        .await
        .unwrap();
    db.claim_ready(r.run_id, 10).await.unwrap();
    assert_eq!(
        db.store_approval_request(&request("nope", "t1"))
            .await
            .unwrap(),
        RequestStored::UnknownExecution
    );
    assert_eq!(
        db.store_approval_request(&request("a", "t1"))
            .await
            .unwrap(),
        RequestStored::Stored
    );
    let first = db.approval_request("a").await.unwrap().unwrap();
    assert_eq!(first.expires_at, 4_102_444_800_000);
    assert_eq!((first.to_add, first.to_destroy), (1, 2));
    // A repeated delivery changes nothing.
    let mut repeat = request("a", "t1");
    repeat.expires_at += 60_000;
    assert_eq!(
        db.store_approval_request(&repeat).await.unwrap(),
        RequestStored::Repeated
    );
    assert_eq!(db.approval_request("a").await.unwrap().unwrap(), first);
    // Mail records per token and voter.
    assert!(
        db.record_mailed("a", "hash-of-t1", "a@example.com", "m1")
            .await
            .unwrap()
    );
    assert!(
        !db.record_mailed("a", "hash-of-t1", "a@example.com", "m2")
            .await
            .unwrap()
    );
    assert_eq!(
        db.mailed_voters("a", "hash-of-t1").await.unwrap(),
        ["a@example.com"]
    );
    // A new token replaces the undecided request.
    assert_eq!(
        db.store_approval_request(&request("a", "t2"))
            .await
            .unwrap(),
        RequestStored::Stored
    );
    assert_eq!(
        db.approval_request("a")
            .await
            .unwrap()
            .unwrap()
            .task_token_ciphertext
            .as_deref(),
        Some("ciphertext-of-t2")
    );
    assert!(
        db.mailed_voters("a", "hash-of-t2")
            .await
            .unwrap()
            .is_empty()
    );
    // No decision yet: nothing to hand over.
    assert!(!db.claim_decision_delivery("a", 30).await.unwrap());
    db.cast_vote("a", "a@example.com", Vote::Approve)
        .await
        .unwrap();
    db.cast_vote("a", "b@example.com", Vote::Approve)
        .await
        .unwrap();
    assert_eq!(db.decide("a").await.unwrap(), Some(Vote::Approve));
    // Twenty concurrent claimers: exactly one wins.
    let db = Arc::new(db);
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let db = Arc::clone(&db);
        tasks.push(tokio::spawn(async move {
            db.claim_decision_delivery("a", 30).await.unwrap()
        }));
    }
    let mut won = 0;
    for task in tasks {
        won += usize::from(task.await.unwrap());
    }
    assert_eq!(won, 1);
    // Once the hand-over is taken, a newer request no longer replaces it.
    assert_eq!(
        db.store_approval_request(&request("a", "t3"))
            .await
            .unwrap(),
        RequestStored::Decided
    );
    // A claim older than its lease can be taken again (its caller died).
    db.sql()
        .execute(
            "UPDATE approval_requests SET delivery_claimed_at = delivery_claimed_at - interval '1 minute'",
            &[],
        )
        .await
        .unwrap();
    assert!(db.claim_decision_delivery("a", 30).await.unwrap());
    assert!(
        db.record_decision_delivery("a", &TokenDelivery::Delivered)
            .await
            .unwrap()
    );
    let late = TokenDelivery::Gone {
        reason: "late".into(),
    };
    assert!(!db.record_decision_delivery("a", &late).await.unwrap());
    let done = db.approval_request("a").await.unwrap().unwrap();
    assert_eq!(done.delivery, Some(TokenDelivery::Delivered));
    assert!(done.decision_sent_at.is_some());
    assert!(!db.claim_decision_delivery("a", 0).await.unwrap());
    t.drop_db().await;
}

/// Migration 0006 on a metadb of 0005's schema holding a plain task token:
/// the token is gone from every column of every table, the request row stays
/// (its hash, its mails) and reads back with no ciphertext, which
/// approval_response refuses to deliver.
#[tokio::test]
async fn upgrading_drops_the_stored_plain_task_tokens() {
    let t = TestDb::new().await;
    let client = migrated_up_to(&t, "0005_operator").await;
    let plain = "AQCEAAAAKgAAAAMAAAAAAAAAAc-plain-0005-token";
    running_executions(&client, &["legacy"]).await;
    client
        .batch_execute(&format!(
            "INSERT INTO approval_requests (execution_id, sfn_execution_arn, task_token,
                 task_token_hash, to_add, to_change, to_destroy, logs_url, expires_at)
             VALUES ('legacy', 'arn:x', '{plain}', 'hash-legacy', 1, 0, 0, 'https://logs',
                 now() + interval '1 hour');
             INSERT INTO approval_mails (execution_id, task_token_hash, voter, message_id)
             VALUES ('legacy', 'hash-legacy', 'a@example.com', 'm1');"
        ))
        .await
        .unwrap();
    // What the metadb adapter does at start: applies 0006 (and what follows).
    let db = t.metadb(2).await;
    let tables = client
        .query(
            "SELECT table_name::text FROM information_schema.tables
             WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
            &[],
        )
        .await
        .unwrap();
    assert!(tables.len() > 5);
    for row in tables {
        let table: String = row.get(0);
        for r in client
            .query(&format!("SELECT row_to_json(t)::text FROM {table} t"), &[])
            .await
            .unwrap()
        {
            let json: String = r.get(0);
            assert!(
                !json.contains(plain),
                "{table} still holds the token: {json}"
            );
        }
    }
    let legacy = db.approval_request("legacy").await.unwrap().unwrap();
    assert_eq!(legacy.task_token_ciphertext, None);
    assert_eq!(legacy.task_token_hash, "hash-legacy");
    assert_eq!(
        db.mailed_voters("legacy", "hash-legacy").await.unwrap(),
        ["a@example.com"]
    );
    t.drop_db().await;
}

/// A database with the migrations up to `last` applied and recorded, as an
/// older release left it: the next metadb start applies the rest.
pub(crate) async fn migrated_up_to(t: &TestDb, last: &str) -> tokio_postgres::Client {
    use live_ci_metadb::sql::statements::CREATE_SCHEMA_MIGRATIONS;
    let client = live_ci_metadb::connect(&t.url).await.unwrap();
    client
        .batch_execute(CREATE_SCHEMA_MIGRATIONS)
        .await
        .unwrap();
    let end = live_ci_metadb::MIGRATIONS
        .iter()
        .position(|m| m.name == last)
        .unwrap();
    for m in &live_ci_metadb::MIGRATIONS[..=end] {
        client.batch_execute(m.sql).await.unwrap();
        client
            .batch_execute(&format!(
                "INSERT INTO schema_migrations (version, name) VALUES ({}, '{}')",
                m.version, m.name
            ))
            .await
            .unwrap();
    }
    client
}

/// One run with a running execution per id, voted on by a@example.com, in
/// the columns every schema since 0001 has (raw SQL: the adapter would migrate).
async fn running_executions(client: &tokio_postgres::Client, ids: &[&str]) {
    let rows: Vec<String> = ids
        .iter()
        .enumerate()
        .map(|(seq, id)| format!("('{id}', {seq})"))
        .collect();
    client
        .batch_execute(&format!(
            "INSERT INTO runs (pr_id, commit_id, base_ref, head_ref, base_sha, head_sha, max_parallel)
             VALUES (1, 'c-{}', 'main', 'f', 'b', 'h', 1);
             INSERT INTO executions (run_id, execution_id, seq, is_rollback, cfg_path, cfg_deps,
                 action, status, plan_command, apply_command, new_providers, account_name,
                 account_path, account_deps, voters, min_approval_count, min_rejection_count,
                 plan_role_arn, apply_role_arn, priority, wait_for, wait_accounts, pending_deps)
             SELECT run_id, e.id, e.seq, false, 'dev/' || e.id, '[]', 'apply', 'running', 'p', 'a',
                 '[]', 'dev', 'dev', '[]', '[\"a@example.com\"]', 1, 1, 'p', 'a', 1, '[]', '[]', 0
             FROM runs, (VALUES {}) AS e(id, seq);",
            ids[0],
            rows.join(", ")
        ))
        .await
        .unwrap();
}

/// A metadb of 0008's schema with three decided approval requests, their
/// delivery stored the old way: `delivered`, `gone: <reason>`, and none yet.
async fn decided_requests_before_0009(t: &TestDb) -> tokio_postgres::Client {
    let client = migrated_up_to(t, "0008_trunk_sweep").await;
    running_executions(&client, &["sent", "late", "open"]).await;
    client
        .batch_execute(
            "INSERT INTO approval_requests (execution_id, sfn_execution_arn,
                 task_token_ciphertext, task_token_hash, to_add, to_change, to_destroy,
                 logs_url, expires_at, decision_sent_at, delivery)
             VALUES
                 ('sent', 'arn:x', 'c1', 'h1', 1, 0, 0, 'https://logs', now(), now(), 'delivered'),
                 ('late', 'arn:x', 'c2', 'h2', 1, 0, 0, 'https://logs', now(), now(),
                  'gone: TaskTimedOut: Task Timed Out'),
                 ('open', 'arn:x', 'c3', 'h3', 1, 0, 0, 'https://logs', now(), NULL, NULL);",
        )
        .await
        .unwrap();
    client
}

/// Migration 0009 turns the stored strings into outcomes: `gone: <reason>`
/// becomes `gone` with the reason beside it, and each reads back as the
/// port's `TokenDelivery`.
#[tokio::test]
async fn upgrading_turns_stored_delivery_strings_into_outcomes() {
    let t = TestDb::new().await;
    let _client = decided_requests_before_0009(&t).await;
    // What the metadb adapter does at start: applies 0009.
    let db = t.metadb(2).await;
    let read = |id: &'static str| {
        let db = &db;
        async move { db.approval_request(id).await.unwrap().unwrap().delivery }
    };
    assert_eq!(read("sent").await, Some(TokenDelivery::Delivered));
    assert_eq!(
        read("late").await,
        Some(TokenDelivery::Gone {
            reason: "TaskTimedOut: Task Timed Out".into()
        })
    );
    assert_eq!(read("open").await, None);
    t.drop_db().await;
}

/// The CHECK of 0009: only `delivered` (no reason) or `gone` (with one) is
/// stored; the old free text, or an outcome missing its reason, is refused
/// and changes nothing.
#[tokio::test]
async fn an_unknown_delivery_outcome_is_refused() {
    let t = TestDb::new().await;
    let client = decided_requests_before_0009(&t).await;
    let db = t.metadb(2).await;
    for bad in [
        "delivery = 'gone: late', delivery_reason = NULL",
        "delivery = 'sent', delivery_reason = NULL",
        "delivery = 'gone', delivery_reason = NULL",
        "delivery = 'delivered', delivery_reason = 'why'",
        "delivery = NULL, delivery_reason = 'why'",
    ] {
        let err = client
            .batch_execute(&format!(
                "UPDATE approval_requests SET {bad} WHERE execution_id = 'open'"
            ))
            .await
            .expect_err(bad);
        let db_err = err.as_db_error().expect("a server error");
        assert_eq!(db_err.code().code(), "23514", "{bad}: {db_err:?}");
        assert_eq!(
            db_err.constraint(),
            Some("approval_requests_delivery_outcome"),
            "{bad}"
        );
    }
    assert_eq!(
        db.approval_request("open").await.unwrap().unwrap().delivery,
        None
    );
    t.drop_db().await;
}

/// approval_request's one round trip before mailing: the store answers with
/// the stored expiry (a repeated delivery keeps the first one, so every link
/// of a request expires together) and the voters already mailed for that
/// token; the mails of one invocation are recorded in one call, each once.
#[tokio::test]
async fn storing_a_request_answers_its_expiry_and_who_was_mailed() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let r = db
        .create_run(&run("c1", 4, vec![exec("a", "dev", &[])]))
        .await
        .unwrap();
    db.claim_ready(r.run_id, 10).await.unwrap();
    let unknown = db
        .store_approval_request_for_mail(&request("nope", "t1"))
        .await
        .unwrap();
    assert_eq!(unknown.stored, RequestStored::UnknownExecution);
    assert_eq!((unknown.expires_at, unknown.mailed.len()), (None, 0));

    let first = db
        .store_approval_request_for_mail(&request("a", "t1"))
        .await
        .unwrap();
    assert_eq!(first.stored, RequestStored::Stored);
    assert_eq!(first.expires_at, Some(4_102_444_800_000));
    assert!(first.mailed.is_empty());
    let mails = |voters: &[&str]| -> Vec<(String, String)> {
        voters
            .iter()
            .map(|v| (v.to_string(), format!("message-to-{v}")))
            .collect()
    };
    assert_eq!(
        db.record_mails(
            "a",
            "hash-of-t1",
            &mails(&["b@example.com", "a@example.com"])
        )
        .await
        .unwrap()
        .len(),
        2
    );
    // Recorded once: a repeat records only who is new.
    assert_eq!(
        db.record_mails(
            "a",
            "hash-of-t1",
            &mails(&["a@example.com", "c@example.com"])
        )
        .await
        .unwrap(),
        ["c@example.com"]
    );
    assert!(
        db.record_mails("a", "hash-of-t1", &[])
            .await
            .unwrap()
            .is_empty()
    );

    let mut repeat = request("a", "t1");
    repeat.expires_at += 60_000;
    let again = db.store_approval_request_for_mail(&repeat).await.unwrap();
    assert_eq!(again.stored, RequestStored::Repeated);
    assert_eq!(again.expires_at, Some(4_102_444_800_000));
    assert_eq!(
        again.mailed,
        ["a@example.com", "b@example.com", "c@example.com"]
    );
    assert_eq!(
        again.mailed,
        db.mailed_voters("a", "hash-of-t1").await.unwrap()
    );

    // A new token: its own expiry, nobody mailed for it yet.
    let mut newer = request("a", "t2");
    newer.expires_at += 120_000;
    let replaced = db.store_approval_request_for_mail(&newer).await.unwrap();
    assert_eq!(replaced.stored, RequestStored::Stored);
    assert_eq!(replaced.expires_at, Some(4_102_444_920_000));
    assert!(replaced.mailed.is_empty());
    t.drop_db().await;
}

/// A vote in one call (`live_ci_vote`), with what a page needs read in one
/// (`live_ci_vote_view`): a link of another token or a stranger records
/// nothing; the vote that reaches the threshold decides and takes the
/// hand-over with the token to send; later votes are not counted and take it
/// only once the lease has passed, never after a delivery is recorded.
pub(crate) async fn a_vote_decides_and_takes_the_hand_over_once<S>(db: &S, prefix: &str)
where
    S: ApprovalStore + RunStore + ExecutionStore,
    <S as ApprovalStore>::Error: std::fmt::Debug,
    <S as RunStore>::Error: std::fmt::Debug,
{
    use live_ci_core::port::Ballot;
    let id = format!("{prefix}-vote");
    let mut e = exec(&id, "dev", &[]);
    e.voters = vec!["a@example.com".into(), "b@example.com".into()];
    e.min_approval_count = 2;
    e.min_rejection_count = 2;
    let r = db
        .create_run(&run(&format!("{prefix}-c"), 4, vec![e]))
        .await
        .unwrap();
    db.claim_ready(r.run_id, 10).await.unwrap();
    db.store_approval_request(&request(&id, "t1"))
        .await
        .unwrap();
    let ballot = |voter, hash, lease_secs| Ballot {
        execution_id: &id,
        voter,
        channel: live_ci_core::port::VoteChannel::Mail,
        vote: Vote::Approve,
        task_token_hash: hash,
        lease_secs,
        reason: None,
        github_login: None,
    };

    let view = db.vote_view(&id).await.unwrap().unwrap();
    assert_eq!(view.execution.execution_id, id);
    assert_eq!(view.approval.unwrap().task_token_hash, "hash-of-t1");
    assert!(view.tally.approval_voters.is_empty());
    assert!(db.vote_view("nope").await.unwrap().is_none());
    assert!(
        db.vote(&Ballot {
            execution_id: "nope",
            ..ballot("a@example.com", "hash-of-t1", 30)
        })
        .await
        .unwrap()
        .is_none()
    );
    // Refused by the view: nothing recorded.
    for refused in [
        ballot("a@example.com", "hash-of-t0", 30),
        ballot("z@example.com", "hash-of-t1", 30),
    ] {
        let voted = db.vote(&refused).await.unwrap().unwrap();
        assert!(voted.cast.is_none(), "{refused:?}");
    }
    assert!(
        db.tally(&id)
            .await
            .unwrap()
            .unwrap()
            .approval_voters
            .is_empty()
    );

    let first = db
        .vote(&ballot("a@example.com", "hash-of-t1", 30))
        .await
        .unwrap()
        .unwrap()
        .cast
        .unwrap();
    assert!(first.recorded && !first.claimed);
    assert_eq!(first.decision, None);
    assert_eq!(first.tally.approval_voters, ["a@example.com"]);

    let second = db
        .vote(&ballot("b@example.com", "hash-of-t1", 30))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(second.view.tally.approval_voters, ["a@example.com"]);
    let second = second.cast.unwrap();
    assert!(second.recorded && second.claimed);
    assert_eq!(second.decision, Some(Vote::Approve));
    assert_eq!(
        second.tally.approval_voters,
        ["a@example.com", "b@example.com"]
    );
    let approval = second.approval.unwrap();
    assert_eq!(
        approval.task_token_ciphertext.as_deref(),
        Some("ciphertext-of-t1")
    );
    assert!(approval.delivery_claimed_at.is_some());

    // After the decision: not counted; the hand-over is held for its lease.
    let late = db
        .vote(&ballot("a@example.com", "hash-of-t1", 30))
        .await
        .unwrap()
        .unwrap()
        .cast
        .unwrap();
    assert!(!late.recorded && !late.claimed);
    assert_eq!(late.decision, Some(Vote::Approve));
    // A sender that died: the next vote after the lease takes it again.
    let retry = db
        .vote(&ballot("a@example.com", "hash-of-t1", 0))
        .await
        .unwrap()
        .unwrap()
        .cast
        .unwrap();
    assert!(retry.claimed);
    assert!(
        db.record_decision_delivery(&id, &TokenDelivery::Delivered)
            .await
            .unwrap()
    );
    let delivered = db
        .vote(&ballot("b@example.com", "hash-of-t1", 0))
        .await
        .unwrap()
        .unwrap()
        .cast
        .unwrap();
    assert!(!delivered.claimed);
    assert_eq!(
        delivered.approval.unwrap().delivery,
        Some(TokenDelivery::Delivered)
    );
}

#[tokio::test]
async fn a_vote_decides_and_takes_the_hand_over_once_in_one_call() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    a_vote_decides_and_takes_the_hand_over_once(&db, "pv").await;
    t.drop_db().await;
}

/// Votes from the pull request (migration 0018): a GitHub vote goes through
/// `live_ci_vote` like a mailed one, in the same tally and thresholds,
/// recorded with its channel as `github:<login>`; changed before the
/// decision it counts once; a mailed and a GitHub vote by two people reach a
/// 2-vote threshold, admit the GitHub voter for the apply's check, and take
/// the hand-over. The execution is found by merge commit and unit.
#[tokio::test]
async fn a_github_vote_counts_in_the_mail_tally_once_with_its_channel() {
    use live_ci_core::deploy::RunStatus;
    use live_ci_core::port::{Ballot, VoteChannel};
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let id = "gh-vote".to_string();
    let mut e = exec(&id, "dev", &[]);
    e.voters = vec!["a@example.com".into(), "b@example.com".into()];
    e.min_approval_count = 2;
    e.min_rejection_count = 2;
    let r = db.create_run(&run("gh-merge", 4, vec![e])).await.unwrap();
    // Not claimed yet, no request: nothing awaits.
    assert!(
        db.awaiting_vote("gh-merge", "dev/gh-vote")
            .await
            .unwrap()
            .is_none()
    );
    db.claim_ready(r.run_id, 10).await.unwrap();
    db.store_approval_request(&request(&id, "t1"))
        .await
        .unwrap();
    assert!(
        db.awaiting_vote("other", "dev/gh-vote")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        db.awaiting_vote("gh-merge", "dev/other")
            .await
            .unwrap()
            .is_none()
    );
    let view = db
        .awaiting_vote("gh-merge", "dev/gh-vote")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(view.execution.execution_id, id);
    let hash = view.approval.unwrap().task_token_hash;

    let gh = |vote| Ballot {
        execution_id: &id,
        voter: "github:alice",
        channel: VoteChannel::GitHub,
        vote,
        task_token_hash: &hash,
        lease_secs: 30,
        reason: None,
        github_login: None,
    };
    // Reject, then changed to approve before the decision: one vote.
    let first = db
        .vote(&gh(Vote::Reject))
        .await
        .unwrap()
        .unwrap()
        .cast
        .unwrap();
    assert!(first.recorded && first.decision.is_none());
    assert_eq!(first.tally.rejection_voters, ["github:alice"]);
    let changed = db
        .vote(&gh(Vote::Approve))
        .await
        .unwrap()
        .unwrap()
        .cast
        .unwrap();
    assert!(changed.recorded && changed.decision.is_none() && !changed.claimed);
    assert_eq!(changed.tally.approval_voters, ["github:alice"]);
    assert!(changed.tally.rejection_voters.is_empty());

    // A mailed vote by someone else reaches the 2-vote threshold.
    let mail = db
        .vote(&Ballot {
            execution_id: &id,
            voter: "a@example.com",
            channel: VoteChannel::Mail,
            vote: Vote::Approve,
            task_token_hash: &hash,
            lease_secs: 30,
            reason: None,
            github_login: None,
        })
        .await
        .unwrap()
        .unwrap()
        .cast
        .unwrap();
    assert!(mail.recorded && mail.claimed);
    assert_eq!(mail.decision, Some(Vote::Approve));
    assert_eq!(
        mail.tally.approval_voters,
        ["a@example.com", "github:alice"]
    );

    let client = live_ci_metadb::connect(&t.url).await.unwrap();
    let rows = client
        .query("SELECT voter, vote, channel FROM votes ORDER BY voter", &[])
        .await
        .unwrap();
    let rows: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(
        rows,
        [
            ("a@example.com".into(), "approve".into(), "mail".into()),
            ("github:alice".into(), "approve".into(), "github".into()),
        ]
    );
    // The apply's check counts the admitted GitHub voter.
    let record = db.execution(&id).await.unwrap().unwrap();
    assert_eq!(record.github_voters, ["github:alice"]);
    assert_eq!(record.apply_refusal(RunStatus::Running), None);
    // Decided: nothing awaits any more.
    assert!(
        db.awaiting_vote("gh-merge", "dev/gh-vote")
            .await
            .unwrap()
            .is_none()
    );
    t.drop_db().await;
}

/// A GitHub vote must be `github:<login>` and a mailed vote may not pose as
/// one: the function refuses before it records anything.
#[tokio::test]
async fn a_vote_whose_voter_does_not_match_its_channel_is_refused() {
    let t = TestDb::new().await;
    let db = t.metadb(1).await;
    let r = db
        .create_run(&run("gh-bad", 4, vec![exec("gh-bad", "dev", &[])]))
        .await
        .unwrap();
    db.claim_ready(r.run_id, 10).await.unwrap();
    db.store_approval_request(&request("gh-bad", "t1"))
        .await
        .unwrap();
    let client = live_ci_metadb::connect(&t.url).await.unwrap();
    for (voter, channel) in [
        // An address is a GitHub vote's voter only for a mail voter of the
        // execution (migration 0021); z@ is none.
        ("z@example.com", "github"),
        ("example.com", "github"),
        ("github:Alice", "github"),
        ("github:a/b", "github"),
        ("a@example.com", "sms"),
    ] {
        let err = client
            .query(
                "SELECT live_ci_vote('gh-bad', $1, 'approve', 'hash-of-t1', 30, $2)",
                &[&voter, &channel],
            )
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("live-ci:") || format!("{err:?}").contains("live-ci:"),
            "{voter} {channel}: {err:?}"
        );
    }
    let n: i64 = client
        .query_one("SELECT count(*) FROM votes", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 0);
    t.drop_db().await;
}

/// One person, one vote (migration 0021): a GitHub vote cast under a mail
/// voter's address (approval_response resolved the login through
/// `voter_github_logins`) is the same row as that person's mailed vote:
/// changed, not added, with the channel it was last cast through; it is not
/// admitted into github_voters (the address is a voter already), and the
/// apply's check counts it. An address outside the execution's mail voters
/// is refused before anything is recorded.
#[tokio::test]
async fn a_persons_mail_and_github_votes_are_one_vote() {
    use live_ci_core::deploy::RunStatus;
    use live_ci_core::port::{Ballot, VoteChannel};
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let id = "one-person".to_string();
    let mut e = exec(&id, "dev", &[]);
    e.min_approval_count = 2;
    e.min_rejection_count = 2;
    let r = db.create_run(&run("op-merge", 4, vec![e])).await.unwrap();
    db.claim_ready(r.run_id, 10).await.unwrap();
    db.store_approval_request(&request(&id, "t1"))
        .await
        .unwrap();
    let hash = db
        .awaiting_vote("op-merge", &format!("dev/{id}"))
        .await
        .unwrap()
        .unwrap()
        .approval
        .unwrap()
        .task_token_hash;
    let ballot = |voter, channel, vote| Ballot {
        execution_id: &id,
        voter,
        channel,
        vote,
        task_token_hash: &hash,
        lease_secs: 30,
        reason: None,
        // A GitHub vote under an address names the login that cast it.
        github_login: (channel == VoteChannel::GitHub && voter == "a@example.com")
            .then_some("a-gh"),
    };
    let client = live_ci_metadb::connect(&t.url).await.unwrap();
    let rows = || async {
        client
            .query("SELECT voter, vote, channel FROM votes ORDER BY voter", &[])
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect::<Vec<(String, String, String)>>()
    };
    let own = |v: &str, vote: &str, c: &str| (v.to_string(), vote.to_string(), c.to_string());

    // a@ approves by mail, then by GitHub: one approval of the 2 needed.
    let mail = db
        .vote(&ballot("a@example.com", VoteChannel::Mail, Vote::Approve))
        .await
        .unwrap()
        .unwrap()
        .cast
        .unwrap();
    assert!(mail.recorded && mail.decision.is_none());
    let again = db
        .vote(&ballot("a@example.com", VoteChannel::GitHub, Vote::Approve))
        .await
        .unwrap()
        .unwrap()
        .cast
        .unwrap();
    assert!(again.recorded && again.decision.is_none() && !again.claimed);
    assert_eq!(again.tally.approval_voters, ["a@example.com"]);
    assert_eq!(rows().await, [own("a@example.com", "approve", "github")]);

    // Then rejects by GitHub: her vote changed, still one row.
    let changed = db
        .vote(&ballot("a@example.com", VoteChannel::GitHub, Vote::Reject))
        .await
        .unwrap()
        .unwrap()
        .cast
        .unwrap();
    assert!(changed.recorded && changed.decision.is_none());
    assert!(changed.tally.approval_voters.is_empty());
    assert_eq!(changed.tally.rejection_voters, ["a@example.com"]);
    assert_eq!(rows().await, [own("a@example.com", "reject", "github")]);

    // An address that is not a mail voter of the execution: refused, nothing recorded.
    let err = client
        .query(
            "SELECT live_ci_vote($1, 'z@example.com', 'approve', $2, 30, 'github', 'z-gh')",
            &[&id, &hash],
        )
        .await
        .unwrap_err();
    assert!(
        format!("{err:?}").contains("is not a mail voter of execution"),
        "{err:?}"
    );
    // The login goes with a GitHub vote under an address, and with no other.
    for (voter, channel, login) in [
        ("a@example.com", "github", None),
        ("a@example.com", "mail", Some("a-gh")),
        ("github:a-gh", "github", Some("a-gh")),
        ("a@example.com", "github", Some("A_GH")),
    ] {
        let err = client
            .query(
                "SELECT live_ci_vote($1, $2, 'approve', $3, 30, $4, $5)",
                &[&id, &voter, &hash, &channel, &login],
            )
            .await
            .unwrap_err();
        assert!(
            format!("{err:?}").contains("names its login"),
            "{voter} {channel} {login:?}: {err:?}"
        );
    }
    assert_eq!(rows().await, [own("a@example.com", "reject", "github")]);
    let login: Option<String> = client
        .query_one("SELECT github_login FROM votes", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(login.as_deref(), Some("a-gh"));

    // b@ (mail) and a@ (GitHub, back to approve) are two people: decided.
    db.vote(&ballot("a@example.com", VoteChannel::GitHub, Vote::Approve))
        .await
        .unwrap();
    let decided = db
        .vote(&ballot("b@example.com", VoteChannel::Mail, Vote::Approve))
        .await
        .unwrap()
        .unwrap()
        .cast
        .unwrap();
    assert_eq!(decided.decision, Some(Vote::Approve));
    assert!(decided.claimed);
    assert_eq!(
        decided.tally.approval_voters,
        ["a@example.com", "b@example.com"]
    );
    let record = db.execution(&id).await.unwrap().unwrap();
    assert!(record.github_voters.is_empty());
    assert_eq!(record.apply_refusal(RunStatus::Running), None);
    t.drop_db().await;
}

/// The map set while a vote is open: the person's older `github:<login>`
/// vote and their new vote under the address are one vote, the newer one.
#[tokio::test]
async fn a_vote_cast_as_a_login_before_the_map_named_it_is_folded_into_the_persons_vote() {
    use live_ci_core::port::{Ballot, VoteChannel};
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let id = "fold".to_string();
    let mut e = exec(&id, "dev", &[]);
    e.min_approval_count = 2;
    e.min_rejection_count = 2;
    let r = db.create_run(&run("fold-merge", 4, vec![e])).await.unwrap();
    db.claim_ready(r.run_id, 10).await.unwrap();
    db.store_approval_request(&request(&id, "t1"))
        .await
        .unwrap();
    let hash = "hash-of-t1";
    let ballot = |voter, vote, github_login, reason| Ballot {
        execution_id: &id,
        voter,
        channel: VoteChannel::GitHub,
        vote,
        task_token_hash: hash,
        lease_secs: 30,
        reason,
        github_login,
    };
    let before = db
        .vote(&ballot("github:a-gh", Vote::Reject, None, Some("not yet")))
        .await
        .unwrap()
        .unwrap()
        .cast
        .unwrap();
    assert_eq!(before.tally.rejection_voters, ["github:a-gh"]);
    let after = db
        .vote(&ballot("a@example.com", Vote::Approve, Some("a-gh"), None))
        .await
        .unwrap()
        .unwrap()
        .cast
        .unwrap();
    assert!(after.recorded && after.decision.is_none());
    assert_eq!(after.tally.approval_voters, ["a@example.com"]);
    assert!(after.tally.rejection_voters.is_empty());
    let client = live_ci_metadb::connect(&t.url).await.unwrap();
    let n: i64 = client
        .query_one("SELECT count(*) FROM votes", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 1);
    let reasons: i64 = client
        .query_one("SELECT count(*) FROM vote_reasons", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(reasons, 0);
    t.drop_db().await;
}
