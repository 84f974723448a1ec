//! The Data API adapter for real: the local cloud's rds-data service (LocalStack
//! with the project's plugin) over scripts/pg.sh's PostgreSQL, with AWS's 1 MiB
//! response limit. A 10,000-execution run is written and read back through it:
//! the read is paged and stays under the limit, which the same read unpaged
//! exceeds.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use live_ci_testkit::pg as support;

use live_ci_core::port::{ExecutionStore, RunStore};
use live_ci_metadb::sql::statements as q;
use live_ci_metadb::{DataApiMetadb, Param, Sql};
use live_ci_testkit::aws::sdk_config_for;

async fn data_api_metadb() -> DataApiMetadb {
    let endpoint = live_ci_testkit::localstack_endpoint().unwrap();
    // The rds-data service runs statements on this server.
    support::server_url();
    let id = live_ci_testkit::unique("metadb-data-api");
    let cluster = live_ci_testkit::data_api::create_cluster(
        &endpoint,
        &id,
        &id.replace('-', "_"),
        "liveci_master",
    )
    .await
    .unwrap();
    let db = DataApiMetadb::data_api(
        aws_sdk_rdsdata::Client::new(&sdk_config_for(&endpoint)),
        &cluster.cluster_arn,
        &cluster.secret_arn,
        &cluster.database,
    );
    db.migrate().await.unwrap();
    db
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ten_thousand_execution_run_reads_back_in_pages_under_the_limit() {
    let db = data_api_metadb().await;
    let run = support::random_run("c10k", 10_000, &["dev", "stage", "prod"], 50, 7);
    let created = db.create_run(&run).await.unwrap();
    assert!(created.created && created.started);

    let records = db.executions(created.run_id).await.unwrap();
    assert_eq!(records.len(), 10_000);
    // Every execution once, highest priority first (the unpaged order).
    let mut ids: Vec<&str> = records.iter().map(|r| r.execution_id.as_str()).collect();
    assert!(records.windows(2).all(|w| w[0].priority >= w[1].priority));
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 10_000);

    // The same read in one response is what AWS refuses.
    let err = db
        .sql()
        .query(
            q::EXECUTIONS_OF_RUN,
            &[("run_id", Param::Int(created.run_id))],
        )
        .await
        .unwrap_err();
    assert!(err.is_response_too_large(), "{err}");
    assert!(
        err.to_string()
            .contains("Database returned more than the allowed response size limit"),
        "{err}"
    );

    // Claims and finishes go through transactions of the Data API.
    let claimed = db.claim_ready(created.run_id, 50).await.unwrap();
    assert!(!claimed.is_empty() && claimed.len() <= 50);
    let progress = db.run_progress(created.run_id).await.unwrap();
    assert_eq!(progress.running, claimed.len() as u64);
}

/// A statement the database refuses keeps the SDK's error as its source: the
/// service error (`DatabaseErrorException`) stays typed behind the text.
#[tokio::test]
async fn a_refused_statement_keeps_the_sdk_error_as_its_source() {
    use aws_sdk_rdsdata::config::http::HttpResponse;
    use aws_sdk_rdsdata::error::SdkError;
    use aws_sdk_rdsdata::operation::execute_statement::ExecuteStatementError;
    use live_ci_core::port::{Classify, ErrorKind};
    use live_ci_metadb::MetadbError;

    let db = data_api_metadb().await;
    let err = db
        .sql()
        .query("SELECT (1 / 0)::text", &[])
        .await
        .unwrap_err();
    assert!(matches!(&err, MetadbError::DataApi { .. }), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::Permanent);
    let sdk = std::error::Error::source(&err)
        .and_then(|s| s.downcast_ref::<SdkError<ExecuteStatementError, HttpResponse>>())
        .unwrap_or_else(|| panic!("no SdkError source: {err:?}"));
    let service = sdk.as_service_error().expect("a service error");
    assert!(
        matches!(service, ExecuteStatementError::DatabaseErrorException(_)),
        "{service:?}"
    );
    assert!(
        service.to_string().contains("division by zero"),
        "{service}"
    );
}

/// A status change in one call through the Data API: the same cases as
/// against PostgreSQL (`settle.rs`), the functions' JSON through rds-data.
#[tokio::test]
async fn a_status_change_is_settled_in_one_call_through_the_data_api() {
    let db = data_api_metadb().await;
    crate::settle::settle_finishes_claims_and_counts(&db, "ds").await;
}

/// The deploy comment's targets and digest compare-and-set through the Data API.
#[tokio::test(flavor = "multi_thread")]
async fn deploy_comment_targets_and_digests_through_the_data_api() {
    let db = data_api_metadb().await;
    crate::deploy_comments::targets_and_compare_and_set(&db, "dadc").await;
}

