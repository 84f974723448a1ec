//! The read-only run page: a run with a unit in every phase, read from real
//! PostgreSQL through the approval store port alone, rendered escaped, with no
//! form, no script and no vote link; reached only by a run link (expired,
//! tampered and vote-link tokens are refused, and a run link never votes).
//! The browser test screenshots it: `target/test-artifacts/approval-response/4-run.png`.
#![allow(clippy::unwrap_used)]

use live_ci_approval_response::{PageRequest, PageResponse};
use live_ci_aws::KmsTokenCipher;
use live_ci_core::approval::{RunLink, RunLinkKey, VoteLink, task_token_hash};
use live_ci_core::deploy::{RunId, Vote};
use live_ci_core::port::{ApprovalStore, NewApprovalRequest, RunStore};
use live_ci_metadb::PgMetadb;
use live_ci_testkit::approval::{ApprovalsOnly, RecordingTokens, key, kms_client, now};
use live_ci_testkit::pg;

/// The run-link key the tests share: not the vote-link key.
pub(crate) const RUN_KEY: &[u8] = b"test-run-link-key-0123456789abcdef";

pub(crate) fn run_key() -> RunLinkKey {
    RunLinkKey::new(RUN_KEY).unwrap()
}

/// The units of [`phases_run`], in priority order, and the phase each is in.
pub(crate) const PHASES: &[(&str, &str)] = &[
    ("u-applying", "applying"),
    ("u-awaiting", "awaiting approval"),
    ("u-planning", "planning"),
    ("u-waiting", "waiting"),
    ("u-done", "done"),
    ("u-failed", "failed"),
    ("u-rejected", "rejected"),
    ("u-aborted", "aborted"),
    ("u-rolledback", "rolled back"),
];

/// A fresh metadb holding one run with a unit in every phase, moved there as
/// the pipeline's writers leave them (the approval request and votes through
/// the approval store; statuses and timestamps by SQL, as trigger-sf's
/// settle and terra-run's plan record leave them).
pub(crate) async fn phases_run() -> (pg::TestDb, PgMetadb, RunId) {
    let tdb = pg::TestDb::new().await;
    let db = tdb.metadb(4).await;
    let execs = PHASES
        .iter()
        .enumerate()
        .map(|(i, (id, _))| {
            let mut e = pg::exec(id, "dev", &[]);
            e.priority = (PHASES.len() - i) as f64;
            e
        })
        .collect();
    let run = db
        .create_run(&pg::run("commit-phases", 10, execs))
        .await
        .unwrap();
    let client = live_ci_metadb::connect(&tdb.url).await.unwrap();
    let plan = "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'";
    client
        .batch_execute(&format!(
            "UPDATE executions SET status = 'running', claimed_at = now() - interval '75 seconds'
               WHERE execution_id IN ('u-applying', 'u-awaiting', 'u-planning', 'u-rejected');
             UPDATE executions SET plan_key = 'p', plan_sha256 = {plan}
               WHERE execution_id IN ('u-applying', 'u-awaiting', 'u-done', 'u-failed', 'u-rejected', 'u-rolledback');
             UPDATE executions SET status = 'succeeded', claimed_at = now() - interval '200 seconds',
                    finished_at = now() - interval '15 seconds' WHERE execution_id IN ('u-done', 'u-rolledback');
             UPDATE executions SET is_rollback = true WHERE execution_id = 'u-rolledback';
             UPDATE executions SET status = 'failed', claimed_at = now() - interval '40 seconds',
                    finished_at = now(), status_reason = 'apply failed: <script>alert(1)</script>'
               WHERE execution_id = 'u-failed';
             UPDATE executions SET status = 'aborted', status_reason = 'ancestor failed'
               WHERE execution_id = 'u-aborted';"
        ))
        .await
        .unwrap();
    for (id, summary) in [
        ("u-applying", "1 to add, 0 to change, 0 to destroy"),
        ("u-awaiting", "2 to add, <b>1</b> to change, 0 to destroy"),
        ("u-rejected", "0 to add, 0 to change, 3 to destroy"),
    ] {
        let stored = db
            .store_approval_request(&NewApprovalRequest {
                execution_id: id.into(),
                sfn_execution_arn: format!(
                    "arn:aws:states:us-west-2:111111111111:execution:x:{id}"
                ),
                task_token_ciphertext: "ciphertext".into(),
                task_token_hash: hex_hash(id),
                to_add: 2,
                to_change: 1,
                to_destroy: 0,
                plan_summary: summary.into(),
                logs_url: "https://console.aws.amazon.com/cloudwatch/home#logs".into(),
                expires_at: (now() as i64 + 3600) * 1000,
            })
            .await
            .unwrap();
        assert_eq!(stored, live_ci_core::port::RequestStored::Stored);
    }
    // a and b approve u-applying (2 needed: decided), a approves u-awaiting,
    // c rejects u-rejected (1 needed: decided).
    for (id, voter, vote) in [
        ("u-applying", "a@example.com", Vote::Approve),
        ("u-applying", "b@example.com", Vote::Approve),
        ("u-awaiting", "a@example.com", Vote::Approve),
        ("u-rejected", "c@example.com", Vote::Reject),
    ] {
        db.cast_vote(id, voter, vote).await.unwrap();
        db.decide(id).await.unwrap();
    }
    (tdb, db, run.run_id)
}

