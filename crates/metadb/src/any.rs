//! The metadb a binary was configured with: direct PostgreSQL or the RDS Data
//! API, chosen at start-up from the environment the Terraform module sets, behind
//! one type so every Lambda and the task binary wire it the same way.

use live_ci_core::settings::{ConfigError, Settings};

use crate::data_api::{DataApi, DataApiTx};
use crate::error::Result;
use crate::pg::{PgSql, PgTx};
use crate::sql::{Params, Sql, SqlTx};
use crate::store::Store;

/// The environment variables [`MetadbConfig::from_settings`] reads.
pub const ENV_VARS: &[&str] = &[
    "METADB_URL",
    "METADB_CLUSTER_ARN",
    "METADB_SECRET_ARN",
    "METADB_NAME",
];

/// The IAM actions the metadb adapters call (the Data API, and the secret
/// the Data API authenticates with); direct PostgreSQL calls none.
pub const AWS_ACTIONS: &[&str] = &[
    "rds-data:ExecuteStatement",
    "rds-data:BeginTransaction",
    "rds-data:CommitTransaction",
    "rds-data:RollbackTransaction",
    "secretsmanager:GetSecretValue",
];

/// How to reach the metadb.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetadbConfig {
    /// Direct PostgreSQL (`METADB_URL`).
    Postgres {
        /// The PostgreSQL URL (its `sslmode` decides TLS).
        url: String,
    },
    /// The RDS Data API, the AWS default (`METADB_CLUSTER_ARN`,
    /// `METADB_SECRET_ARN`, `METADB_NAME`).
    DataApi {
        /// The Aurora cluster's ARN.
        cluster_arn: String,
        /// The ARN of the secret the Data API authenticates with.
        secret_arn: String,
        /// The database name on the cluster.
        database: String,
    },
}

impl MetadbConfig {
    /// `METADB_URL` selects direct PostgreSQL; without it the Data API
    /// variables are required.
    pub fn from_settings<F: Fn(&str) -> Option<String>>(
        env: &Settings<F>,
    ) -> std::result::Result<Self, ConfigError> {
        Ok(match env.opt("METADB_URL") {
            Some(url) => MetadbConfig::Postgres { url },
            None => MetadbConfig::DataApi {
                cluster_arn: env.req("METADB_CLUSTER_ARN")?,
                secret_arn: env.req("METADB_SECRET_ARN")?,
                database: env.req("METADB_NAME")?,
            },
        })
    }
}

/// The metadb over whichever connection the configuration named.
pub type AnyMetadb = Store<AnySql>;

impl AnyMetadb {
    /// Builds the adapter (PostgreSQL connections open lazily, on first use).
    /// `aws` is only used for the Data API.
    pub fn from_config(
        config: &MetadbConfig,
        aws: &aws_config::SdkConfig,
        max_connections: usize,
    ) -> Result<Self> {
        Ok(Store::new(match config {
            MetadbConfig::Postgres { url } => {
                AnySql::Postgres(PgSql::connect(url, max_connections)?)
            }
            MetadbConfig::DataApi {
                cluster_arn,
                secret_arn,
                database,
            } => AnySql::DataApi(DataApi::new(
                aws_sdk_rdsdata::Client::new(aws),
                cluster_arn,
                secret_arn,
                database,
            )),
        }))
    }
}

impl AnyMetadb {
    /// On the Data API, how long each call waits for a paused cluster to resume
    /// (`DataApi::with_resume_deadline`); direct PostgreSQL is unchanged.
    pub fn with_resume_deadline(self, deadline: std::time::Duration) -> Self {
        Store::new(match self.sql().clone() {
            AnySql::DataApi(api) => AnySql::DataApi(api.with_resume_deadline(deadline)),
            other => other,
        })
    }
}

/// Either connection, so binaries need not be generic over the adapter.
#[derive(Debug, Clone)]
pub enum AnySql {
    /// A direct connection pool.
    Postgres(PgSql),
    /// The RDS Data API.
    DataApi(DataApi),
}

/// A transaction of either connection.
#[derive(Debug)]
pub enum AnyTx {
    /// A transaction on a pooled connection.
    Postgres(PgTx),
    /// A Data API transaction.
    DataApi(DataApiTx),
}

impl Sql for AnySql {
    type Tx = AnyTx;

    async fn query(&self, sql: &str, params: Params<'_>) -> Result<Vec<String>> {
        match self {
            AnySql::Postgres(db) => db.query(sql, params).await,
            AnySql::DataApi(db) => db.query(sql, params).await,
        }
    }

    async fn execute(&self, sql: &str, params: Params<'_>) -> Result<u64> {
        match self {
            AnySql::Postgres(db) => db.execute(sql, params).await,
            AnySql::DataApi(db) => db.execute(sql, params).await,
        }
    }

    async fn begin(&self) -> Result<AnyTx> {
        Ok(match self {
            AnySql::Postgres(db) => AnyTx::Postgres(db.begin().await?),
            AnySql::DataApi(db) => AnyTx::DataApi(db.begin().await?),
        })
    }
}

impl SqlTx for AnyTx {
    async fn query(&mut self, sql: &str, params: Params<'_>) -> Result<Vec<String>> {
        match self {
            AnyTx::Postgres(tx) => tx.query(sql, params).await,
            AnyTx::DataApi(tx) => tx.query(sql, params).await,
        }
    }

    async fn execute(&mut self, sql: &str, params: Params<'_>) -> Result<u64> {
        match self {
            AnyTx::Postgres(tx) => tx.execute(sql, params).await,
            AnyTx::DataApi(tx) => tx.execute(sql, params).await,
        }
    }

    async fn commit(self) -> Result<()> {
        match self {
            AnyTx::Postgres(tx) => tx.commit().await,
            AnyTx::DataApi(tx) => tx.commit().await,
        }
    }

    async fn rollback(self) -> Result<()> {
        match self {
            AnyTx::Postgres(tx) => tx.rollback().await,
            AnyTx::DataApi(tx) => tx.rollback().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(pairs: &[(&str, &str)]) -> Settings<impl Fn(&str) -> Option<String>> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::new(move |k: &str| map.get(k).cloned())
    }

    #[test]
    fn the_url_selects_direct_postgres_otherwise_the_data_api_is_required() {
        let direct = MetadbConfig::from_settings(&settings(&[("METADB_URL", "postgres://x")]));
        assert_eq!(
            direct.unwrap(),
            MetadbConfig::Postgres {
                url: "postgres://x".into()
            }
        );
        let api = MetadbConfig::from_settings(&settings(&[
            ("METADB_CLUSTER_ARN", "arn:c"),
            ("METADB_SECRET_ARN", "arn:s"),
            ("METADB_NAME", "liveci"),
        ]));
        assert_eq!(
            api.unwrap(),
            MetadbConfig::DataApi {
                cluster_arn: "arn:c".into(),
                secret_arn: "arn:s".into(),
                database: "liveci".into()
            }
        );
        let missing = MetadbConfig::from_settings(&settings(&[("METADB_CLUSTER_ARN", "arn:c")]));
        assert_eq!(
            missing.unwrap_err(),
            ConfigError::Missing("METADB_SECRET_ARN")
        );
    }
}
