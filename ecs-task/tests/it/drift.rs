//! The drift check against real git, real terraform plans (local state kept
//! outside the checkouts) and a real PostgreSQL, with the job's own metadb
//! role `live_ci_drift`: one unit drifted (code with no applied state), one
//! clean (applied), one busy in a running run (superseded, whatever its plan).
//! The results are recorded, one issue is opened for the drifted unit only,
//! the notification is exact; a second check after the drifted unit is
//! applied closes the issue and notifies nothing.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use crate::support;

use live_ci_core::drift::{DriftState, IssueAction, issue_marker};
use live_ci_core::notification::{Counts, DriftedUnit, Event};
use live_ci_core::path::RepoPath;
use live_ci_core::port::{DriftStore, RunStore};
use live_ci_core::terraform::ChangeCounts;
use live_ci_metadb::PgMetadb;
use live_ci_task::DriftConfig;
use live_ci_task::checkout::Repo;
use live_ci_task::drift::{DriftPorts, drift_check};
use live_ci_testkit::git_host::RecordingIssues;
use live_ci_testkit::notify::RecordingNotifications;
use support::fakes::RecordingRoles;
use support::pg::{TestDb, exec, run};
use support::repo::{GitRepo, TfTemplates};

/// Applies `unit`'s code to its state (the state file the templates use),
/// outside any checkout: the cloud then matches the code.
fn apply(repo: &GitRepo, tf: &TfTemplates, unit: &str) {
    let dir = repo.path().join(unit);
    let script = format!(
        "terraform init -input=false -no-color -backend-config=path={} >/dev/null && terraform apply -input=false -no-color -auto-approve >/dev/null",
        tf.state_file(unit).display()
    );
    let out = std::process::Command::new("sh")
        .args(["-c", &script])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "apply {unit}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The work files stay out of the repository.
    for f in [".terraform", ".terraform.lock.hcl"] {
        let p: &Path = &dir.join(f);
        if p.is_dir() {
            std::fs::remove_dir_all(p).unwrap();
        } else if p.exists() {
            std::fs::remove_file(p).unwrap();
        }
    }
}

/// A login that is a member of the drift role, and its URL.
async fn drift_login(t: &TestDb) -> (String, String) {
    let admin = live_ci_metadb::connect(&t.url).await.unwrap();
    let login = format!("{}_drift", t.name);
    admin
        .batch_execute(&format!(
            "CREATE ROLE {login} LOGIN PASSWORD 'pw-{login}' IN ROLE {}",
            live_ci_metadb::DRIFT_ROLE
        ))
        .await
        .unwrap();
    let url = t
        .url
        .replacen("://postgres@", &format!("://{login}:pw-{login}@"), 1);
    (login, url)
}

