//! The deliveries log (migration 0013) against PostgreSQL (scripts/pg.sh);
//! `data_api_local.rs` runs the same scenario through the Data API. A claim
//! is taken once; a handled delivery stays a duplicate; a released one, a
//! stale claim and a row past the horizon can be claimed again; the claim
//! purges rows past the horizon.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use live_ci_testkit::pg as support;

use live_ci_core::port::{DeliveryClaim, DeliveryLog, STALE_CLAIM};
use live_ci_metadb::{Param, Sql, Store};
use support::TestDb;

use DeliveryClaim::{Claimed, Duplicate};

/// Moves a row's claim `secs` seconds into the past.
async fn age<S: Sql>(db: &Store<S>, id: &str, secs: i64) {
    db.sql()
        .execute(
            "UPDATE webhook_deliveries SET claimed_at = claimed_at - make_interval(secs => CAST(:s AS double precision)) WHERE delivery_id = :id",
            &[("s", Param::Int(secs)), ("id", Param::text(id))],
        )
        .await
        .unwrap();
}

async fn count<S: Sql>(db: &Store<S>, id: &str) -> usize {
    db.sql()
        .query(
            "SELECT delivery_id FROM webhook_deliveries WHERE delivery_id = :id",
            &[("id", Param::text(id))],
        )
        .await
        .unwrap()
        .len()
}

/// The scenario, over any adapter; `p` keeps ids apart between callers.
pub(crate) async fn deliveries_are_claimed_once<S: Sql>(db: &Store<S>, p: &str) {
    let id = |s: &str| format!("{p}-{s}");
    // Once, then a duplicate while claimed and after it was handled.
    assert_eq!(db.claim_delivery(&id("a")).await.unwrap(), Claimed);
    assert_eq!(db.claim_delivery(&id("a")).await.unwrap(), Duplicate);
    db.finish_delivery(&id("a"), true).await.unwrap();
    assert_eq!(db.claim_delivery(&id("a")).await.unwrap(), Duplicate);
    // Released after a failure: claimed again.
    assert_eq!(db.claim_delivery(&id("b")).await.unwrap(), Claimed);
    db.finish_delivery(&id("b"), false).await.unwrap();
    assert_eq!(count(db, &id("b")).await, 0);
    assert_eq!(db.claim_delivery(&id("b")).await.unwrap(), Claimed);
    // A claim nobody finished (its receiver died) goes stale; a handled one
    // of the same age does not.
    let stale = i64::try_from(STALE_CLAIM.as_secs()).unwrap() + 1;
    age(db, &id("b"), stale).await;
    age(db, &id("a"), stale).await;
    assert_eq!(db.claim_delivery(&id("b")).await.unwrap(), Claimed);
    assert_eq!(db.claim_delivery(&id("a")).await.unwrap(), Duplicate);
    // Past the horizon a handled delivery is forgotten, and another claim
    // purges such rows.
    let horizon = 8 * 24 * 3600;
    age(db, &id("a"), horizon).await;
    assert_eq!(db.claim_delivery(&id("a")).await.unwrap(), Claimed);
    db.finish_delivery(&id("a"), true).await.unwrap();
    age(db, &id("a"), horizon).await;
    assert_eq!(db.claim_delivery(&id("c")).await.unwrap(), Claimed);
    assert_eq!(
        count(db, &id("a")).await,
        0,
        "the expired row was not purged"
    );
}

#[tokio::test]
async fn deliveries_are_claimed_once_in_postgres() {
    let t = TestDb::new().await;
    deliveries_are_claimed_once(&t.metadb(1).await, "pg").await;
}

#[tokio::test]
async fn an_empty_delivery_id_is_refused_by_the_table() {
    let t = TestDb::new().await;
    let err = t.metadb(1).await.claim_delivery(" ").await.unwrap_err();
    assert!(err.to_string().contains("webhook_deliveries"), "{err}");
}
