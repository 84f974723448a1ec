//! A run's packed checkout (issue 17) against a real PostgreSQL: recorded
//! with the run in the statement that creates it, carried by every execution
//! record (read and claimed, rollbacks included), kept by an operator's retry,
//! and refused by the schema when its digest is not one the task could have
//! computed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use live_ci_testkit::pg as support;

use live_ci_core::deploy::{Outcome, plan_rollbacks};
use live_ci_core::port::{CachedCheckout, ExecutionStore, RunControl, RunStore};
use live_ci_metadb::Sql;
use support::{TestDb, exec, run};

#[tokio::test]
async fn a_runs_checkout_reaches_the_claimed_and_read_records_of_rollbacks_and_retries() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let checkout = CachedCheckout::of("c0c0c0c0", b"the archive's bytes");
    let mut cached = run(
        "c0c0c0c0",
        4,
        vec![exec("c0-a", "dev", &[]), exec("c0-b", "dev", &[])],
    );
    cached.checkout = Some(checkout.clone());
    let created = db.create_run(&cached).await.unwrap();
    assert!(created.created && created.started);
    let stored = db.run(created.run_id).await.unwrap().unwrap();
    assert_eq!(stored.checkout.as_ref(), Some(&checkout));

    // The claim builds its record inline: the same field, the same value as
    // the read terra-run makes at its start.
    let claimed = db.claim_ready(created.run_id, 10).await.unwrap();
    assert_eq!(claimed.len(), 2);
    for record in &claimed {
        assert_eq!(record.checkout.as_ref(), Some(&checkout));
        let read = db.execution(&record.execution_id).await.unwrap().unwrap();
        assert_eq!(record, &read);
    }

    // a applied a new provider's resource, b failed: the rollback of a
    // belongs to the same run and unpacks the same checkout.
    db.record_new_resources("c0-a", &["null_resource.a".into()])
        .await
        .unwrap();
    db.record_finished("c0-a", Outcome::Succeeded, None)
        .await
        .unwrap();
    db.record_finished("c0-b", Outcome::Failed, None)
        .await
        .unwrap();
    let rollbacks = plan_rollbacks(&db.executions(created.run_id).await.unwrap());
    assert_eq!(
        db.add_rollbacks(created.run_id, &rollbacks).await.unwrap(),
        ["c0-a-rb"]
    );
    let claimed = db.claim_ready(created.run_id, 10).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert!(claimed[0].is_rollback);
    assert_eq!(claimed[0].checkout.as_ref(), Some(&checkout));
    db.record_finished("c0-a-rb", Outcome::Succeeded, None)
        .await
        .unwrap();
    assert!(
        db.finish_run(created.run_id)
            .await
            .unwrap()
            .finished
            .is_some()
    );

    // A retry deploys the same commit: it keeps the run's checkout.
    let retry = db.retry_run(created.run_id).await.unwrap().unwrap();
    let retried = db.run(retry.run_id).await.unwrap().unwrap();
    assert_eq!(retried.checkout.as_ref(), Some(&checkout));
    let claimed = db.claim_ready(retry.run_id, 10).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].checkout.as_ref(), Some(&checkout));
    t.drop_db().await;
}

#[tokio::test]
async fn a_run_without_a_checkout_reads_as_none_and_a_bad_digest_is_refused() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let created = db
        .create_run(&run(
            "d0d0d0d0",
            4,
            vec![exec("run-7-d0d0-dev-a-000", "dev", &[])],
        ))
        .await
        .unwrap();
    assert_eq!(
        db.run(created.run_id).await.unwrap().unwrap().checkout,
        None
    );
    let claimed = db.claim_ready(created.run_id, 10).await.unwrap();
    assert_eq!(claimed[0].checkout, None);

    // Past the core's validation (raw SQL), the schema still refuses a digest
    // no task computed, and a key without a digest.
    for set in [
        "checkout_key = 'checkouts/d0d0d0d0/x.tar', checkout_sha256 = 'ABC'",
        "checkout_key = 'checkouts/d0d0d0d0/x.tar'",
    ] {
        let err = db
            .sql()
            .execute(
                &format!("UPDATE runs SET {set} WHERE commit_id = 'd0d0d0d0'"),
                &[],
            )
            .await
            .unwrap_err();
        assert!(err.to_string().contains("runs_checkout"), "{set}: {err}");
    }
    assert_eq!(
        db.run(created.run_id).await.unwrap().unwrap().checkout,
        None
    );

    // And the core refuses it before any statement runs.
    let mut bad = run(
        "e0e0e0e0",
        4,
        vec![exec("run-7-e0e0-dev-a-000", "dev", &[])],
    );
    bad.checkout = Some(CachedCheckout {
        key: "checkouts/e0e0e0e0/x.tar".into(),
        sha256: "not-a-digest".into(),
    });
    let err = db.create_run(&bad).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("checkout: sha256 \"not-a-digest\" is not 64 lowercase hex digits"),
        "{err}"
    );
    assert_eq!(db.run_by_commit("e0e0e0e0").await.unwrap(), None);
    t.drop_db().await;
}
