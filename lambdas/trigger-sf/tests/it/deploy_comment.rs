//! The deploy comment trigger-sf writes on the pull requests a run deploys,
//! against a real PostgreSQL metadb and the GitHub client talking to
//! FakeGitHub, with the exact comment requests asserted: created once, edited
//! as units advance, never edited when nothing changed, advisory when GitHub
//! refuses, on every pull request a coalesced run covers, and never in a
//! comment someone else wrote.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::ports::{Fakes, Wired};
use live_ci_core::deploy::{RunStatus, Vote};
use live_ci_core::deploy_comment::marker;
use live_ci_core::port::{ApprovalStore, NewApprovalRequest, RunStore};
use live_ci_core::webhook::FilePattern;
use live_ci_github::{Credentials, GitHubClient, GitHubConfig, Job, RetryPolicy};
use live_ci_metadb::PgMetadb;
use live_ci_testkit::github::FakeGitHub;
use live_ci_testkit::params::MemoryParams;
use live_ci_testkit::pg::{TestDb, exec, run};
use live_ci_trigger_sf::{HandlerConfig, Input, Report};

use crate::trigger::{FakeEngine, LOCK, arn, ended, wired};

type Handler = Wired<PgMetadb, FakeEngine, MemoryParams, GitHubClient>;

const REPO: &str = "acme/live";

pub(crate) fn client(github: &FakeGitHub) -> GitHubClient {
    GitHubClient::new(GitHubConfig {
        api_base: github.url(),
        repository: REPO.into(),
        credentials: Credentials::Token("test-token".into()),
        job: Job::TriggerSf,
        retry: RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(20),
        },
    })
    .unwrap()
}

async fn handler(t: &TestDb, github: &FakeGitHub) -> Handler {
    let mut config = HandlerConfig::new(LOCK, FilePattern::new(FilePattern::DEFAULT).unwrap());
    config.deploy_comments = true;
    wired(t, config, client(github)).await
}

/// "METHOD path" of every comment request GitHub saw, in order.
async fn comment_requests(github: &FakeGitHub) -> Vec<String> {
    github
        .requests()
        .await
        .iter()
        .filter(|r| r.url.path().contains("/comments"))
        .map(|r| format!("{} {}", r.method, r.url.path()))
        .collect()
}

/// The comment writes (creates and edits) GitHub saw.
async fn comment_writes(github: &FakeGitHub) -> usize {
    comment_requests(github)
        .await
        .iter()
        .filter(|r| !r.starts_with("GET "))
        .count()
}

/// A run of `units` (each waiting for the one before when `chain`) for
/// pull request `pr`.
async fn new_run(h: &Handler, commit: &str, pr: u64, units: &[&str], chain: bool) -> i64 {
    let execs = units
        .iter()
        .enumerate()
        .map(|(i, u)| {
            let id = format!("{commit}-{u}");
            let before = (i > 0 && chain).then(|| format!("{commit}-{}", units[i - 1]));
            exec(
                &id,
                "dev",
                &before.iter().map(String::as_str).collect::<Vec<_>>(),
            )
        })
        .collect();
    let mut new = run(commit, 4, execs);
    new.pr_id = pr;
    h.metadb.create_run(&new).await.unwrap().run_id
}

/// The plan of `execution_id` waits for the voters.
async fn awaiting_approval(h: &Handler, execution_id: &str) {
    h.metadb
        .store_approval_request(&NewApprovalRequest {
            execution_id: execution_id.into(),
            sfn_execution_arn: arn(execution_id),
            task_token_ciphertext: "ciphertext".into(),
            task_token_hash: live_ci_core::approval::task_token_hash_hex(execution_id),
            to_add: 2,
            to_change: 1,
            to_destroy: 0,
            plan_summary: "2 to add, 1 to change, 0 to destroy".into(),
            logs_url: "https://console.aws.amazon.com/cloudwatch/home#logs".into(),
            expires_at: 4_102_444_800_000,
        })
        .await
        .unwrap();
}

fn warned(report: &Report, run_id: i64, pr: u64) -> bool {
    let prefix = format!("deploy comment of run {run_id} on pull request #{pr}: ");
    report.warnings.iter().any(|w| w.starts_with(&prefix))
}

