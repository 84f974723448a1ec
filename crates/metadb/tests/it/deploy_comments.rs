//! The deploy comment's store (migration 0016) against a real PostgreSQL, and
//! the same checks through the local Data API (`data_api_local.rs`): the pull
//! requests a run deploys (its own first, then those of the runs it
//! superseded, transitively; never pull request 0), and the digest's
//! compare-and-set, which exactly one of concurrent callers wins.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use live_ci_core::port::{CommentTarget, DeployCommentStore, RunStore};
use live_ci_testkit::pg::{TestDb, exec, run};

fn digest(c: char) -> String {
    c.to_string().repeat(64)
}

fn target(pr_number: u64, digest: Option<String>) -> CommentTarget {
    CommentTarget { pr_number, digest }
}

/// The checks, over any adapter; `tag` keeps commits apart per database.
pub(crate) async fn targets_and_compare_and_set<M>(db: &M, tag: &str)
where
    M: RunStore + DeployCommentStore,
    <M as RunStore>::Error: std::fmt::Debug,
    <M as DeployCommentStore>::Error: std::fmt::Debug,
{
    let mut own = run(
        &format!("{tag}-x"),
        4,
        vec![exec(&format!("{tag}-x-a"), "dev", &[])],
    );
    own.pr_id = 40;
    let x = db.create_run(&own).await.unwrap().run_id;
    // Merges x covers: one directly, one through it, a direct push (pull
    // request 0), and an earlier merge of x's own pull request.
    let covered = |commit: &str, pr: u64| {
        let mut r = run(&format!("{tag}-{commit}"), 4, vec![]);
        r.pr_id = pr;
        r
    };
    let s1 = db
        .record_superseded(&covered("s1", 43), x)
        .await
        .unwrap()
        .unwrap();
    db.record_superseded(&covered("s2", 41), s1)
        .await
        .unwrap()
        .unwrap();
    db.record_superseded(&covered("s3", 0), x)
        .await
        .unwrap()
        .unwrap();
    db.record_superseded(&covered("s4", 40), x)
        .await
        .unwrap()
        .unwrap();

    assert_eq!(
        db.deploy_comment_targets(x, 50).await.unwrap(),
        [target(40, None), target(41, None), target(43, None)]
    );
    assert_eq!(
        db.deploy_comment_targets(x, 2).await.unwrap(),
        [target(40, None), target(41, None)]
    );
    assert_eq!(db.deploy_comment_targets(x + 1000, 50).await.unwrap(), []);
    // A superseded run's own targets: its pull request and those it covers.
    assert_eq!(
        db.deploy_comment_targets(s1, 50).await.unwrap(),
        [target(43, None), target(41, None)]
    );

    // Compare-and-set: a new digest wins once, the same again never.
    assert!(db.claim_deploy_comment(x, 40, &digest('a')).await.unwrap());
    assert!(!db.claim_deploy_comment(x, 40, &digest('a')).await.unwrap());
    assert!(db.claim_deploy_comment(x, 40, &digest('b')).await.unwrap());
    // Releasing an older digest leaves the newer claim alone.
    db.release_deploy_comment(x, 40, &digest('a'))
        .await
        .unwrap();
    assert_eq!(
        db.deploy_comment_targets(x, 1).await.unwrap(),
        [target(40, Some(digest('b')))]
    );
    // Released (its write failed): the same body is claimed again.
    db.release_deploy_comment(x, 40, &digest('b'))
        .await
        .unwrap();
    assert_eq!(
        db.deploy_comment_targets(x, 1).await.unwrap(),
        [target(40, None)]
    );
    assert!(db.claim_deploy_comment(x, 40, &digest('b')).await.unwrap());
    // Other pull requests of the run are apart.
    assert!(db.claim_deploy_comment(x, 41, &digest('b')).await.unwrap());

    // Four callers at once holding the same new render: exactly one writes it.
    let c = digest('c');
    let won = tokio::join!(
        db.claim_deploy_comment(x, 43, &c),
        db.claim_deploy_comment(x, 43, &c),
        db.claim_deploy_comment(x, 43, &c),
        db.claim_deploy_comment(x, 43, &c),
    );
    let won = [won.0, won.1, won.2, won.3];
    assert_eq!(won.into_iter().filter(|w| *w.as_ref().unwrap()).count(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn deploy_comment_targets_and_digests_on_postgresql() {
    let t = TestDb::new().await;
    let db = t.metadb(8).await;
    targets_and_compare_and_set(&db, "pgdc").await;
    t.drop_db().await;
}
