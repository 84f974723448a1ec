//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Dry runs of the live-ci pipeline over a Terragrunt live repository.
#[derive(Debug, Parser)]
#[command(name = "live-ci", version, about)]
pub struct Cli {
    /// The subcommand to run.
    #[command(subcommand)]
    pub command: Command,
}

// The subcommands of `live-ci`. No `///` here: clap's derive would make an
// enum-level doc the `about` of `live-ci` itself, replacing its help text.
#[allow(missing_docs)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Discover every unit and its dependencies.
    Graph(GraphArgs),
    /// The units a change between two revisions affects, and why.
    Affected(AffectedArgs),
    /// The units filter queries select.
    Find(FindArgs),
    /// The deployment the pipeline would run for a change: accounts, waits, pool order.
    Plan(PlanArgs),
    /// Apply the metadb's migrations (idempotent; safe to run concurrently).
    Migrate(MigrateArgs),
    /// A deployment run's units and statuses from the metadb (--watch: live).
    Status(StatusArgs),
    /// The newest runs with their progress, and who holds the merge lock.
    Runs(RunsArgs),
    /// The latest drift-check result of every unit: state, commit, when, counts, issue.
    Drift(DriftArgs),
    /// Stop a run: stop its Step Functions executions, abort the rest, release the lock.
    Abort(AbortArgs),
    /// Re-queue the failed and aborted units of the last run at the same commit.
    Retry(RetryArgs),
    /// Release the merge lock (refused while a run is running, unless --force); logged.
    Unlock(UnlockArgs),
}

/// How to reach the metadb, selected as the Lambdas select it: a PostgreSQL
/// URL means a direct connection, otherwise the RDS Data API (the module's
/// default) with the cluster, its secret and the database name.
#[derive(Debug, Clone, Args)]
pub struct DbArgs {
    /// The metadb's PostgreSQL URL (postgres://user@host:port/db); METADB_URL is read too.
    #[arg(long, env = "LIVE_CI_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// The Aurora cluster, for the RDS Data API (the module's `metadb_cluster_arn` output).
    #[arg(long, env = "METADB_CLUSTER_ARN", conflicts_with = "database_url")]
    pub cluster_arn: Option<String>,
    /// The Secrets Manager secret the Data API authenticates with (`metadb_secret_arn`).
    #[arg(long, env = "METADB_SECRET_ARN", conflicts_with = "database_url")]
    pub secret_arn: Option<String>,
    /// The database name on the cluster (`metadb_name`).
    #[arg(long, env = "METADB_NAME", conflicts_with = "database_url")]
    pub database: Option<String>,
}

/// What the controls that change the merge lock also need.
#[derive(Debug, Clone, Args)]
pub struct LockArgs {
    /// The SSM parameter mirroring the merge lock for the receiver (`merge_lock_ssm_key`).
    #[arg(long, env = "MERGE_LOCK_SSM_KEY")]
    pub merge_lock_param: String,
    /// Who runs the control, for the operator log (default: $USER).
    #[arg(long, env = "LIVE_CI_OPERATOR")]
    pub actor: Option<String>,
}

#[derive(Debug, Args)]
pub struct RunsArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// How many runs, newest first.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: u32,
    #[arg(long, value_enum, default_value = "table")]
    pub format: ListFormat,
}

#[derive(Debug, Args)]
pub struct DriftArgs {
    #[command(flatten)]
    pub db: DbArgs,
    #[arg(long, value_enum, default_value = "table")]
    pub format: ListFormat,
}

#[derive(Debug, Args)]
pub struct AbortArgs {
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten)]
    pub lock: LockArgs,
    /// The run to abort.
    #[arg(long)]
    pub run: i64,
}

#[derive(Debug, Args)]
pub struct RetryArgs {
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten)]
    pub lock: LockArgs,
    /// The run whose failed and aborted units to re-queue (it must be the last run).
    #[arg(long)]
    pub run: i64,
}

#[derive(Debug, Args)]
pub struct UnlockArgs {
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten)]
    pub lock: LockArgs,
    /// Release the lock even while a run is running (the run deploys on).
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GraphFormat {
    Json,
    Dot,
    Mermaid,
}

