//! Votes from the pull request (issue 29 item 6) against a real PostgreSQL
//! metadb, LocalStack's KMS (the stored task token) and the fake GitHub
//! asserting the exact requests: a listed login's vote counts and hands over;
//! a team member's counts after the membership API said "active"; a
//! non-voter and a unit not awaiting approval get a reply and change
//! nothing; a vote changed before the decision counts once; a mailed and a
//! GitHub vote by two people reach a 2-vote threshold.
#![allow(clippy::unwrap_used)]

use crate::requester_fakes::Fakes as RequesterFakes;
use live_ci_testkit::approval as support;

use std::time::Duration;

use live_ci_approval_request::{ApprovalRequester, RequestSettings};
use live_ci_approval_response::{GitHubVoteRequest, GitHubVoting, PageRequest};
use live_ci_core::account::Accounts;
use live_ci_core::deploy::ExecutionRecord;
use live_ci_core::port::{ApprovalStore, Email};
use live_ci_core::voter_identity::VoterLogins;
use live_ci_github::{Credentials, GitHubClient, GitHubConfig, Job, RetryPolicy};
use live_ci_metadb::PgMetadb;
use live_ci_testkit::github::{FakeGitHub, MergedPull};
use support::*;

const REPO: &str = "acme/live";
const PR: u64 = 43;

fn accounts(github_voters: &[&str]) -> Accounts {
    let voters: Vec<String> = github_voters.iter().map(|v| format!("{v:?}")).collect();
    Accounts::from_json(
        "accounts.json",
        &format!(
            r#"[{{"name": "dev", "path": "dev", "voters": ["alice@example.com", "bob@example.com"],
                 "github_voters": [{}],
                 "min_approval_count": 1, "min_rejection_count": 1,
                 "plan_role_arn": "arn:aws:iam::111111111111:role/plan",
                 "apply_role_arn": "arn:aws:iam::111111111111:role/apply"}}]"#,
            voters.join(", ")
        ),
    )
    .unwrap()
}

fn client(fake: &FakeGitHub) -> GitHubClient {
    GitHubClient::new(GitHubConfig {
        api_base: fake.url(),
        repository: REPO.into(),
        credentials: Credentials::Token("a-token".into()),
        job: Job::ApprovalResponse,
        retry: RetryPolicy {
            max_attempts: 1,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(1),
        },
    })
    .unwrap()
}

/// The fake GitHub with pull request #43 merged by the run's commit.
async fn github(record: &ExecutionRecord) -> FakeGitHub {
    let fake = FakeGitHub::start(REPO).await;
    fake.add_merged_pull_request(MergedPull {
        number: PR,
        merge_commit_sha: record.commit_id.clone(),
        base_ref: "main".into(),
        base_sha: "1111111".into(),
        head_ref: "feature".into(),
        head_sha: "2222222".into(),
    });
    fake
}

/// Stores the approval request of `record` (with its encrypted task token)
/// as approval_request does, and returns the mails.
async fn request(db: &PgMetadb, record: &ExecutionRecord) -> Vec<Email> {
    let fakes = RequesterFakes::new(
        db.clone(),
        RecordingMailer::default(),
        cipher().await,
        RecordingFailures::default(),
    );
    let requester = ApprovalRequester::new(
        RequestSettings {
            approval_url: "https://approve.example.com".into(),
            from_address: "live-ci@example.com".into(),
            approval_timeout_secs: 3600,
            repository: REPO.into(),
            github_web_url: "https://github.com".into(),
        },
        key(),
        fakes.clone(),
    );
    requester
        .handle(&request_for(record, "task-token-gh"), now())
        .await
        .unwrap();
    fakes.mailer.sent()
}

/// A responder whose ports hold a GitHub client of `fake`.
async fn responder(
    db: &PgMetadb,
    fake: &FakeGitHub,
) -> crate::ports::Wired<PgMetadb, RecordingTokens> {
    crate::ports::responder_with_github(
        key(),
        db.clone(),
        RecordingTokens::default(),
        cipher().await,
        client(fake),
    )
}

