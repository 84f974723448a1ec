//! `live-ci migrate`: applies the metadb's migrations over a direct PostgreSQL
//! connection, printing which versions it applied (none when up to date).

use serde::Serialize;

use live_ci_metadb::{MIGRATIONS, PgMetadb};

use crate::Output;
use crate::args::MigrateArgs;
use crate::error::CliError;

#[derive(Serialize)]
struct MigrateJson {
    applied: Vec<u32>,
    latest: u32,
}

pub fn run(args: &MigrateArgs) -> Result<Output, CliError> {
    // One short-lived connection: the rest of the CLI is synchronous, so the
    // runtime lives only for this command.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)?;
    let applied = runtime.block_on(async {
        let db = PgMetadb::connect(&args.database_url, 1)?;
        db.migrate().await
    })?;
    let latest = MIGRATIONS.iter().map(|m| m.version).max().unwrap_or(0);
    Ok(Output {
        text: serde_json::to_string_pretty(&MigrateJson { applied, latest })?,
        ..Output::default()
    })
}
