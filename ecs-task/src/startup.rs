//! What every subcommand does first: open the metadb the module configured
//! (direct PostgreSQL or the RDS Data API). create-deploy-stack, which holds the
//! master secret, brings its schema up to date under the migrations' advisory
//! lock and sets the restricted jobs' own logins (terra-run's, drift's);
//! terra-run and drift, each logged in as its restricted login, only check the
//! schema is current (their roles may not migrate), failing with the expected
//! and found versions otherwise.

use live_ci_core::deploy::ExecutionRecord;
use live_ci_core::port::{ExecutionStore, PortResultExt};
use live_ci_metadb::{
    AnyMetadb, LoginRole, MetadbConfig, SecretsManagerLogin, Sql, Store, check_schema,
    database_of_url, provision_login,
};

use crate::error::{Result, TaskError};

/// Connections per task: a subcommand runs its metadb calls one after another.
const CONNECTIONS: usize = 2;

/// The migrated metadb (`pr-plan` has none unless one is configured: it runs a
/// pull request's code).
pub(crate) async fn open_metadb(
    config: &MetadbConfig,
    aws: &aws_config::SdkConfig,
) -> Result<AnyMetadb> {
    let metadb = AnyMetadb::from_config(config, aws, CONNECTIONS).port("metadb")?;
    migrated(metadb.migrate().await)?;
    Ok(metadb)
}

/// create-deploy-stack's start: [`open_metadb`], then each restricted job's
/// login set from its secret (`logins`: terra-run's, drift's, as the module
/// configures them). Through a direct connection each secret also gets the
/// login's URL on this metadb, which ECS gives the job as its `METADB_URL`
/// (infra/ecs.tf): neither job ever holds the master URL.
pub async fn open_metadb_as_migrator(
    config: &MetadbConfig,
    logins: &[(LoginRole, &str)],
    aws: &aws_config::SdkConfig,
) -> Result<AnyMetadb> {
    let metadb = open_metadb(config, aws).await?;
    if logins.is_empty() {
        return Ok(metadb);
    }
    let (database, direct_url) = match config {
        MetadbConfig::DataApi { database, .. } => (database.clone(), None),
        MetadbConfig::Postgres { url } => (
            database_of_url(url)
                .port("metadb")
                .map_err(TaskError::Migrate)?,
            Some(url.as_str()),
        ),
    };
    for &(role, secret) in logins {
        let secret = SecretsManagerLogin::from_sdk_config(aws, secret);
        let login = provision_login(metadb.sql(), &secret, &database, role, direct_url)
            .await
            .port("metadb")
            .map_err(TaskError::Migrate)?;
        tracing::debug!(login, job = role.name(), "the job's metadb login is set");
    }
    Ok(metadb)
}

/// The drift job's start: its own login may not migrate, so it checks the
/// schema is current (as terra-run does) and fails naming the versions
/// otherwise.
pub async fn open_metadb_checked(
    config: &MetadbConfig,
    aws: &aws_config::SdkConfig,
) -> Result<AnyMetadb> {
    let metadb = AnyMetadb::from_config(config, aws, CONNECTIONS).port("metadb")?;
    checked(check_schema(metadb.sql()).await)?;
    Ok(metadb)
}

/// [`open_metadb`] for terra-run, which reads its execution's record next.
/// Through the Data API the record is read at the same time as the schema is
/// checked, so a task start costs one Data API round trip fewer (twice per
/// unit). A direct connection reads it after the check, on the same
/// connection: a second connection's TLS handshake would cost more than the
/// query it overlaps. The record is kept only when the schema was already
/// current: a read that raced a migration is dropped (`None`), as is a failed
/// one, and terra-run reads it again, then reporting any error itself.
pub async fn open_metadb_reading(
    config: &MetadbConfig,
    aws: &aws_config::SdkConfig,
    execution_id: &str,
) -> Result<(AnyMetadb, Option<ExecutionRecord>)> {
    let metadb = AnyMetadb::from_config(config, aws, CONNECTIONS).port("metadb")?;
    let record = match config {
        MetadbConfig::DataApi { .. } => read_while_checking(&metadb, execution_id).await?,
        MetadbConfig::Postgres { .. } => {
            checked(check_schema(metadb.sql()).await)?;
            metadb.execution(execution_id).await.ok().flatten()
        }
    };
    Ok((metadb, record))
}

/// terra-run's schema check and record read of [`open_metadb_reading`], at
/// once, on any store: the record is kept only when the schema is current.
pub(crate) async fn read_while_checking<S: Sql + Send + Sync>(
    metadb: &Store<S>,
    execution_id: &str,
) -> Result<Option<ExecutionRecord>>
where
    Store<S>: ExecutionStore,
{
    let (schema, record) = tokio::join!(check_schema(metadb.sql()), metadb.execution(execution_id));
    checked(schema)?;
    Ok(record.ok().flatten())
}

fn checked(schema: live_ci_metadb::Result<()>) -> Result<()> {
    schema.port("metadb").map_err(TaskError::Schema)
}

/// The migration and the record read of [`open_metadb_reading`], on any store.
pub async fn read_while_migrating<S: Sql + Send + Sync>(
    metadb: &Store<S>,
    execution_id: &str,
) -> Result<Option<ExecutionRecord>>
where
    Store<S>: ExecutionStore,
{
    let (applied, record) = tokio::join!(metadb.migrate(), metadb.execution(execution_id));
    let applied = migrated(applied)?;
    Ok(if applied.is_empty() {
        record.ok().flatten()
    } else {
        None
    })
}

fn migrated(applied: live_ci_metadb::Result<Vec<u32>>) -> Result<Vec<u32>> {
    let applied = applied.port("metadb").map_err(TaskError::Migrate)?;
    if applied.is_empty() {
        tracing::debug!("metadb schema up to date");
    } else {
        tracing::info!(?applied, "applied metadb migrations");
    }
    Ok(applied)
}