fn vote(comment_id: u64) -> GitHubVoteRequest {
    GitHubVoteRequest {
        repository: REPO.into(),
        pull_request: PR,
        comment_id,
    }
}

/// The requests the fake received, as "METHOD path".
async fn requests(fake: &FakeGitHub) -> Vec<String> {
    fake.requests()
        .await
        .iter()
        .map(|r| format!("{} {}", r.method, r.url.path()))
        .collect()
}

fn replies(fake: &FakeGitHub) -> Vec<String> {
    fake.comments(PR)
        .into_iter()
        .filter(|c| c.login == FakeGitHub::BOT_LOGIN)
        .map(|c| c.body)
        .collect()
}

fn sends(r: &crate::ports::Wired<PgMetadb, RecordingTokens>) -> Vec<(String, String)> {
    r.tokens.calls.lock().unwrap().clone()
}

#[tokio::test]
async fn a_listed_logins_approval_counts_and_hands_over() {
    let (_t, db, record) = awaiting("run-1-gh-login", &["alice@example.com"], 1, 1).await;
    request(&db, &record).await;
    let fake = github(&record).await;
    let unit = record.cfg_path.as_str().to_string();
    let id = fake.add_comment(PR, "Octo-Lead", &format!("/live-ci approve {unit}"));
    let r = responder(&db, &fake).await;
    let voting = GitHubVoting {
        repository: REPO.into(),
        accounts: accounts(&["octo-lead"]),
        logins: VoterLogins::default(),
    };
    let outcome = r.github_vote(&voting, &vote(id)).await.unwrap();
    assert!(outcome.counted, "{outcome:?}");
    assert_eq!(
        requests(&fake).await,
        [
            format!("GET /repos/{REPO}/issues/comments/{id}"),
            format!("GET /repos/{REPO}/pulls/{PR}"),
            format!("POST /repos/{REPO}/issues/{PR}/comments"),
        ]
    );
    assert_eq!(
        replies(&fake),
        [format!(
            "counted: `Octo-Lead` approves `{unit}` (1 of 1 approvals, 0 of 1 rejections). The votes decided: approve; the deployment goes on to Apply."
        )]
    );
    let sent = sends(&r);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].0, "task-token-gh");
    let output: serde_json::Value = serde_json::from_str(&sent[0].1).unwrap();
    assert_eq!(
        output["approval_voters"],
        serde_json::json!(["github:octo-lead"])
    );
    let tally = db.tally(&record.execution_id).await.unwrap().unwrap();
    assert_eq!(tally.approval_voters, ["github:octo-lead"]);
}

#[tokio::test]
async fn a_team_members_vote_counts_after_the_membership_api_says_active() {
    let (_t, db, record) = awaiting("run-1-gh-team", &["alice@example.com"], 1, 1).await;
    request(&db, &record).await;
    let fake = github(&record).await;
    fake.set_team_member("acme", "platform", "bob", "active");
    fake.set_team_member("acme", "platform", "carol", "pending");
    let unit = record.cfg_path.as_str().to_string();
    let carol = fake.add_comment(PR, "carol", &format!("/live-ci reject {unit} not yet"));
    let bob = fake.add_comment(
        PR,
        "bob",
        &format!("/live-ci reject {unit} opens the bucket"),
    );
    let r = responder(&db, &fake).await;
    let voting = GitHubVoting {
        repository: REPO.into(),
        accounts: accounts(&["someone-else", "acme/platform"]),
        logins: VoterLogins::default(),
    };
    // An invitation is not membership.
    let pending = r.github_vote(&voting, &vote(carol)).await.unwrap();
    assert!(!pending.counted);
    let outcome = r.github_vote(&voting, &vote(bob)).await.unwrap();
    assert!(outcome.counted, "{outcome:?}");
    let asked: Vec<String> = requests(&fake)
        .await
        .into_iter()
        .filter(|r| r.contains("/orgs/"))
        .collect();
    assert_eq!(
        asked,
        [
            "GET /orgs/acme/teams/platform/memberships/carol",
            "GET /orgs/acme/teams/platform/memberships/bob",
        ]
    );
    let tally = db.tally(&record.execution_id).await.unwrap().unwrap();
    assert_eq!(tally.rejection_voters, ["github:bob"]);
    assert_eq!(sends(&r).len(), 1);
    assert!(replies(&fake)[1].starts_with(&format!("counted: `bob` rejects `{unit}`")));
}

