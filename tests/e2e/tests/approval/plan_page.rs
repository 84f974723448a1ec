//! The confirmation page shows the saved plan: rendered from the sealed
//! `show -json` terra-run stores beside the plan, only when it hashes to what
//! the metadb recorded with the plan the apply checks; a tampered JSON is
//! refused on the page, saying why. Real PostgreSQL metadb, the plan store in
//! memory (S3's adapter is the ecs-task tests').
#![allow(clippy::unwrap_used)]

use crate::requester_fakes::Fakes as RequesterFakes;
use live_ci_testkit::approval as support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use live_ci_approval_request::{ApprovalRequester, RequestSettings};
use live_ci_approval_response::PageRequest;
use live_ci_core::deploy::ExecutionRecord;
use live_ci_core::plan_view;
use live_ci_core::port::{ArtifactStore, Email, ExecutionStore, SavedPlan, sha256_hex};
use live_ci_core::terraform::plan_key;
use live_ci_metadb::PgMetadb;
use serde_json::json;
use support::*;

/// Objects by key, in memory.
#[derive(Debug, Clone, Default)]
pub(crate) struct MemPlans(pub Arc<Mutex<HashMap<String, Vec<u8>>>>);

impl ArtifactStore for MemPlans {
    type Error = std::convert::Infallible;

    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<Option<String>, Self::Error> {
        self.0.lock().unwrap().insert(key.to_string(), bytes);
        Ok(None)
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, Self::Error> {
        Ok(self.0.lock().unwrap().get(key).cloned())
    }

    async fn get_version(
        &self,
        key: &str,
        _: Option<&str>,
    ) -> Result<Option<Vec<u8>>, Self::Error> {
        self.get(key).await
    }

    fn uri(&self, key: &str) -> String {
        format!("mem://{key}")
    }

    fn key_of(&self, uri: &str) -> Option<String> {
        uri.strip_prefix("mem://").map(str::to_string)
    }
}

/// A plan's `show -json` with a hostile attribute, a sensitive one and one
/// known after apply.
pub(crate) fn show_json() -> String {
    json!({
        "format_version": "1.2",
        "resource_changes": [
            {"address": "aws_db_instance.main", "type": "aws_db_instance",
             "change": {"actions": ["update"],
                "before": {"password": "hunter2-old", "instance_class": "db.t3.micro"},
                "after": {"password": "hunter2-new", "instance_class": "db.t3.large"},
                "after_unknown": {}, "before_sensitive": {"password": true},
                "after_sensitive": {"password": true}}},
            {"address": "aws_s3_bucket.logs", "type": "aws_s3_bucket",
             "change": {"actions": ["create"], "before": null,
                "after": {"bucket": "acme-logs", "note": "<script>alert('x')</script>\"><b>bold</b>"},
                "after_unknown": {"arn": true}, "before_sensitive": false, "after_sensitive": {}}}
        ]
    })
    .to_string()
}

/// Stores `show` sealed to a plan file's hash beside the execution's plan
/// and records both hashes, as terra-run's plan phase does.
pub(crate) async fn save_plan(
    db: &PgMetadb,
    plans: &MemPlans,
    record: &ExecutionRecord,
    show: &str,
) {
    let key = plan_key(&record.execution_id, &record.commit_id);
    let plan_bytes = b"the saved plan file".to_vec();
    let plan_sha = sha256_hex(&plan_bytes);
    let sealed = plan_view::seal(&plan_sha, show.as_bytes()).unwrap();
    let saved = SavedPlan {
        key: key.clone(),
        sha256: plan_sha,
        version_id: None,
        json_sha256: Some(sha256_hex(&sealed)),
    };
    plans.put(&key, plan_bytes).await.unwrap();
    plans.put(&plan_view::json_key(&key), sealed).await.unwrap();
    assert!(
        db.record_saved_plan(&record.execution_id, &saved)
            .await
            .unwrap()
    );
    assert_eq!(
        db.saved_plan(&record.execution_id).await.unwrap(),
        Some(saved)
    );
}

async fn mail(db: &PgMetadb, record: &ExecutionRecord) -> Vec<Email> {
    let fakes = RequesterFakes::new(
        db.clone(),
        RecordingMailer::default(),
        cipher().await,
        live_ci_testkit::approval::RecordingFailures::default(),
    );
    let requester = ApprovalRequester::new(
        RequestSettings {
            approval_url: "https://approve.example.com".into(),
            from_address: "live-ci@example.com".into(),
            approval_timeout_secs: 3600,
            repository: "acme/live".into(),
            github_web_url: "https://github.com".into(),
        },
        key(),
        fakes.clone(),
    );
    requester
        .handle(&request_for(record, "token-plan"), now())
        .await
        .unwrap();
    fakes.mailer.sent()
}

fn get(token: &str) -> PageRequest {
    PageRequest {
        method: "GET".into(),
        query: format!("t={token}"),
        ..Default::default()
    }
}

#[tokio::test]
async fn the_page_shows_the_verified_plan_and_refuses_a_tampered_one() {
    let id = "run-1-c8c5-dev-plan-001";
    let (tdb, db, record) = awaiting(id, &["alice@example.com"], 1, 1).await;
    let plans = MemPlans::default();
    save_plan(&db, &plans, &record, &show_json()).await;
    let mails = mail(&db, &record).await;
    let approve = token_of(&text_link(&mails[0], "Approve"));
    let responder = crate::ports::responder_with_plans(
        key(),
        db.clone(),
        RecordingTokens::default(),
        cipher().await,
        Some(plans.clone()),
    );
    let now_ms = i64::try_from(now()).unwrap() * 1000;

    let page = responder.handle(&get(&approve), now_ms).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let body = &page.body;
    assert!(
        body.contains("<h2>The plan: 2 resource changes</h2>"),
        "{body}"
    );
    assert!(
        body.contains("<span class=\"act update\">update</span> <code>aws_db_instance.main</code>"),
        "{body}"
    );
    assert!(body.contains("<code>instance_class</code></td><td class=\"val\">&quot;db.t3.micro&quot;</td><td>→</td><td class=\"val\">&quot;db.t3.large&quot;</td>"), "{body}");
    assert!(
        body.contains("<code>password</code></td><td class=\"sensitive\">(sensitive value)</td>"),
        "{body}"
    );
    assert!(body.contains("<code>arn</code></td><td class=\"none\">(none)</td><td>→</td><td class=\"unknown\">(known after apply)</td>"), "{body}");
    assert!(!body.contains("hunter2"), "{body}");
    assert!(!body.contains("<script>alert"), "{body}");
    assert!(!body.contains("<b>bold</b>"), "{body}");
    assert!(!body.contains("plan-refused"), "{body}");
    // The vote form is still the one button.
    assert!(body.contains("id=\"vote-form\""), "{body}");

    // The stored JSON changed after the plan task stored it: not shown.
    let json_key = plan_view::json_key(&plan_key(id, &record.commit_id));
    let stored = plans.get(&json_key).await.unwrap().unwrap();
    let tampered = String::from_utf8(stored)
        .unwrap()
        .replace("db.t3.large", "db.t3.small");
    plans.put(&json_key, tampered.into_bytes()).await.unwrap();
    let page = responder.handle(&get(&approve), now_ms).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("id=\"plan-refused\""), "{}", page.body);
    assert!(
        page.body.contains(
            "The plan is not shown as the plan this vote approves: the stored plan JSON (sha-256 "
        ),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains("was changed after the plan task stored it"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("db.t3.small"), "{}", page.body);
    assert!(!page.body.contains("aws_db_instance.main"), "{}", page.body);

    // Gone from the store: said too.
    plans.0.lock().unwrap().remove(&json_key);
    let page = responder.handle(&get(&approve), now_ms).await;
    assert!(
        page.body.contains("the stored plan JSON is missing"),
        "{}",
        page.body
    );
    tdb.drop_db().await;
}

/// Without a plan store the page says so and the vote still works.
#[tokio::test]
async fn without_a_plan_store_the_page_says_the_plan_is_not_shown() {
    let (tdb, db, record) = awaiting("run-1-c8c5-dev-plan-002", &["alice@example.com"], 1, 1).await;
    let mails = mail(&db, &record).await;
    let approve = token_of(&text_link(&mails[0], "Approve"));
    let responder = crate::ports::responder(
        key(),
        db.clone(),
        RecordingTokens::default(),
        cipher().await,
    );
    let page = responder
        .handle(&get(&approve), i64::try_from(now()).unwrap() * 1000)
        .await;
    assert_eq!(page.status, 200);
    assert!(
        page.body
            .contains("this approval page has no access to the plan store"),
        "{}",
        page.body
    );
    assert!(page.body.contains("id=\"vote-form\""));
    tdb.drop_db().await;
}
