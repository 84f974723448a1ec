//! The read-only run page in a real browser: headless Chromium
//! (`scripts/browser.sh`) opens the page served by approval_response's
//! handler on a local port. Screenshots:
//! `target/test-artifacts/approval-response/`. The whole approval in a
//! browser (a mail from approval_request, the vote) is live-ci-e2e's
//! (`tests/e2e/tests/approval/browser.rs`).
#![allow(clippy::unwrap_used)]

use live_ci_testkit::approval::now;
use live_ci_testkit::repo_root;
use live_ci_testkit::screens::{artifacts, node_path};
use serde_json::Value;

use crate::server;

/// The read-only run page as a browser shows it (`4-run.png`): every unit's
/// phase, and nothing to act on — no form, button, input or script, and no
/// link but the operators' plan logs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_page_in_a_browser_shows_the_phases_and_nothing_to_act_on() {
    let node_path = node_path();
    let (tdb, db, run_id) = crate::run_page::phases_run().await;
    let responder = std::sync::Arc::new(crate::run_page::responder(db));
    let (listener, addr) = server::listen().await;
    let server = server::serve(listener, move |req| {
        let r = std::sync::Arc::clone(&responder);
        async move {
            let now_ms = i64::try_from(now()).unwrap() * 1000;
            r.handle(&req, now_ms).await
        }
    });
    let url = live_ci_core::approval::run_page_url(
        &format!("http://{addr}/"),
        &crate::run_page::run_token(run_id, now() + 600),
    );
    let dir = artifacts("approval-response");
    let script = repo_root().join("lambdas/approval-response/tests/browser/run.js");
    let out = tokio::process::Command::new("node")
        .arg(&script)
        .arg(&url)
        .arg(&dir)
        .env("NODE_PATH", &node_path)
        .output()
        .await
        .unwrap();
    server.abort();
    assert!(
        out.status.success(),
        "browser: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page: Value = serde_json::from_slice(&out.stdout).unwrap();
    std::fs::write(
        dir.join("run.json"),
        serde_json::to_string_pretty(&page).unwrap(),
    )
    .unwrap();
    assert_eq!(page["status"], 200, "{page}");
    let text = page["text"].as_str().unwrap();
    for (id, phase) in crate::run_page::PHASES {
        assert!(text.contains(&format!("dev/{id}")), "{id}: {text}");
        assert!(text.contains(phase), "{phase}: {text}");
    }
    assert!(
        text.contains("apply failed: <script>alert(1)</script>"),
        "{text}"
    );
    assert_eq!(page["forms"], 0, "{page}");
    assert_eq!(page["scripts"], 0, "{page}");
    for link in page["links"].as_array().unwrap() {
        assert!(
            link.as_str()
                .unwrap()
                .starts_with("https://console.aws.amazon.com/"),
            "{link}"
        );
    }
    tdb.drop_db().await;
}