#[tokio::test]
async fn a_non_voter_gets_a_reply_and_nothing_changes() {
    let (_t, db, record) = awaiting("run-1-gh-none", &["alice@example.com"], 1, 1).await;
    request(&db, &record).await;
    let fake = github(&record).await;
    let unit = record.cfg_path.as_str().to_string();
    let id = fake.add_comment(PR, "mallory", &format!("/live-ci approve {unit}"));
    let r = responder(&db, &fake).await;
    let voting = GitHubVoting {
        repository: REPO.into(),
        accounts: accounts(&["octo-lead", "acme/platform"]),
        logins: VoterLogins::default(),
    };
    let outcome = r.github_vote(&voting, &vote(id)).await.unwrap();
    assert!(!outcome.counted);
    assert_eq!(
        replies(&fake),
        [format!(
            "`mallory` is not a voter of `{unit}` (account `dev`): the vote is not counted"
        )]
    );
    let tally = db.tally(&record.execution_id).await.unwrap().unwrap();
    assert!(tally.approval_voters.is_empty() && tally.rejection_voters.is_empty());
    assert!(sends(&r).is_empty());
    let view = db.vote_view(&record.execution_id).await.unwrap().unwrap();
    assert!(view.execution.github_voters.is_empty());
    assert_eq!(view.execution.decision, None);
}

#[tokio::test]
async fn a_unit_not_awaiting_approval_gets_a_reply_and_nothing_changes() {
    let (_t, db, record) = awaiting("run-1-gh-unit", &["alice@example.com"], 1, 1).await;
    request(&db, &record).await;
    let fake = github(&record).await;
    let id = fake.add_comment(PR, "octo-lead", "/live-ci approve dev/elsewhere");
    // A payload naming another repository is not this pipeline's: ignored.
    let r = responder(&db, &fake).await;
    let voting = GitHubVoting {
        repository: REPO.into(),
        accounts: accounts(&["octo-lead"]),
        logins: VoterLogins::default(),
    };
    let mut spoofed = vote(id);
    spoofed.repository = "evil/live".into();
    assert!(!r.github_vote(&voting, &spoofed).await.unwrap().counted);
    assert!(requests(&fake).await.is_empty());
    let outcome = r.github_vote(&voting, &vote(id)).await.unwrap();
    assert!(!outcome.counted);
    assert_eq!(
        replies(&fake),
        [format!(
            "`octo-lead`'s vote is not counted: unit `dev/elsewhere` is not awaiting approval in the deployment of pull request #{PR}"
        )]
    );
    assert!(sends(&r).is_empty());
    let tally = db.tally(&record.execution_id).await.unwrap().unwrap();
    assert!(tally.approval_voters.is_empty());
}

#[tokio::test]
async fn a_vote_changed_before_the_decision_counts_once() {
    let (_t, db, record) = awaiting(
        "run-1-gh-change",
        &["alice@example.com", "bob@example.com"],
        2,
        2,
    )
    .await;
    request(&db, &record).await;
    let fake = github(&record).await;
    let unit = record.cfg_path.as_str().to_string();
    let reject = fake.add_comment(PR, "octo-lead", &format!("/live-ci reject {unit} wait"));
    let approve = fake.add_comment(PR, "octo-lead", &format!("/live-ci approve {unit}"));
    let r = responder(&db, &fake).await;
    let voting = GitHubVoting {
        repository: REPO.into(),
        accounts: accounts(&["octo-lead"]),
        logins: VoterLogins::default(),
    };
    assert!(r.github_vote(&voting, &vote(reject)).await.unwrap().counted);
    assert!(
        r.github_vote(&voting, &vote(approve))
            .await
            .unwrap()
            .counted
    );
    let tally = db.tally(&record.execution_id).await.unwrap().unwrap();
    assert_eq!(tally.approval_voters, ["github:octo-lead"]);
    assert!(tally.rejection_voters.is_empty());
    assert_eq!(tally.decision, None);
    assert!(sends(&r).is_empty());
    assert_eq!(
        replies(&fake)[1],
        format!("counted: `octo-lead` approves `{unit}` (1 of 2 approvals, 0 of 2 rejections).")
    );
}

