//! What the sweep knows of the trunk, against a real PostgreSQL
//! (scripts/pg.sh): a head with a run or a recorded no-op merge is known, a
//! launch for an unknown head holds off the next one for the cool-down, and of
//! concurrent sweeps exactly one launches.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use live_ci_testkit::pg as support;

use live_ci_core::port::{RunStore, SweepStore};
use support::{TestDb, exec, run};

/// The module's default cool-down: longer than any test takes.
const COOLDOWN: u32 = 900;

#[tokio::test]
async fn an_unknown_head_is_claimed_once_per_cool_down() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    assert_eq!(
        db.claim_trunk_launch("h1", COOLDOWN).await.unwrap(),
        Some(1)
    );
    // Within the cool-down (a slow create-deploy-stack) nothing is launched again.
    assert_eq!(db.claim_trunk_launch("h1", COOLDOWN).await.unwrap(), None);
    // After it (a zero cool-down has passed at once) the launch is repeated.
    assert_eq!(db.claim_trunk_launch("h1", 0).await.unwrap(), Some(2));
    // Another head has its own cool-down.
    assert_eq!(
        db.claim_trunk_launch("h2", COOLDOWN).await.unwrap(),
        Some(1)
    );
    t.drop_db().await;
}

#[tokio::test]
async fn a_head_with_a_run_or_a_no_op_merge_is_known() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    db.create_run(&run("c1", 4, vec![exec("c1-a", "dev", &[])]))
        .await
        .unwrap();
    assert_eq!(db.claim_trunk_launch("c1", 0).await.unwrap(), None);

    db.record_no_op_merge("c2").await.unwrap();
    db.record_no_op_merge("c2").await.unwrap();
    assert_eq!(db.claim_trunk_launch("c2", 0).await.unwrap(), None);

    // The sweep launched create-deploy-stack for c3, which found nothing to
    // deploy: from then on c3 is known, cool-down or not.
    assert_eq!(db.claim_trunk_launch("c3", 0).await.unwrap(), Some(1));
    db.record_no_op_merge("c3").await.unwrap();
    assert_eq!(db.claim_trunk_launch("c3", 0).await.unwrap(), None);

    // … and a launch that became a run likewise.
    assert_eq!(db.claim_trunk_launch("c4", 0).await.unwrap(), Some(1));
    db.create_run(&run("c4", 4, vec![exec("c4-a", "dev", &[])]))
        .await
        .unwrap();
    assert_eq!(db.claim_trunk_launch("c4", 0).await.unwrap(), None);
    t.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_concurrent_sweeps_exactly_one_launches() {
    let t = TestDb::new().await;
    let db = std::sync::Arc::new(t.metadb(8).await);
    let claims: Vec<_> = (0..8)
        .map(|_| {
            let db = db.clone();
            tokio::spawn(async move { db.claim_trunk_launch("h", COOLDOWN).await.unwrap() })
        })
        .collect();
    let mut won = Vec::new();
    for c in claims {
        won.extend(c.await.unwrap());
    }
    assert_eq!(won, [1]);
    t.drop_db().await;
}
