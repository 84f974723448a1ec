//! The live-ci metadb: the metadb ports
//! ([`RunStore`](live_ci_core::port::RunStore),
//! [`ExecutionStore`](live_ci_core::port::ExecutionStore),
//! [`SweepStore`](live_ci_core::port::SweepStore),
//! [`ApprovalStore`](live_ci_core::port::ApprovalStore),
//! [`RunControl`](live_ci_core::port::RunControl),
//! [`DeployCommentStore`](live_ci_core::port::DeployCommentStore),
//! [`DriftStore`](live_ci_core::port::DriftStore)) over PostgreSQL, reached
//! either directly (tokio-postgres; local runs and an option in AWS) or through
//! the RDS Data API (the AWS default). Both adapters run the same SQL text and
//! the same transaction logic ([`Store`]); they differ only in how a statement
//! reaches the database ([`Sql`]).

mod any;
mod data_api;
mod error;
mod functions;
mod login;
mod migrate;
mod pg;
pub mod sql;
mod store;
pub mod tls;

pub use any::{AWS_ACTIONS, AnyMetadb, AnySql, AnyTx, ENV_VARS, MetadbConfig};
pub use data_api::{DATABASE_RESUMING, DEFAULT_RESUME_DEADLINE, DataApi, DataApiMetadb, DataApiTx};
pub use error::{MetadbError, Result};
pub use functions::{FUNCTION_REVISIONS, FUNCTIONS, Function, FunctionSet};
pub use login::{
    DRIFT_ROLE, LoginCredentials, LoginRole, LoginSecret, SecretsManagerLogin, TERRA_RUN_ROLE,
    check_schema, check_schema_with, database_of_url, login_name, provision_login,
    provision_terra_run_login, terra_run_login,
};
pub use migrate::{MIGRATIONS, Migrated, Migration, migrate, migrate_with};
pub use pg::{PgMetadb, PgSql, PgTx};
pub use sql::{Param, Sql, SqlTx};
pub use store::Store;
pub use tls::{connect, with_database};