/// A run's end and hand-over in one call through the Data API.
#[tokio::test]
async fn a_run_ends_and_hands_over_in_one_call_through_the_data_api() {
    let db = data_api_metadb().await;
    crate::settle::end_run_hands_over_and_reports(&db, "de").await;
}

/// Concurrent settles of one run through the Data API (each an autocommitted
/// statement there) stay within the run's free slots. The local cloud's
/// rds-data spaces the calls out too much for the race to show without the
/// run lock (3 tries passed with it removed); `settle.rs` against PostgreSQL
/// is the test that catches that.
#[tokio::test(flavor = "multi_thread", worker_threads = 6)]
async fn concurrent_settles_through_the_data_api_claim_within_the_free_slots() {
    let db = std::sync::Arc::new(data_api_metadb().await);
    crate::settle::concurrent_settles_claim_within_the_free_slots(db, "dc").await;
}

/// A vote and a vote page in one call each through the Data API: the same
/// cases as against PostgreSQL (`approvals.rs`), the functions' JSON through
/// rds-data.
#[tokio::test]
async fn a_vote_decides_and_takes_the_hand_over_once_through_the_data_api() {
    let db = data_api_metadb().await;
    crate::approvals::a_vote_decides_and_takes_the_hand_over_once(&db, "dv").await;
}

/// Aurora Serverless v2 with minimum capacity 0 in the local cloud (localcloud
/// `aurora.py`): idle, the cluster pauses; the first query finds it resuming
/// (`DatabaseResumingException`), the adapter retries with back-off and succeeds
/// once it resumed; a deadline shorter than the resume fails at the deadline,
/// naming the exception and the cluster, instead of hanging.
#[tokio::test(flavor = "multi_thread")]
async fn a_paused_cluster_resumes_within_the_deadline_and_a_short_deadline_fails_clearly() {
    use std::time::{Duration, Instant};
    let endpoint = live_ci_testkit::localstack_endpoint().unwrap();
    support::server_url();
    let id = live_ci_testkit::unique("metadb-paused");
    let cluster = live_ci_testkit::data_api::create_cluster_with(
        &endpoint,
        &id,
        &id.replace('-', "_"),
        "liveci_master",
        &[
            ("ServerlessV2ScalingConfiguration.MinCapacity", "0"),
            ("ServerlessV2ScalingConfiguration.MaxCapacity", "1"),
        ],
    )
    .await
    .unwrap();
    let api = |deadline: Duration| {
        live_ci_metadb::DataApi::new(
            aws_sdk_rdsdata::Client::new(&sdk_config_for(&endpoint)),
            &cluster.cluster_arn,
            &cluster.secret_arn,
            &cluster.database,
        )
        .with_resume_deadline(deadline)
    };
    let patient = api(Duration::from_secs(10));
    let hasty = api(Duration::from_millis(500));
    // Awake: the first use of a cluster finds it available.
    patient.query("SELECT 'up'", &[]).await.unwrap();
    live_ci_testkit::data_api::set_auto_pause(&endpoint, 2.0, Some(1.0))
        .await
        .unwrap();
    let outcome = async {
        tokio::time::sleep(Duration::from_millis(1300)).await;
        let started = Instant::now();
        let resumed = patient.query("SELECT 'resumed'", &[]).await;
        let resumed_after = started.elapsed();
        tokio::time::sleep(Duration::from_millis(1300)).await;
        let started = Instant::now();
        let refused = hasty.query("SELECT 'hasty'", &[]).await;
        (resumed, resumed_after, refused, started.elapsed())
    }
    .await;
    live_ci_testkit::data_api::set_auto_pause(&endpoint, 0.0, None)
        .await
        .unwrap();
    let (resumed, resumed_after, refused, refused_after) = outcome;
    assert_eq!(resumed.unwrap(), ["resumed"]);
    assert!(
        resumed_after >= Duration::from_millis(1800) && resumed_after < Duration::from_secs(5),
        "resumed after {resumed_after:?}"
    );
    let err = refused.unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "rds data api: DatabaseResumingException: cluster {} still resuming after",
            cluster.cluster_arn
        )),
        "{text}"
    );
    assert!(
        text.contains("is resuming after being auto-paused"),
        "{text}"
    );
    assert_eq!(
        live_ci_core::port::Classify::kind(&err),
        live_ci_core::port::ErrorKind::Retryable
    );
    // At the deadline (plus one call), not at the resume's end.
    assert!(
        refused_after < Duration::from_millis(1500),
        "{refused_after:?}"
    );
}

/// The deliveries log through the Data API: the same scenario as against
/// PostgreSQL (`deliveries.rs`).
#[tokio::test]
async fn deliveries_are_claimed_once_through_the_data_api() {
    let db = data_api_metadb().await;
    crate::deliveries::deliveries_are_claimed_once(&db, "da").await;
}