fn unit(p: &str) -> RepoPath {
    RepoPath::new(p).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_is_recorded_reported_once_and_closed_when_gone() {
    let repo = GitRepo::new();
    repo.unit("dev/a", "1", &[])
        .unit("dev/b", "2", &[])
        .unit("dev/c", "3", &[]);
    let commit = repo.commit("three units");
    let tf = TfTemplates::new("");
    apply(&repo, &tf, "dev/b");

    let t = TestDb::new().await;
    let master = t.metadb(2).await;
    // A run deploys dev/c now: a merge during a check wins.
    master
        .create_run(&run("c0ffee02", 4, vec![exec("c", "dev", &[])]))
        .await
        .unwrap();
    let (login, url) = drift_login(&t).await;
    let store = PgMetadb::connect(&url, 2).unwrap();

    let accounts = r#"[{"name": "dev", "path": "dev", "voters": ["dev@example.com"],
      "min_approval_count": 1, "min_rejection_count": 1,
      "plan_role_arn": "arn:aws:iam::222222222222:role/plan", "apply_role_arn": "arn:aws:iam::222222222222:role/apply"}]"#;
    let config: DriftConfig = support::config(&[
        ("REPO_CLONE_URL", &repo.url()),
        ("REPO_FULL_NAME", "acme/live"),
        ("PLAN_COMMAND", &tf.plan),
        ("MAX_PARALLEL", "2"),
        ("ACCOUNT_PARENT_CFG", accounts),
    ]);
    let clone = Repo {
        clone_url: repo.url(),
        token: None,
    };
    let roles = RecordingRoles::new(support::sts());
    let issues = RecordingIssues::default();
    let notifications = RecordingNotifications::default();
    let ports = DriftPorts {
        store: &store,
        roles: &roles,
        issues: &issues,
        notifications: &notifications,
    };

    let first = drift_check(&config, &clone, &ports).await.unwrap();
    assert_eq!(first.commit, commit);
    let states: Vec<(String, DriftState, ChangeCounts)> = first
        .results
        .iter()
        .map(|r| (r.unit.to_string(), r.state, r.counts))
        .collect();
    let one_add = ChangeCounts {
        add: 1,
        change: 0,
        destroy: 0,
    };
    assert_eq!(
        states,
        [
            ("dev/a".to_string(), DriftState::Drifted, one_add),
            (
                "dev/b".to_string(),
                DriftState::Clean,
                ChangeCounts::default()
            ),
            ("dev/c".to_string(), DriftState::Superseded, one_add),
        ]
    );
    assert!(first.warnings.is_empty(), "{:?}", first.warnings);
    // Plan roles only (LocalStack's STS), once per account.
    let assumed: Vec<String> = roles.calls().into_iter().map(|(arn, _, _)| arn).collect();
    assert_eq!(assumed, ["arn:aws:iam::222222222222:role/plan"]);
    // One issue, for the drifted unit only; the clean one is looked for
    // (no record of an open issue) and left alone; the busy one not touched.
    assert_eq!(
        issues.calls(),
        [
            format!("find {}", issue_marker(&unit("dev/a"))),
            "create Drift in dev/a".to_string(),
            format!("find {}", issue_marker(&unit("dev/b"))),
        ]
    );
    let opened = issues.issues();
    assert_eq!(opened.len(), 1);
    assert_eq!(opened[0].number, 100);
    println!("drift issue body:\n{}", opened[0].body);
    assert!(opened[0].body.starts_with(&issue_marker(&unit("dev/a"))));
    assert_eq!(
        first.issues,
        [(unit("dev/a"), IssueAction::Open, Some(100))]
    );
    assert_eq!(
        notifications.published(),
        [Event::DriftDetected {
            repository: "acme/live".into(),
            commit: commit.clone(),
            checked: 3,
            drifted: vec![DriftedUnit {
                unit: "dev/a".into(),
                counts: Counts {
                    add: 1,
                    change: 0,
                    destroy: 0,
                },
                issue_url: Some("https://github.com/acme/live/issues/100".into()),
            }],
        }]
    );
    println!(
        "drift notification (slack):\n{}",
        live_ci_core::notification::render(
            &notifications.published()[0],
            live_ci_core::notification::Format::Slack
        )
    );
    let latest = store.latest_drift().await.unwrap();
    let listed: Vec<(&str, DriftState, Option<u64>)> = latest
        .iter()
        .map(|r| (r.unit.as_str(), r.state, r.issue))
        .collect();
    assert_eq!(
        listed,
        [
            ("dev/a", DriftState::Drifted, Some(100)),
            ("dev/b", DriftState::Clean, None),
            ("dev/c", DriftState::Superseded, None),
        ]
    );
    // The check held nothing a deploy needs: the run is still the lock's.
    let lock = master.merge_lock().await.unwrap();
    assert!(lock.run_id.is_some(), "{lock:?}");

    // The drift is gone: the next check closes the issue, says nothing.
    apply(&repo, &tf, "dev/a");
    let second = drift_check(&config, &clone, &ports).await.unwrap();
    assert_eq!(second.results[0].state, DriftState::Clean);
    assert_eq!(
        second.issues,
        [(unit("dev/a"), IssueAction::Close(100), None)]
    );
    assert_eq!(
        issues.calls()[3..],
        [
            "close #100".to_string(),
            format!("find {}", issue_marker(&unit("dev/b"))),
        ]
    );
    let closed = &issues.issues()[0];
    assert!(!closed.open);
    assert_eq!(
        closed.comments,
        [format!(
            "live-ci's drift check at trunk commit `{commit}` finds no drift any more: closing."
        )]
    );
    assert_eq!(
        notifications.published().len(),
        1,
        "no drift, no notification"
    );
    assert_eq!(store.drift_issue(&unit("dev/a")).await.unwrap(), None);

    drop(store);
    let name = t.name.clone();
    t.drop_db().await;
    let admin = live_ci_metadb::connect(&support::pg::server_url())
        .await
        .unwrap();
    admin
        .batch_execute(&format!("DROP ROLE IF EXISTS {login}"))
        .await
        .unwrap_or_else(|e| panic!("drop role {login} after {name}: {e}"));
}

/// "A merge during a check wins", the blind spot: a run made after the check
/// started that also finished before it ended is neither running nor queued
/// at either end, yet its units are superseded, found through the run ids
/// made since the check's start mark — as the drift login (`live_ci_drift`)
/// reads them.
#[tokio::test]
async fn a_run_that_starts_and_finishes_inside_a_check_supersedes_its_units() {
    use live_ci_core::drift::classify;
    use live_ci_task::drift::{BusyMark, merged_during};
    let t = TestDb::new().await;
    let master = t.metadb(2).await;
    // A run finished before the check: not a merge during it.
    let old = master
        .create_run(&run("c0ffee05", 4, vec![exec("b", "dev", &[])]))
        .await
        .unwrap();
    let admin = live_ci_metadb::connect(&t.url).await.unwrap();
    let finish =
        "UPDATE runs SET status = 'succeeded', finished_at = clock_timestamp() WHERE run_id = $1";
    admin.execute(finish, &[&old.run_id]).await.unwrap();
    let (_login, url) = drift_login(&t).await;
    let store = PgMetadb::connect(&url, 2).unwrap();

    let start = BusyMark::take(&store).await.unwrap();
    // While the check plans: a merge's run deploys dev/a, start to finish.
    let during = master
        .create_run(&run("c0ffee06", 4, vec![exec("a", "dev", &[])]))
        .await
        .unwrap();
    admin.execute(finish, &[&during.run_id]).await.unwrap();
    // Looking at the running and queued runs alone misses it.
    assert!(store.busy_units().await.unwrap().is_empty());

    let busy = merged_during(&store, start).await.unwrap();
    assert_eq!(busy.into_iter().collect::<Vec<_>>(), ["dev/a"]);
    let drifted = Ok((ChangeCounts::default(), true));
    assert_eq!(
        classify(unit("dev/a"), drifted, true).state,
        DriftState::Superseded
    );
}
