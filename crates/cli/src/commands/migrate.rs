//! `live-ci migrate`: applies the metadb's migrations over either connection
//! (PostgreSQL or the RDS Data API), printing which versions it applied (none
//! when up to date).

use serde::Serialize;

use live_ci_metadb::{MIGRATIONS, Sql, Store};

use crate::Output;
use crate::args::MigrateArgs;
use crate::error::CliError;

#[derive(Serialize)]
struct MigrateJson {
    applied: Vec<u32>,
    latest: u32,
}

/// Runs `live-ci migrate` against the metadb the arguments select.
pub fn run(args: &MigrateArgs) -> Result<Output, CliError> {
    // One short-lived connection: the rest of the CLI is synchronous, so the
    // runtime lives only for this command.
    super::db::runtime()?.block_on(async {
        let db = super::db::connect(&args.db).await?;
        migrate(&db).await
    })
}

/// Migrates `db` and reports what it applied.
pub async fn migrate<S: Sql>(db: &Store<S>) -> Result<Output, CliError> {
    let applied = db.migrate().await?;
    let latest = MIGRATIONS.iter().map(|m| m.version).max().unwrap_or(0);
    Ok(Output {
        text: serde_json::to_string_pretty(&MigrateJson { applied, latest })?,
        ..Output::default()
    })
}
