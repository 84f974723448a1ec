//! The PostgreSQL role of the job that runs repository code (migration 0015,
//! issue 27): terra-run's whole metadb flow works as `live_ci_terra_run`, and
//! the moves that would forge an approval are refused by PostgreSQL, naming
//! the table.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use live_ci_testkit::pg as support;

use live_ci_core::port::{ExecutionStore, RunStore, SavedPlan};
use live_ci_metadb::{PgMetadb, Sql};
use support::{TestDb, exec, run};

/// A login that is a member of `role` (the way a job's login gets its
/// grants), on the test server, and its URL for database `t`.
async fn login_in(t: &TestDb, role: &str) -> (String, String) {
    let admin = live_ci_metadb::connect(&t.url).await.unwrap();
    let login = format!("{}_{role}", t.name);
    admin
        .batch_execute(&format!(
            "CREATE ROLE {login} LOGIN PASSWORD 'pw-{login}' IN ROLE {role}"
        ))
        .await
        .unwrap();
    let url = t
        .url
        .replacen("://postgres@", &format!("://{login}:pw-{login}@"), 1);
    assert_ne!(url, t.url, "the test server's URL names user postgres");
    (login, url)
}

async fn drop_login(t: TestDb, login: &str) {
    let name = t.name.clone();
    t.drop_db().await;
    let admin = live_ci_metadb::connect(&support::server_url())
        .await
        .unwrap();
    admin
        .batch_execute(&format!("DROP ROLE IF EXISTS {login}"))
        .await
        .unwrap_or_else(|e| panic!("drop role {login} after {name}: {e}"));
}

/// The refusal of `statement` as `login`: PostgreSQL's own message.
async fn refused(url: &str, statement: &str) -> String {
    let client = live_ci_metadb::connect(url).await.unwrap();
    match client.batch_execute(statement).await {
        Ok(()) => panic!("{statement:?} was allowed"),
        Err(e) => e
            .as_db_error()
            .map_or_else(|| e.to_string(), |d| d.message().to_string()),
    }
}

#[tokio::test]
async fn terra_runs_role_does_its_flow_and_cannot_vote_or_decide() {
    let t = TestDb::new().await;
    let master = t.metadb(2).await;
    let created = master
        .create_run(&run(
            "c0ffee01",
            4,
            vec![exec("tr-a", "dev", &[]), exec("tr-b", "dev", &[])],
        ))
        .await
        .unwrap();
    let claimed = master.claim_ready(created.run_id, 10).await.unwrap();
    assert_eq!(claimed.len(), 2);
    let (login, url) = login_in(&t, "live_ci_terra_run").await;
    let job = PgMetadb::connect(&url, 1).unwrap();

    // The plan phase: the execution and its run, then the saved plan.
    let record = job.execution("tr-a").await.unwrap().unwrap();
    assert_eq!(record.execution_id, "tr-a");
    assert!(job.run(record.run_id).await.unwrap().is_some());
    let plan = SavedPlan {
        key: "plans/tr-a/c0ffee01.tfplan".into(),
        sha256: "a".repeat(64),
        version_id: Some("v1".into()),
        json_sha256: Some("b".repeat(64)),
    };
    assert!(job.record_saved_plan("tr-a", &plan).await.unwrap());
    // The apply phase: the plan back, the new resources.
    assert_eq!(job.saved_plan("tr-a").await.unwrap(), Some(plan));
    assert!(
        job.record_new_resources("tr-a", &["null_resource.a".into()])
            .await
            .unwrap()
    );
    // The schema check reads the versions.
    let versions = job
        .sql()
        .query("SELECT max(version)::text FROM schema_migrations", &[])
        .await
        .unwrap();
    assert_eq!(
        versions,
        vec![
            live_ci_metadb::MIGRATIONS
                .last()
                .unwrap()
                .version
                .to_string()
        ]
    );

    // What would forge an approval: a vote, the decision, the status.
    let id: String = master
        .sql()
        .query(
            "SELECT id::text FROM executions WHERE execution_id = 'tr-a'",
            &[],
        )
        .await
        .unwrap()
        .remove(0);
    let vote = format!(
        "INSERT INTO votes (execution, voter, vote) VALUES ({id}, 'a@example.com', 'approve')"
    );
    assert_eq!(
        refused(&url, &vote).await,
        "permission denied for table votes"
    );
    assert_eq!(
        refused(&url, "UPDATE votes SET vote = 'approve'").await,
        "permission denied for table votes"
    );
    assert_eq!(
        refused(&url, "DELETE FROM votes").await,
        "permission denied for table votes"
    );
    for set in [
        "decision = 'approve'",
        "status = 'succeeded'",
        "min_approval_count = 0",
        "apply_command = 'true'",
        "apply_role_arn = 'arn:aws:iam::111111111111:role/other'",
    ] {
        assert_eq!(
            refused(
                &url,
                &format!("UPDATE executions SET {set} WHERE execution_id = 'tr-a'")
            )
            .await,
            "permission denied for table executions",
            "{set}"
        );
    }
    assert_eq!(
        refused(
            &url,
            "INSERT INTO approval_requests (execution_id) VALUES ('tr-a')"
        )
        .await,
        "permission denied for table approval_requests"
    );
    assert_eq!(
        refused(&url, "UPDATE runs SET superseded_by = NULL").await,
        "permission denied for table runs"
    );
    // The metadb's functions run as their caller: refused on the same grants.
    assert_eq!(
        refused(&url, "SELECT live_ci_decide('tr-a')").await,
        "permission denied for table executions"
    );
    let vote_fn = refused(
        &url,
        "SELECT live_ci_vote('tr-a', 'a@example.com', 'approve', 'hash', 60)",
    )
    .await;
    assert!(
        vote_fn.starts_with("permission denied for table"),
        "{vote_fn}"
    );
    // Nor may it make itself more.
    assert_eq!(
        refused(&url, "GRANT INSERT ON votes TO live_ci_terra_run").await,
        "permission denied for table votes"
    );
    let promote = refused(&url, "ALTER ROLE live_ci_terra_run SUPERUSER").await;
    assert!(promote.starts_with("must be superuser"), "{promote}");
    // A GRANT without the grant option only warns ("no privileges were
    // granted"): the update stays refused.
    let own = live_ci_metadb::connect(&url).await.unwrap();
    let _ = own
        .batch_execute("GRANT UPDATE (decision) ON executions TO live_ci_terra_run")
        .await;
    assert_eq!(
        refused(&url, "UPDATE executions SET decision = 'approve'").await,
        "permission denied for table executions"
    );
    assert_eq!(
        master
            .sql()
            .query("SELECT count(*)::text FROM votes", &[])
            .await
            .unwrap(),
        vec!["0".to_string()]
    );
    drop(job);
    drop_login(t, &login).await;
}

#[tokio::test]
async fn the_migration_is_repeatable_in_a_second_database() {
    // Roles are per server, grants per database: a second metadb on the same
    // server (every test database here, two deployments locally) migrates too.
    let (a, b) = (TestDb::new().await, TestDb::new().await);
    let (ma, mb) = tokio::join!(a.metadb(1), b.metadb(1));
    drop((ma, mb));
    let (login, url) = login_in(&b, "live_ci_terra_run").await;
    let job = PgMetadb::connect(&url, 1).unwrap();
    assert_eq!(job.execution("none").await.unwrap(), None);
    drop(job);
    a.drop_db().await;
    drop_login(b, &login).await;
}