/// One comment, created when the run starts and edited at each unit
/// transition (votes at the sweep), ends saying the run deployed.
#[tokio::test]
async fn one_comment_is_created_then_edited_as_the_units_advance() {
    let t = TestDb::new().await;
    let github = FakeGitHub::start(REPO).await;
    let h = handler(&t, &github).await;
    let run_id = new_run(&h, "d1", 21, &["a", "b"], true).await;

    h.handle(&Input::Run(run_id)).await.unwrap();
    let body = |github: &FakeGitHub| {
        let comments = github.comments(21);
        assert_eq!(comments.len(), 1, "{comments:?}");
        assert_eq!(comments[0].login, FakeGitHub::BOT_LOGIN);
        comments[0].body.clone()
    };
    let first = body(&github);
    assert!(first.starts_with(&marker(run_id)), "{first}");
    assert!(first.contains("### live-ci deploy: deploying\n"), "{first}");
    assert!(
        first.contains("| `dev/d1-a` | `dev` | planning | 0 of 2 |"),
        "{first}"
    );
    assert!(
        first.contains("| `dev/d1-b` | `dev` | waiting | 0 of 2 |"),
        "{first}"
    );

    // The plan waits for the voters and one approves: the comment shows it at
    // the next trigger-sf invocation, here the sweep.
    awaiting_approval(&h, "d1-a").await;
    h.metadb
        .cast_vote("d1-a", "a@example.com", Vote::Approve)
        .await
        .unwrap();
    h.handle(&Input::Sweep).await.unwrap();
    let awaiting = body(&github);
    assert!(
        awaiting.contains("| `dev/d1-a` | `dev` | awaiting approval | 1 of 2, `a@…` approved |"),
        "{awaiting}"
    );

    h.handle(&ended("d1-a", "SUCCEEDED", None)).await.unwrap();
    let second = body(&github);
    assert!(second.contains("| `dev/d1-a` | `dev` | done |"), "{second}");
    assert!(
        second.contains("| `dev/d1-b` | `dev` | planning |"),
        "{second}"
    );

    let r = h.handle(&ended("d1-b", "SUCCEEDED", None)).await.unwrap();
    assert_eq!(r.finished, [(run_id, RunStatus::Succeeded)]);
    let last = body(&github);
    assert!(last.contains("### live-ci deploy: deployed\n"), "{last}");
    assert!(last.contains("| `dev/d1-b` | `dev` | done |"), "{last}");

    // Created once, then edited in place: one list before each write.
    let list = "GET /repos/acme/live/issues/21/comments".to_string();
    let edit = "PATCH /repos/acme/live/issues/comments/1".to_string();
    assert_eq!(
        comment_requests(&github).await,
        [
            list.clone(),
            "POST /repos/acme/live/issues/21/comments".to_string(),
            list.clone(),
            edit.clone(),
            list.clone(),
            edit.clone(),
            list,
            edit,
        ]
    );
    t.drop_db().await;
}

/// A run of 3 units across events that change nothing (repeated RUNNING
/// events, repeated run invocations, sweeps): exactly one write per change of
/// the rendered body.
#[tokio::test]
async fn no_edit_when_nothing_changed() {
    let t = TestDb::new().await;
    let github = FakeGitHub::start(REPO).await;
    let h = handler(&t, &github).await;
    let run_id = new_run(&h, "d2", 22, &["a", "b", "c"], false).await;

    let r = h.handle(&Input::Run(run_id)).await.unwrap();
    assert_eq!(r.started.len(), 3, "{r:?}");
    assert_eq!(comment_writes(&github).await, 1);
    for id in ["d2-a", "d2-b", "d2-c"] {
        h.handle(&ended(id, "RUNNING", None)).await.unwrap();
        h.handle(&Input::Run(run_id)).await.unwrap();
    }
    h.handle(&Input::Sweep).await.unwrap();
    h.handle(&Input::Sweep).await.unwrap();
    assert_eq!(
        comment_writes(&github).await,
        1,
        "{:?}",
        comment_requests(&github).await
    );
    // One change, one edit; its repeat, none.
    h.handle(&ended("d2-a", "SUCCEEDED", None)).await.unwrap();
    h.handle(&ended("d2-a", "SUCCEEDED", None)).await.unwrap();
    h.handle(&Input::Sweep).await.unwrap();
    assert_eq!(comment_writes(&github).await, 2);
    t.drop_db().await;
}

