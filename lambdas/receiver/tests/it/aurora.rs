//! The receiver while its Aurora Serverless v2 metadb resumes (issue 28, item 4):
//! the local cloud's Data API (localcloud `aurora.py`) answers
//! `DatabaseResumingException` for a set time after the idle cluster paused. The
//! receiver's metadb call (the delivery's claim) retries it within its own
//! deadline (`METADB_RESUME_DEADLINE`) and the claim's budget (`CLAIM_BUDGET`):
//! a short resume is waited out and the delivery claimed (a redelivery is then a
//! duplicate); a resume longer than the budget is not, and the delivery is acted
//! on unclaimed (the documented fail-open). Either way GitHub gets its answer
//! well within its 10 s.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use live_ci_metadb::{DataApi, Store};
use live_ci_receiver::{CLAIM_BUDGET, METADB_RESUME_DEADLINE};
use live_ci_testkit::aws::sdk_config_for;
use live_ci_testkit::data_api::{create_cluster_with, set_auto_pause};
use wiremock::MockServer;

use crate::deliveries::{container_on, github_expects_one_merge_deploy, merged};

/// GitHub's limit for answering a delivery.
const GITHUB_LIMIT: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread")]
async fn while_the_metadb_resumes_the_receiver_answers_in_time() {
    let endpoint = live_ci_testkit::localstack_endpoint().unwrap();
    live_ci_testkit::pg::server_url();
    let id = live_ci_testkit::unique("receiver-paused");
    let cluster = create_cluster_with(
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
    // As main.rs wires it: the Data API with the receiver's resume deadline.
    let metadb = Store::new(
        DataApi::new(
            aws_sdk_rdsdata::Client::new(&sdk_config_for(&endpoint)),
            &cluster.cluster_arn,
            &cluster.secret_arn,
            &cluster.database,
        )
        .with_resume_deadline(METADB_RESUME_DEADLINE),
    );
    metadb.migrate().await.unwrap();
    let outcome = async {
        // A resume shorter than the claim's budget: waited out, claimed.
        let server = MockServer::start().await;
        github_expects_one_merge_deploy(&server).await;
        let receiver = container_on(&server, metadb.clone()).await;
        set_auto_pause(&endpoint, 0.8, Some(1.0)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(1300)).await;
        let started = Instant::now();
        let short = receiver.handle(&merged("aurora-short")).await;
        let short_took = started.elapsed();
        // Another container: only the metadb's claim (not the first one's
        // memory) makes the redelivery a duplicate.
        let other = container_on(&server, metadb.clone()).await;
        let again = other.handle(&merged("aurora-short")).await;
        // A resume longer than the budget: acted on unclaimed, in time.
        let server = MockServer::start().await;
        github_expects_one_merge_deploy(&server).await;
        let receiver_b = container_on(&server, metadb.clone()).await;
        set_auto_pause(&endpoint, 8.0, Some(1.0)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(1300)).await;
        let started = Instant::now();
        let long = receiver_b.handle(&merged("aurora-long")).await;
        let long_took = started.elapsed();
        (
            (short, short_took, again, receiver.launcher.started().len()),
            (long, long_took, receiver_b.launcher.started().len()),
        )
    }
    .await;
    set_auto_pause(&endpoint, 0.0, None).await.unwrap();
    let ((short, short_took, again, short_started), (long, long_took, long_started)) = outcome;
    assert_eq!(short.status, 200, "{}", short.body);
    assert_eq!(
        short.body["started"], "create-deploy-stack",
        "{}",
        short.body
    );
    assert!(short_took < GITHUB_LIMIT, "{short_took:?}");
    // Claimed in the metadb after the resume: another container's redelivery is a duplicate.
    assert_eq!(again.body["duplicate"], true, "{}", again.body);
    assert_eq!(short_started, 1);
    assert_eq!(long.status, 200, "{}", long.body);
    assert_eq!(long.body["started"], "create-deploy-stack", "{}", long.body);
    assert_eq!(long_started, 1);
    // Given up at the claim's budget (plus the act), not at the resume's end.
    assert!(
        long_took >= CLAIM_BUDGET && long_took < CLAIM_BUDGET + Duration::from_secs(3),
        "{long_took:?}"
    );
}
