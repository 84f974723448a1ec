//! Direct connections verify the server, against the PostgreSQL of scripts/pg.sh
//! (TLS only, its certificate signed by a test CA the URL names): the right CA
//! connects over TLS, any other CA is refused before a query is sent, and a
//! connection without TLS is refused by the server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use live_ci_testkit::pg as support;

use live_ci_metadb::{PgMetadb, Sql};

/// The server URL with its `sslrootcert` (and `sslmode`) replaced.
fn with_tls(url: &str, params: &str) -> String {
    let base = url.split_once('?').map_or(url, |(b, _)| b);
    format!("{base}?{params}")
}

#[tokio::test]
async fn the_test_ca_verifies_and_the_session_is_encrypted() {
    let url = support::server_url();
    assert!(url.contains("sslmode=verify-full"), "{url}");
    let client = live_ci_metadb::connect(&url).await.unwrap();
    let row = client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .await
        .unwrap();
    assert!(row.get::<_, bool>(0));
    // The pool too (what every binary uses).
    let db = support::TestDb::new().await;
    let metadb = PgMetadb::connect(&db.url, 2).unwrap();
    assert!(!metadb.migrate().await.unwrap().is_empty());
    let ssl = metadb
        .sql()
        .query(
            "SELECT ssl::text FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(ssl, ["true"]);
    db.drop_db().await;
}

#[tokio::test]
async fn a_wrong_ca_is_refused() {
    let url = support::server_url();
    // The default trust is the vendored RDS bundle, which did not sign the test
    // server's certificate; naming the bundle explicitly is the same.
    let bundle = concat!(env!("CARGO_MANIFEST_DIR"), "/certs/rds-global-bundle.pem");
    for wrong in [
        with_tls(&url, "sslmode=verify-full"),
        with_tls(&url, ""),
        with_tls(&url, &format!("sslmode=verify-full&sslrootcert={bundle}")),
    ] {
        let err = live_ci_metadb::connect(&wrong)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("invalid peer certificate") && err.contains("UnknownIssuer"),
            "{wrong}: {err}"
        );
        let pool = PgMetadb::connect(&wrong, 1).unwrap();
        let err = pool.migrate().await.unwrap_err().to_string();
        assert!(err.contains("UnknownIssuer"), "{wrong}: {err}");
    }
}

#[tokio::test]
async fn the_server_refuses_plain_connections() {
    let url = with_tls(&support::server_url(), "sslmode=disable");
    let err = live_ci_metadb::connect(&url).await.unwrap_err().to_string();
    assert!(err.contains("no encryption"), "{err}");
}