/// How a listing command (`runs`, `drift`, `affected`, `find`, `status`)
/// prints: `json` (pretty, stable field names, for other tools) or `table`
/// (aligned columns, for people).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    // No `///` on the variants: clap would print them in `--help` as value
    // descriptions; the enum's doc says what each is.
    #[allow(missing_docs)]
    Json,
    #[allow(missing_docs)]
    Table,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    Table,
    Json,
    Dot,
}

#[derive(Debug, Args)]
pub struct RepoArg {
    /// The live repository (a git work tree for --base/--head and [git] filters).
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
}

#[derive(Debug, Args)]
pub struct FilterArgs {
    /// A filter query (repeatable: the union of all). See `live-ci find --help`.
    #[arg(long = "filter", value_name = "QUERY")]
    pub filters: Vec<String>,
    /// A file of filter queries, one per line. Default: `.live-ci-filters` in the
    /// repository root, when it exists.
    #[arg(long, value_name = "FILE")]
    pub filters_file: Option<PathBuf>,
    /// Ignore the default `.live-ci-filters` file.
    #[arg(long)]
    pub no_filters_file: bool,
}

/// How a listing treats the repository (terragrunt's defaults unless set).
#[derive(Debug, Args)]
pub struct ListingArgs {
    /// Fail (exit 1) when any unit cannot be resolved; by default a broken
    /// unit stays listed with its errors, and the command succeeds.
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub hidden: HiddenArg,
}

#[derive(Debug, Args)]
pub struct HiddenArg {
    /// Do not discover units in hidden directories (`.name/`); `.git`,
    /// `.terraform` and `.terragrunt-cache` are never discovered.
    #[arg(long)]
    pub no_hidden: bool,
}

#[derive(Debug, Args)]
pub struct GraphArgs {
    #[command(flatten)]
    pub repo: RepoArg,
    #[command(flatten)]
    pub listing: ListingArgs,
    #[arg(long, value_enum, default_value = "json")]
    pub format: GraphFormat,
}

#[derive(Debug, Args)]
pub struct ChangeArgs {
    /// The revision the change is measured from (merge-base semantics: base...head).
    #[arg(long)]
    pub base: String,
    /// The revision with the change.
    #[arg(long)]
    pub head: String,
    /// Destroy units the change removes (otherwise they are listed as skipped).
    #[arg(long)]
    pub allow_destroy: bool,
}

#[derive(Debug, Args)]
pub struct AffectedArgs {
    #[command(flatten)]
    pub repo: RepoArg,
    #[command(flatten)]
    pub hidden: HiddenArg,
    #[command(flatten)]
    pub change: ChangeArgs,
    #[command(flatten)]
    pub filter: FilterArgs,
    #[arg(long, value_enum, default_value = "json")]
    pub format: ListFormat,
}

#[derive(Debug, Args)]
pub struct FindArgs {
    #[command(flatten)]
    pub repo: RepoArg,
    #[command(flatten)]
    pub listing: ListingArgs,
    #[command(flatten)]
    pub filter: FilterArgs,
    #[arg(long, value_enum, default_value = "json")]
    pub format: ListFormat,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub repo: RepoArg,
    #[command(flatten)]
    pub change: ChangeArgs,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// The account configuration (JSON list, as the Terraform module's `account_parent_cfg`).
    #[arg(long, value_name = "FILE")]
    pub accounts: Option<PathBuf>,
    /// Units deployed at once.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_parallel: u32,
    #[arg(long, value_enum, default_value = "table")]
    pub format: PlanFormat,
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// The run to show. Default: the run holding the merge lock.
    #[arg(long, conflicts_with = "commit")]
    pub run: Option<i64>,
    /// The run of this merge commit.
    #[arg(long)]
    pub commit: Option<String>,
    /// Redraw as the run advances, until it has finished.
    #[arg(long)]
    pub watch: bool,
    /// How often --watch reads the metadb.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    pub interval_ms: u64,
    #[arg(long, value_enum, default_value = "table")]
    pub format: ListFormat,
}