fn hex_hash(s: &str) -> String {
    live_ci_core::approval::task_token_hash_hex(s)
}

pub(crate) fn responder(
    db: PgMetadb,
) -> crate::ports::Wired<ApprovalsOnly<PgMetadb>, RecordingTokens> {
    // The cipher is never called by a run page (no KMS call is made).
    crate::ports::responder(
        key(),
        ApprovalsOnly(db),
        RecordingTokens::default(),
        KmsTokenCipher::new(kms_client(), "unused"),
    )
    .with_run_key(run_key())
}

fn get(query: String, method: &str) -> PageRequest {
    PageRequest {
        method: method.into(),
        query,
        headers: Default::default(),
        body: Vec::new(),
    }
}

pub(crate) fn run_token(run_id: RunId, expires_at: u64) -> String {
    run_key().sign(&RunLink { run_id, expires_at }).unwrap()
}

fn now_ms() -> i64 {
    now() as i64 * 1000
}

fn header<'a>(resp: &'a PageResponse, name: &str) -> &'a str {
    resp.header(name).unwrap_or_default()
}

#[tokio::test]
async fn the_run_page_shows_every_units_phase_votes_and_plan_and_nothing_to_act_on() {
    let (tdb, db, run_id) = phases_run().await;
    let r = responder(db);
    let token = run_token(run_id, now() + 3600);
    let resp = r.handle(&get(format!("r={token}"), "GET"), now_ms()).await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    let body = &resp.body;
    // Every unit in its phase, in the run's order.
    let mut at = 0;
    for (id, phase) in PHASES {
        let row = format!("<tr class=\"unit\" data-phase=\"{phase}\"><td><code>dev/{id}</code>");
        let i = body[at..]
            .find(&row)
            .unwrap_or_else(|| panic!("{row} after {at} in {body}"));
        at += i + row.len();
    }
    assert!(
        body.contains("dev/u-rolledback</code> (rollback)"),
        "{body}"
    );
    // Votes: who (local part only), what; the count of approvals.
    assert!(body.contains("2 of 2 approvals needed"), "{body}");
    assert!(
        body.contains("1 of 2 approvals needed<ul class=\"votes\"><li>a@… approve"),
        "{body}"
    );
    assert!(body.contains("c@… reject"), "{body}");
    assert!(
        !body.contains("@example.com"),
        "full voter addresses: {body}"
    );
    // Plan summaries and the operators' logs link; durations.
    assert!(
        body.contains("2 to add, &lt;b&gt;1&lt;/b&gt; to change"),
        "{body}"
    );
    assert!(body.contains("plan logs (operators)"), "{body}");
    assert!(body.contains("3 min 05 s"), "{body}");
    // Running units count to now (75 s and more after their claim).
    assert!(body.contains(" s so far</td>"), "{body}");
    assert!(body.contains("<td>40 s</td>"), "{body}");
    // Escaped: a hostile failure reason is text.
    assert!(
        body.contains("apply failed: &lt;script&gt;alert(1)&lt;/script&gt;"),
        "{body}"
    );
    // Nothing to act on: no form, button, script, vote token or task token.
    for absent in [
        "<form",
        "<button",
        "<script",
        "?t=",
        "ciphertext",
        &hex_hash("u-awaiting"),
    ] {
        assert!(!body.contains(absent), "{absent} in {body}");
    }
    assert!(header(&resp, "content-security-policy").contains("form-action 'none'"));
    assert_eq!(header(&resp, "cache-control"), "no-store, max-age=0");
    // Read-only: a POST with a run link is refused and records nothing.
    let post = r.handle(&get(format!("r={token}"), "POST"), now_ms()).await;
    assert_eq!(post.status, 405);
    assert_eq!(header(&post, "allow"), "GET, HEAD");
    tdb.drop_db().await;
}