#[tokio::test]
async fn a_mailed_and_a_github_vote_by_two_people_reach_a_two_vote_threshold() {
    let (_t, db, record) = awaiting(
        "run-1-gh-mixed",
        &["alice@example.com", "bob@example.com"],
        2,
        2,
    )
    .await;
    let mails = request(&db, &record).await;
    let fake = github(&record).await;
    let r = responder(&db, &fake).await;
    // Alice approves by mail (the signed link's POST).
    let mail = mails.iter().find(|m| m.to == "alice@example.com").unwrap();
    let token = token_of(&text_link(mail, "Approve"));
    let page = r
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
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(sends(&r).is_empty());
    // Octo-lead approves on the pull request: the second approval decides.
    let unit = record.cfg_path.as_str().to_string();
    let id = fake.add_comment(PR, "octo-lead", &format!("/live-ci approve {unit}"));
    let voting = GitHubVoting {
        repository: REPO.into(),
        accounts: accounts(&["octo-lead"]),
        logins: VoterLogins::default(),
    };
    let outcome = r.github_vote(&voting, &vote(id)).await.unwrap();
    assert!(outcome.counted);
    let sent = sends(&r);
    assert_eq!(sent.len(), 1);
    let output: serde_json::Value = serde_json::from_str(&sent[0].1).unwrap();
    assert_eq!(output["decision"], "approve");
    assert_eq!(
        output["approval_voters"],
        serde_json::json!(["alice@example.com", "github:octo-lead"])
    );
    // The apply's own check counts the admitted GitHub voter.
    let view = db.vote_view(&record.execution_id).await.unwrap().unwrap();
    assert_eq!(view.execution.github_voters, ["github:octo-lead"]);
    assert_eq!(
        view.execution
            .apply_refusal(live_ci_core::deploy::RunStatus::Running),
        None
    );
}

/// With `policy_override`, an approve of a plan the policies denied needs a
/// reason, which a comment's `/live-ci approve` does not carry: the comment
/// is answered, nothing is recorded and nothing is handed over; a reject
/// from a comment (which carries its reason) still counts.
#[tokio::test]
async fn a_comments_approve_of_a_plan_denied_by_policy_is_refused_and_changes_nothing() {
    use live_ci_core::port::ExecutionStore;

    let id = "run-1-gh-denied";
    let (_t, db, record) = awaiting(id, &["alice@example.com"], 1, 1).await;
    let plan = live_ci_core::port::SavedPlan {
        key: format!("{id}/plan.tfplan"),
        sha256: "ab".repeat(32),
        version_id: None,
        json_sha256: None,
    };
    assert!(
        db.record_policy_denials(
            id,
            &plan.sha256,
            &["data.live_ci.iam.deny: no users".to_string()]
        )
        .await
        .unwrap()
    );
    assert!(db.record_saved_plan(id, &plan).await.unwrap());
    request(&db, &record).await;
    let fake = github(&record).await;
    let unit = record.cfg_path.as_str().to_string();
    let approve = fake.add_comment(PR, "octo-lead", &format!("/live-ci approve {unit}"));
    let r = responder(&db, &fake).await;
    let voting = GitHubVoting {
        repository: REPO.into(),
        accounts: accounts(&["octo-lead"]),
        logins: VoterLogins::default(),
    };
    let outcome = r.github_vote(&voting, &vote(approve)).await.unwrap();
    assert!(!outcome.counted, "{outcome:?}");
    assert_eq!(
        replies(&fake),
        [format!(
            "`octo-lead`'s approval of `{unit}` is not counted: its plan was denied by policy, and approving it needs a reason; approve from the approval page, which asks for one"
        )]
    );
    let tally = db.tally(id).await.unwrap().unwrap();
    assert!(tally.approval_voters.is_empty() && tally.rejection_voters.is_empty());
    assert!(sends(&r).is_empty());

    let reject = fake.add_comment(
        PR,
        "octo-lead",
        &format!("/live-ci reject {unit} the policy is right"),
    );
    let outcome = r.github_vote(&voting, &vote(reject)).await.unwrap();
    assert!(outcome.counted, "{outcome:?}");
    let tally = db.tally(id).await.unwrap().unwrap();
    assert_eq!(tally.rejection_voters, ["github:octo-lead"]);
}

