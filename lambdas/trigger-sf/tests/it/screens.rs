//! The deploy comment as a reader of the merged pull request sees it: a run
//! in a real PostgreSQL metadb with a unit in each phase (waiting, planning,
//! awaiting approval with one of two approvals, applying, done, failed,
//! stopped, rolled back), read as trigger-sf reads it for the comment
//! (`run_view`), rendered by `live_ci_core::deploy_comment` with a signed run
//! page link, then rendered as GitHub renders a comment (testkit's `screens`)
//! and opened in headless Chromium. Screenshot:
//! `target/test-artifacts/trigger-sf/deploy-comment.png`.
#![allow(clippy::unwrap_used)]

use live_ci_core::approval::{RunLink, RunLinkKey, run_page_url};
use live_ci_core::deploy::Vote;
use live_ci_core::deploy_comment::render;
use live_ci_core::port::{ApprovalStore, NewApprovalRequest, RunStore};
use live_ci_testkit::pg::{TestDb, exec, run};
use live_ci_testkit::screens;

/// A unit path a repository could hold: HTML, emphasis, a table's pipe.
const HOSTILE: &str = "x<script>alert(1)*y*_z_|w";

/// (execution id, the phase the comment shows); `api`'s unit path is
/// [`HOSTILE`] (an execution id cannot hold it).
const PHASES: &[(&str, &str)] = &[
    ("vpc", "done"),
    ("db", "awaiting approval"),
    ("app", "applying"),
    ("cache", "planning"),
    ("web", "waiting"),
    ("api", "failed"),
    ("queue", "aborted"),
    ("dns", "rolled back"),
];

/// The unit path of execution `id`.
fn unit_path(id: &str) -> String {
    if id == "api" {
        format!("prod/{HOSTILE}")
    } else {
        format!("prod/{id}")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_sees_each_units_phase_the_votes_and_the_run_page_link() {
    let t = TestDb::new().await;
    let db = t.metadb(2).await;
    let execs = PHASES
        .iter()
        .enumerate()
        .map(|(i, (id, _))| {
            let mut e = exec(id, "prod", &[]);
            e.cfg_path = live_ci_core::RepoPath::new(&unit_path(id)).unwrap();
            e.priority = (PHASES.len() - i) as f64;
            e
        })
        .collect();
    let mut new = run("c0ffee1234567890", 4, execs);
    new.pr_id = 21;
    let run_id = db.create_run(&new).await.unwrap().run_id;
    // The phases as the pipeline's writers leave them (trigger-sf's settle,
    // terra-run's plan record), set by SQL.
    let sql = live_ci_metadb::connect(&t.url).await.unwrap();
    sql.batch_execute(&format!(
        "UPDATE executions SET status = 'running', claimed_at = now() - interval '75 seconds'
           WHERE execution_id IN ('db', 'app', 'cache');
         UPDATE executions SET decision = 'approve' WHERE execution_id = 'app';
         UPDATE executions SET status = 'succeeded', claimed_at = now() - interval '200 seconds',
                finished_at = now() - interval '15 seconds' WHERE execution_id IN ('vpc', 'dns');
         UPDATE executions SET is_rollback = true WHERE execution_id = 'dns';
         UPDATE executions SET status = 'failed', finished_at = now(),
                status_reason = 'apply failed: <b>boom</b> | `x`' WHERE execution_id = 'api';
         UPDATE executions SET status = 'aborted', status_reason = 'ancestor failed'
           WHERE execution_id = 'queue';
         UPDATE runs SET status = 'running', started_at = now() WHERE run_id = {run_id};"
    ))
    .await
    .unwrap();
    db.store_approval_request(&NewApprovalRequest {
        execution_id: "db".into(),
        sfn_execution_arn: "arn:aws:states:us-west-2:111111111111:execution:x:db".into(),
        task_token_ciphertext: "ciphertext".into(),
        task_token_hash: live_ci_core::approval::task_token_hash_hex("db"),
        to_add: 2,
        to_change: 1,
        to_destroy: 0,
        plan_summary: "2 to add, 1 to change, 0 to destroy".into(),
        logs_url: "https://console.aws.amazon.com/cloudwatch/home#logs".into(),
        expires_at: 4_102_444_800_000,
    })
    .await
    .unwrap();
    db.cast_vote("db", "a@example.com", Vote::Approve)
        .await
        .unwrap();

    let view = db.run_view(run_id, 400).await.unwrap().unwrap();
    let key = RunLinkKey::new(b"test-run-link-key-0123456789abcdef").unwrap();
    let token = key
        .sign(&RunLink {
            run_id,
            expires_at: 4_102_444_800,
        })
        .unwrap();
    let page_url = run_page_url("https://pages.example/", &token);
    let body = render(&view, Some(&page_url));

    let dir = screens::artifacts("trigger-sf");
    std::fs::write(dir.join("deploy-comment.md"), &body).unwrap();
    let page = screens::github_page("acme/live#21", "live-ci", &screens::github_html(&body));
    let hostile = format!("prod/{HOSTILE}");
    let reason = "apply failed: <b>boom</b> | `x`";
    let seen = screens::open(
        &dir,
        "deploy-comment",
        &page,
        &[
            "live-ci deploy: deploying",
            &hostile,
            reason,
            "a@… approved",
        ],
        false,
    );
    let state = &seen["states"][0];
    for probe in ["live-ci deploy: deploying", "a@… approved"] {
        assert_eq!(state["visible"][probe], true, "{probe}: {seen}");
    }
    // One table row per unit, each with its phase, read off the page.
    let text = state["text"].as_str().unwrap();
    for (id, phase) in PHASES {
        let row = text
            .lines()
            .find(|l| {
                l.strip_prefix(&unit_path(id))
                    .is_some_and(|rest| rest.starts_with(['\t', ' ']))
            })
            .unwrap_or_else(|| panic!("no row of {id}: {text}"));
        assert!(row.contains(&format!("\t{phase}")), "{id}: {row:?}");
    }
    let awaiting = text.lines().find(|l| l.starts_with("prod/db\t")).unwrap();
    assert_eq!(
        awaiting,
        "prod/db\tprod\tawaiting approval\t1 of 2, a@… approved"
    );
    // Repository text as typed, in code spans: no element, no split cell.
    assert_eq!(state["visible"][hostile.as_str()], true, "{seen}");
    assert_eq!(state["visible"][reason], true, "{seen}");
    let codes = seen["codes"].as_array().unwrap();
    assert!(codes.iter().any(|c| c == hostile.as_str()), "{seen}");
    assert_eq!(seen["scripts"], 0, "{seen}");
    assert!(
        !seen["elements"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e == "script" || e == "em" || e == "b"),
        "{seen}"
    );
    // The one link: the signed read-only run page.
    let links = seen["links"].as_array().unwrap();
    assert_eq!(links.len(), 1, "{seen}");
    assert_eq!(links[0]["text"], "run page");
    assert_eq!(links[0]["href"], page_url.as_str());
    assert!(dir.join("deploy-comment.png").metadata().unwrap().len() > 1000);
    t.drop_db().await;
}