/// GitHub refusing the comment (403, then 500) is a warning naming the run
/// and the pull request: the handler succeeds and the run advances; the next
/// invocation once GitHub accepts writes the comment (the digest of a failed
/// write is not kept).
#[tokio::test]
async fn a_refused_comment_does_not_stop_the_run() {
    let t = TestDb::new().await;
    let github = FakeGitHub::start(REPO).await;
    let h = handler(&t, &github).await;
    let run_id = new_run(&h, "d3", 23, &["a", "b"], true).await;

    github.refuse_comment_writes(Some(403));
    let r = h.handle(&Input::Run(run_id)).await.unwrap();
    assert_eq!(r.started, ["d3-a"]);
    assert!(warned(&r, run_id, 23), "{:?}", r.warnings);

    github.refuse_comment_writes(Some(500));
    let r = h.handle(&ended("d3-a", "SUCCEEDED", None)).await.unwrap();
    assert_eq!(r.started, ["d3-b"]);
    assert!(warned(&r, run_id, 23), "{:?}", r.warnings);
    assert!(github.comments(23).is_empty());

    // Nothing changed since, yet the sweep writes: the refused body was
    // never recorded as written.
    github.refuse_comment_writes(None);
    let r = h.handle(&Input::Sweep).await.unwrap();
    assert!(!warned(&r, run_id, 23), "{:?}", r.warnings);
    let comments = github.comments(23);
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert!(
        comments[0]
            .body
            .contains("| `dev/d3-b` | `dev` | planning |"),
        "{}",
        comments[0].body
    );
    t.drop_db().await;
}

/// Two merges queue behind a running run; when it ends, the newer one starts
/// and supersedes the older (coalesced): both pull requests get the started
/// run's comment saying it also deploys the older one's changes, and the
/// superseded run writes no comment of its own.
#[tokio::test]
async fn a_coalesced_run_says_so_on_every_pull_request_it_covers() {
    let t = TestDb::new().await;
    let github = FakeGitHub::start(REPO).await;
    let h = handler(&t, &github).await;
    let first = new_run(&h, "d4", 30, &["a"], false).await;
    h.handle(&Input::Run(first)).await.unwrap();
    let older = new_run(&h, "d5", 31, &["a"], false).await;
    let newer = new_run(&h, "d6", 32, &["a"], false).await;
    // A queued run gets no comment yet.
    h.handle(&Input::Run(older)).await.unwrap();
    assert!(github.comments(31).is_empty());

    let r = h.handle(&ended("d4-a", "SUCCEEDED", None)).await.unwrap();
    assert_eq!(r.finished, [(first, RunStatus::Succeeded)]);
    assert_eq!(r.started, ["d6-a"]);
    let superseded = h.metadb.run(older).await.unwrap().unwrap();
    assert_eq!(
        (superseded.status, superseded.superseded_by),
        (RunStatus::Superseded, Some(newer))
    );

    let done = github.comments(30);
    assert_eq!(done.len(), 1);
    assert!(
        done[0].body.contains("### live-ci deploy: deployed\n"),
        "{}",
        done[0].body
    );
    for pr in [31, 32] {
        let comments = github.comments(pr);
        assert_eq!(comments.len(), 1, "#{pr}: {comments:?}");
        let body = &comments[0].body;
        assert!(body.starts_with(&marker(newer)), "#{pr}: {body}");
        assert!(
            body.contains(
                "It also deploys the changes of #31, merged before it (their runs were superseded by this one).\n"
            ),
            "#{pr}: {body}"
        );
        assert!(
            body.contains("| `dev/d6-a` | `dev` | planning |"),
            "#{pr}: {body}"
        );
    }
    assert!(
        !github
            .comments(31)
            .iter()
            .any(|c| c.body.contains(&marker(older)))
    );
    t.drop_db().await;
}

