//! What every subcommand does first: open the metadb the module configured
//! (direct PostgreSQL or the RDS Data API) and bring its schema up to date under
//! the migrations' advisory lock, so the first task after an apply or an upgrade
//! migrates and concurrent tasks wait for it instead of failing on a missing table.

use live_ci_core::port::PortResultExt;
use live_ci_metadb::{AnyMetadb, MetadbConfig};

use crate::error::{Result, TaskError};

/// Connections per task: a subcommand runs its metadb calls one after another.
const CONNECTIONS: usize = 2;

/// The migrated metadb (`pr-plan` has none unless one is configured: it runs a
/// pull request's code).
pub async fn open_metadb(config: &MetadbConfig, aws: &aws_config::SdkConfig) -> Result<AnyMetadb> {
    let metadb = AnyMetadb::from_config(config, aws, CONNECTIONS).port("metadb")?;
    let applied = metadb
        .migrate()
        .await
        .port("metadb")
        .map_err(TaskError::Migrate)?;
    if applied.is_empty() {
        tracing::debug!("metadb schema up to date");
    } else {
        tracing::info!(?applied, "applied metadb migrations");
    }
    Ok(metadb)
}
