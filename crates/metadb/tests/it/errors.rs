//! A PostgreSQL failure keeps the driver's error as its source, so a caller
//! several layers up (a `PortError`, a Lambda's error) still reaches the
//! SQLSTATE, the constraint and the position, not only their text.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::error::Error as _;

use live_ci_core::port::{Classify, ErrorKind, PortResultExt};
use live_ci_metadb::{MetadbError, PgMetadb, Sql};
use live_ci_testkit::pg::TestDb;
use tokio_postgres::error::SqlState;

fn driver_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> &'a tokio_postgres::Error {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if let Some(pg) = c.downcast_ref::<tokio_postgres::Error>() {
            return pg;
        }
        cause = c.source();
    }
    panic!("no tokio_postgres::Error in the chain of {e:?}")
}

#[tokio::test]
async fn a_server_error_keeps_the_drivers_error_with_its_sqlstate_as_the_source() {
    let t = TestDb::new().await;
    let db = PgMetadb::connect(&t.url, 1).unwrap();
    db.sql()
        .execute(
            "CREATE TABLE t (n int CONSTRAINT n_positive CHECK (n > 0))",
            &[],
        )
        .await
        .unwrap();
    let err = db
        .sql()
        .execute("INSERT INTO t VALUES (-1)", &[])
        .await
        .expect_err("the check refuses -1");
    assert_eq!(err.kind(), ErrorKind::Permanent);
    let source = err.source().expect("the driver's error is kept");
    let db_error = source
        .downcast_ref::<tokio_postgres::Error>()
        .and_then(|e| e.as_db_error())
        .expect("a server error");
    assert_eq!(db_error.code(), &SqlState::CHECK_VIOLATION);
    assert_eq!(db_error.constraint(), Some("n_positive"));
    assert_eq!(db_error.table(), Some("t"));

    // Through the port boundary the chain still reaches it.
    let ported = Err::<(), _>(err).port("metadb").unwrap_err();
    assert_eq!(ported.kind(), ErrorKind::Permanent);
    let pg = driver_error(&ported);
    assert_eq!(pg.code(), Some(&SqlState::CHECK_VIOLATION));
    drop(db);
    t.drop_db().await;
}

#[tokio::test]
async fn a_refused_connection_keeps_the_drivers_error_and_is_retryable() {
    // Port 1 on the loopback: nothing listens, the connect is refused at once.
    let db = PgMetadb::connect("postgres://live_ci@127.0.0.1:1/none", 1).unwrap();
    let err = db.sql().query("SELECT 1::text", &[]).await.unwrap_err();
    assert!(
        matches!(&err, MetadbError::Postgres { code: None, .. }),
        "{err:?}"
    );
    assert_eq!(err.kind(), ErrorKind::Retryable);
    let pg = driver_error(err.source().expect("the driver's error is kept"));
    assert!(pg.as_db_error().is_none(), "{pg:?}");
    let io = driver_error(&err)
        .source()
        .and_then(|c| c.downcast_ref::<std::io::Error>())
        .expect("the io error under the driver's");
    assert_eq!(io.kind(), std::io::ErrorKind::ConnectionRefused);
}