/// Someone else's comment carrying the run's marker is never edited: the bot
/// writes a comment of its own, and later edits only that one.
#[tokio::test]
async fn a_foreign_comment_with_the_marker_is_not_edited() {
    let t = TestDb::new().await;
    let github = FakeGitHub::start(REPO).await;
    let h = handler(&t, &github).await;
    let run_id = new_run(&h, "d7", 24, &["a"], false).await;
    let forged = format!("{}\n### live-ci deploy: deployed\n", marker(run_id));
    let foreign = github.add_comment(24, "mallory", &forged);

    h.handle(&Input::Run(run_id)).await.unwrap();
    h.handle(&ended("d7-a", "SUCCEEDED", None)).await.unwrap();

    let comments = github.comments(24);
    assert_eq!(comments.len(), 2, "{comments:?}");
    let theirs = comments.iter().find(|c| c.id == foreign).unwrap();
    assert_eq!(
        (theirs.login.as_str(), theirs.body.as_str()),
        ("mallory", forged.as_str())
    );
    let ours = comments.iter().find(|c| c.id != foreign).unwrap();
    assert_eq!(ours.login, FakeGitHub::BOT_LOGIN);
    assert!(
        ours.body.contains("### live-ci deploy: deployed\n"),
        "{}",
        ours.body
    );
    let writes: Vec<String> = comment_requests(&github)
        .await
        .into_iter()
        .filter(|r| !r.starts_with("GET "))
        .collect();
    assert_eq!(
        writes,
        [
            "POST /repos/acme/live/issues/24/comments".to_string(),
            format!("PATCH /repos/acme/live/issues/comments/{}", ours.id),
        ]
    );
    t.drop_db().await;
}

/// A git host that lets the run change (another invocation's work) while the
/// first comment write is on its way: the GitHub client underneath.
struct ChangingWhileWriting {
    inner: GitHubClient,
    db: PgMetadb,
    /// Recorded as succeeded during the first comment write.
    finish: std::sync::Mutex<Option<String>>,
}

impl live_ci_core::port::GitHost for ChangingWhileWriting {
    type Error = live_ci_github::GitHubError;

    async fn set_status(
        &self,
        status: &live_ci_core::status::CommitStatus,
    ) -> Result<(), Self::Error> {
        self.inner.set_status(status).await
    }

    async fn pull_request_files(&self, number: u64) -> Result<Vec<String>, Self::Error> {
        self.inner.pull_request_files(number).await
    }

    async fn open_pull_requests(
        &self,
        base: &str,
    ) -> Result<Vec<live_ci_core::status::PullRequest>, Self::Error> {
        self.inner.open_pull_requests(base).await
    }

    async fn upsert_comment(
        &self,
        number: u64,
        marker: &str,
        body: &str,
    ) -> Result<(), Self::Error> {
        let finish = self.finish.lock().unwrap().take();
        if let Some(id) = finish {
            use live_ci_core::port::ExecutionStore;
            let done = self
                .db
                .record_finished(&id, live_ci_core::deploy::Outcome::Succeeded, None)
                .await
                .unwrap();
            assert!(matches!(
                done,
                live_ci_core::deploy::FinishOutcome::Recorded { .. }
            ));
        }
        self.inner.upsert_comment(number, marker, body).await
    }

    async fn bot_comment(&self, number: u64, marker: &str) -> Result<Option<String>, Self::Error> {
        self.inner.bot_comment(number, marker).await
    }
}

/// The run changes between the render and its write (a concurrent
/// invocation): the writer reads the run again after writing and rewrites the
/// comment, so it does not keep the older render until the next event.
#[tokio::test]
async fn a_change_during_the_write_is_written_too() {
    let t = TestDb::new().await;
    let github = FakeGitHub::start(REPO).await;
    let mut config = HandlerConfig::new(LOCK, FilePattern::new(FilePattern::DEFAULT).unwrap());
    config.deploy_comments = true;
    let h = Wired::new(
        config,
        Fakes::new(
            t.metadb(2).await,
            FakeEngine::default(),
            MemoryParams::default(),
            ChangingWhileWriting {
                inner: client(&github),
                db: t.metadb(1).await,
                finish: std::sync::Mutex::new(Some("d8-b".into())),
            },
        ),
    );
    let mut new = run(
        "d8",
        4,
        vec![exec("d8-a", "dev", &[]), exec("d8-b", "dev", &[])],
    );
    new.pr_id = 25;
    let run_id = h.metadb.create_run(&new).await.unwrap().run_id;

    let r = h.handle(&Input::Run(run_id)).await.unwrap();
    assert_eq!(r.started.len(), 2, "{r:?}");
    let comments = github.comments(25);
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert!(
        comments[0].body.contains("| `dev/d8-b` | `dev` | done |"),
        "{}",
        comments[0].body
    );
    assert_eq!(
        comment_requests(&github).await,
        [
            "GET /repos/acme/live/issues/25/comments",
            "POST /repos/acme/live/issues/25/comments",
            "GET /repos/acme/live/issues/25/comments",
            "PATCH /repos/acme/live/issues/comments/1",
        ]
    );
    t.drop_db().await;
}