#[tokio::test]
async fn expired_tampered_and_vote_tokens_do_not_open_the_run_page_nor_a_run_token_a_vote() {
    let (tdb, db, run_id) = phases_run().await;
    let r = responder(db.clone());
    let open = |q: String| {
        let r = &r;
        async move { r.handle(&get(q, "GET"), now_ms()).await }
    };
    // Expired.
    let resp = open(format!("r={}", run_token(run_id, now() - 1))).await;
    assert_eq!(resp.status, 403);
    assert!(
        resp.body.contains("This run link expired at"),
        "{}",
        resp.body
    );
    // Tampered: one character of the signed payload changed.
    let good = run_token(run_id, now() + 3600);
    let mut chars: Vec<char> = good.chars().collect();
    chars[12] = if chars[12] == 'A' { 'B' } else { 'A' };
    let spliced: String = chars.into_iter().collect();
    let resp = open(format!("r={spliced}")).await;
    assert_eq!(resp.status, 403);
    assert!(
        resp.body.contains("This run link is not valid"),
        "{}",
        resp.body
    );
    // A run link signed under the vote-link key (a minter of vote links)
    // is refused, as is a genuine vote token given as a run token.
    let under_vote_key = RunLinkKey::new(live_ci_testkit::approval::KEY)
        .unwrap()
        .sign(&RunLink {
            run_id,
            expires_at: now() + 3600,
        })
        .unwrap();
    assert_eq!(open(format!("r={under_vote_key}")).await.status, 403);
    let vote = key()
        .sign(&VoteLink {
            execution_id: "u-awaiting".into(),
            voter: "b@example.com".into(),
            vote: Vote::Approve,
            task_token_hash: task_token_hash("u-awaiting"),
            expires_at: now() + 3600,
        })
        .unwrap();
    let resp = open(format!("r={vote}")).await;
    assert_eq!(resp.status, 403, "{}", resp.body);
    // A run token given as a vote token (GET page or POST vote) is refused
    // and records nothing.
    let resp = open(format!("t={good}")).await;
    assert_eq!(resp.status, 403, "{}", resp.body);
    let mut post = get(String::new(), "POST");
    post.headers.insert(
        "content-type".into(),
        "application/x-www-form-urlencoded".into(),
    );
    post.body = format!("t={good}").into_bytes();
    assert_eq!(r.handle(&post, now_ms()).await.status, 403);
    assert_eq!(
        db.tally("u-awaiting")
            .await
            .unwrap()
            .unwrap()
            .approval_voters,
        ["a@example.com"]
    );
    // An unknown run.
    let resp = open(format!("r={}", run_token(run_id + 100, now() + 3600))).await;
    assert_eq!(resp.status, 404);
    // Without a run key the page is not served at all.
    let bare = crate::ports::responder(
        key(),
        ApprovalsOnly(db),
        RecordingTokens::default(),
        KmsTokenCipher::new(kms_client(), "unused"),
    );
    assert_eq!(
        bare.handle(&get(format!("r={good}"), "GET"), now_ms())
            .await
            .status,
        404
    );
    tdb.drop_db().await;
}

#[tokio::test]
async fn a_superseded_run_says_which_run_deploys_it() {
    let tdb = pg::TestDb::new().await;
    let db = tdb.metadb(2).await;
    let newer = db
        .create_run(&pg::run(
            "commit-newer",
            10,
            vec![pg::exec("u1", "dev", &[])],
        ))
        .await
        .unwrap();
    let old = db
        .record_superseded(&pg::run("commit-older", 10, vec![]), newer.run_id)
        .await
        .unwrap()
        .unwrap();
    let r = responder(db);
    let resp = r
        .handle(
            &get(format!("r={}", run_token(old, now() + 60)), "GET"),
            now_ms(),
        )
        .await;
    assert_eq!(resp.status, 200);
    assert!(
        resp.body.contains(&format!(
            "superseded by run {}, which deploys these changes",
            newer.run_id
        )),
        "{}",
        resp.body
    );
    assert!(
        resp.body.contains("This run deploys no unit."),
        "{}",
        resp.body
    );
    tdb.drop_db().await;
}