/// One person, one vote (`voter_github_logins`): the accounts of these tests
/// list alice@ and bob@ as mail voters; the map ties login `alice` to alice@.
fn mapped(github_voters: &[&str], map: &str) -> GitHubVoting {
    GitHubVoting {
        repository: REPO.into(),
        accounts: accounts(github_voters),
        logins: VoterLogins::from_json("VOTER_GITHUB_LOGINS", map).unwrap(),
    }
}

const ALICE: &str = r#"{"alice@example.com": "alice"}"#;

/// `who` votes through their mail's signed link (`label`: "Approve" or
/// "Reject"), as the page's form POSTs it.
async fn mail_vote(
    r: &crate::ports::Wired<PgMetadb, RecordingTokens>,
    mails: &[Email],
    who: &str,
    label: &str,
) {
    let mail = mails.iter().find(|m| m.to == who).unwrap();
    let token = token_of(&text_link(mail, label));
    let page = r
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
    assert_eq!(page.status, 200, "{}", page.body);
}

/// The votes rows of the test's one execution: (voter, vote, channel).
async fn vote_rows(db: &PgMetadb, record: &ExecutionRecord) -> Vec<(String, String, String)> {
    let view = db.run_view(record.run_id, 10).await.unwrap().unwrap();
    view.units[0]
        .votes
        .iter()
        .map(|v| {
            (
                v.voter.clone(),
                v.vote.as_str().to_string(),
                v.channel.as_str().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_mail_voter_approving_by_mail_and_by_github_counts_once() {
    let (_t, db, record) = awaiting(
        "run-1-id-twice",
        &["alice@example.com", "bob@example.com"],
        2,
        2,
    )
    .await;
    let mails = request(&db, &record).await;
    let fake = github(&record).await;
    let r = responder(&db, &fake).await;
    mail_vote(&r, &mails, "alice@example.com", "Approve").await;
    let unit = record.cfg_path.as_str().to_string();
    let id = fake.add_comment(PR, "Alice", &format!("/live-ci approve {unit}"));
    // Alice's login is in no github_voters: the map admits her as herself.
    let outcome = r.github_vote(&mapped(&[], ALICE), &vote(id)).await.unwrap();
    assert!(outcome.counted, "{outcome:?}");
    // No membership question: the map answered who she is.
    assert_eq!(
        requests(&fake).await,
        [
            format!("GET /repos/{REPO}/issues/comments/{id}"),
            format!("GET /repos/{REPO}/pulls/{PR}"),
            format!("POST /repos/{REPO}/issues/{PR}/comments"),
        ]
    );
    assert_eq!(
        replies(&fake),
        [format!(
            "counted: `Alice` approves `{unit}` (1 of 2 approvals, 0 of 2 rejections)."
        )]
    );
    let tally = db.tally(&record.execution_id).await.unwrap().unwrap();
    assert_eq!(tally.approval_voters, ["alice@example.com"]);
    assert_eq!(tally.decision, None);
    assert!(sends(&r).is_empty());
    assert_eq!(
        vote_rows(&db, &record).await,
        [(
            "alice@example.com".into(),
            "approve".into(),
            "github".into()
        )]
    );
    let view = db.vote_view(&record.execution_id).await.unwrap().unwrap();
    assert!(view.execution.github_voters.is_empty());
}

#[tokio::test]
async fn a_mail_voters_github_reject_changes_her_vote_and_keeps_its_reason() {
    let (_t, db, record) = awaiting(
        "run-1-id-change",
        &["alice@example.com", "bob@example.com"],
        2,
        2,
    )
    .await;
    let mails = request(&db, &record).await;
    let fake = github(&record).await;
    let r = responder(&db, &fake).await;
    mail_vote(&r, &mails, "alice@example.com", "Approve").await;
    let unit = record.cfg_path.as_str().to_string();
    let id = fake.add_comment(
        PR,
        "alice",
        &format!("/live-ci reject {unit} the <b>bucket</b> opens"),
    );
    let outcome = r
        .github_vote(&mapped(&["octo-lead"], ALICE), &vote(id))
        .await
        .unwrap();
    assert!(outcome.counted, "{outcome:?}");
    let tally = db.tally(&record.execution_id).await.unwrap().unwrap();
    assert!(tally.approval_voters.is_empty());
    assert_eq!(tally.rejection_voters, ["alice@example.com"]);
    assert_eq!(tally.decision, None);
    assert!(sends(&r).is_empty());
    // One row: her vote, changed, through the channel she last used, with
    // the comment's reason.
    let view = db.run_view(record.run_id, 10).await.unwrap().unwrap();
    let votes = &view.units[0].votes;
    assert_eq!(votes.len(), 1);
    assert_eq!(votes[0].voter, "alice@example.com");
    assert_eq!(votes[0].vote, live_ci_core::deploy::Vote::Reject);
    assert_eq!(votes[0].channel.as_str(), "github");
    assert_eq!(votes[0].reason.as_deref(), Some("the <b>bucket</b> opens"));
    // The run page shows it as it shows a mailed reason: escaped, with the
    // channel, and the address by its local part only.
    let html = view.to_html(i64::try_from(now()).unwrap() * 1000);
    assert!(
        html.contains(
            "<li>alice@… reject <span class=\"muted\">on GitHub</span> <q class=\"reason\">the &lt;b&gt;bucket&lt;/b&gt; opens</q>"
        ),
        "{html}"
    );
}

#[tokio::test]
async fn an_unmapped_github_voter_and_a_mapped_mail_voter_are_two_people_and_decide() {
    let (_t, db, record) = awaiting(
        "run-1-id-two",
        &["alice@example.com", "bob@example.com"],
        2,
        2,
    )
    .await;
    request(&db, &record).await;
    let fake = github(&record).await;
    let r = responder(&db, &fake).await;
    let unit = record.cfg_path.as_str().to_string();
    let voting = mapped(&["bob"], ALICE);
    // bob's login is listed but not mapped: `github:bob`, admitted by github_voters.
    let bob = fake.add_comment(PR, "bob", &format!("/live-ci approve {unit}"));
    assert!(r.github_vote(&voting, &vote(bob)).await.unwrap().counted);
    assert!(sends(&r).is_empty());
    let alice = fake.add_comment(PR, "alice", &format!("/live-ci approve {unit}"));
    assert!(r.github_vote(&voting, &vote(alice)).await.unwrap().counted);
    let sent = sends(&r);
    assert_eq!(sent.len(), 1);
    let output: serde_json::Value = serde_json::from_str(&sent[0].1).unwrap();
    assert_eq!(output["decision"], "approve");
    assert_eq!(
        output["approval_voters"],
        serde_json::json!(["alice@example.com", "github:bob"])
    );
    let view = db.vote_view(&record.execution_id).await.unwrap().unwrap();
    assert_eq!(view.execution.github_voters, ["github:bob"]);
    assert_eq!(
        view.execution
            .apply_refusal(live_ci_core::deploy::RunStatus::Running),
        None
    );
}

#[tokio::test]
async fn a_team_member_mapped_to_a_mail_voter_counts_once() {
    let (_t, db, record) = awaiting(
        "run-1-id-team",
        &["alice@example.com", "bob@example.com"],
        2,
        2,
    )
    .await;
    let mails = request(&db, &record).await;
    let fake = github(&record).await;
    fake.set_team_member("acme", "platform", "alice", "active");
    let r = responder(&db, &fake).await;
    let unit = record.cfg_path.as_str().to_string();
    let id = fake.add_comment(PR, "alice", &format!("/live-ci approve {unit}"));
    // Alice is a member of a listed team, and alice@ by mail.
    let voting = mapped(&["acme/platform"], ALICE);
    assert!(r.github_vote(&voting, &vote(id)).await.unwrap().counted);
    mail_vote(&r, &mails, "alice@example.com", "Approve").await;
    let tally = db.tally(&record.execution_id).await.unwrap().unwrap();
    assert_eq!(tally.approval_voters, ["alice@example.com"]);
    assert_eq!(tally.decision, None);
    assert!(sends(&r).is_empty());
    assert_eq!(
        vote_rows(&db, &record).await,
        [("alice@example.com".into(), "approve".into(), "mail".into())]
    );
}

/// The map admits a login only as a mail voter of the execution: mapped to
/// an address this execution's voters do not list, it is a login like any
/// other, refused when github_voters does not list it.
#[tokio::test]
async fn a_login_mapped_to_someone_who_is_not_a_voter_here_is_not_admitted_by_the_map() {
    let (_t, db, record) = awaiting("run-1-id-other", &["bob@example.com"], 1, 1).await;
    request(&db, &record).await;
    let fake = github(&record).await;
    let r = responder(&db, &fake).await;
    let unit = record.cfg_path.as_str().to_string();
    let id = fake.add_comment(PR, "alice", &format!("/live-ci approve {unit}"));
    let outcome = r.github_vote(&mapped(&[], ALICE), &vote(id)).await.unwrap();
    assert!(!outcome.counted, "{outcome:?}");
    assert_eq!(
        replies(&fake),
        [format!(
            "`alice` is not a voter of `{unit}` (account `dev`): the vote is not counted"
        )]
    );
    let tally = db.tally(&record.execution_id).await.unwrap().unwrap();
    assert!(tally.approval_voters.is_empty());
    assert!(sends(&r).is_empty());
}

/// The map deployed while a vote is open: alice voted as `github:alice`
/// (listed in github_voters, not yet mapped); her next comment, with the map,
/// is her vote under her address, and the older one is folded into it.
#[tokio::test]
async fn a_vote_cast_before_the_map_named_the_login_is_folded_into_the_persons_vote() {
    let (_t, db, record) = awaiting(
        "run-1-id-fold",
        &["alice@example.com", "bob@example.com"],
        2,
        2,
    )
    .await;
    request(&db, &record).await;
    let fake = github(&record).await;
    let r = responder(&db, &fake).await;
    let unit = record.cfg_path.as_str().to_string();
    let first = fake.add_comment(PR, "alice", &format!("/live-ci approve {unit}"));
    assert!(
        r.github_vote(&mapped(&["alice"], "{}"), &vote(first))
            .await
            .unwrap()
            .counted
    );
    let again = fake.add_comment(PR, "alice", &format!("/live-ci approve {unit}"));
    assert!(
        r.github_vote(&mapped(&["alice"], ALICE), &vote(again))
            .await
            .unwrap()
            .counted
    );
    let tally = db.tally(&record.execution_id).await.unwrap().unwrap();
    assert_eq!(tally.approval_voters, ["alice@example.com"]);
    assert_eq!(tally.decision, None);
    assert!(sends(&r).is_empty());
    assert_eq!(
        replies(&fake)[1],
        format!("counted: `alice` approves `{unit}` (1 of 2 approvals, 0 of 2 rejections).")
    );
}
