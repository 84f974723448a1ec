//! The metadb connection of the operator commands, chosen like the Lambdas
//! choose theirs ([`MetadbConfig`]): a PostgreSQL URL connects directly,
//! otherwise the RDS Data API variables are required. The AWS clients (Data
//! API, SSM, Step Functions) use the SDK's usual environment.

use live_ci_core::settings::{ConfigError, Settings};
use live_ci_metadb::{AnyMetadb, MetadbConfig};

use crate::args::DbArgs;
use crate::error::CliError;

/// The connection the arguments (and their environment variables) select.
pub fn metadb_config(args: &DbArgs) -> Result<MetadbConfig, CliError> {
    metadb_config_from(args, |k| std::env::var(k).ok())
}

/// The same with another environment (tests).
pub fn metadb_config_from(
    args: &DbArgs,
    env: impl Fn(&str) -> Option<String>,
) -> Result<MetadbConfig, CliError> {
    let lookup = |name: &str| -> Option<String> {
        match name {
            "METADB_URL" => args.database_url.clone().or_else(|| env("METADB_URL")),
            "METADB_CLUSTER_ARN" => args.cluster_arn.clone(),
            "METADB_SECRET_ARN" => args.secret_arn.clone(),
            "METADB_NAME" => args.database.clone(),
            _ => None,
        }
    };
    MetadbConfig::from_settings(&Settings::new(lookup)).map_err(|e| match e {
        ConfigError::Missing(name) => CliError::Usage(format!(
            "no metadb connection: give --database-url (LIVE_CI_DATABASE_URL or METADB_URL) \
             for PostgreSQL, or the Data API's --cluster-arn, --secret-arn and --database \
             (METADB_CLUSTER_ARN, METADB_SECRET_ARN, METADB_NAME); {name} is missing"
        )),
        other => CliError::Usage(other.to_string()),
    })
}

/// The AWS configuration from the environment (region, credentials,
/// `AWS_ENDPOINT_URL`).
pub async fn aws() -> aws_config::SdkConfig {
    aws_config::load_from_env().await
}

/// Connects to the metadb (PostgreSQL connections open on first use).
pub async fn connect(args: &DbArgs) -> Result<AnyMetadb, CliError> {
    let config = metadb_config(args)?;
    let aws = match config {
        // No AWS configuration is needed (or loaded) for a direct connection.
        MetadbConfig::Postgres { .. } => aws_config::SdkConfig::builder().build(),
        MetadbConfig::DataApi { .. } => aws().await,
    };
    Ok(AnyMetadb::from_config(&config, &aws, 1)?)
}

/// A current-thread runtime for one command.
pub fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(url: Option<&str>, cluster: Option<&str>) -> DbArgs {
        DbArgs {
            database_url: url.map(str::to_string),
            cluster_arn: cluster.map(str::to_string),
            secret_arn: cluster.map(|_| "arn:secret".to_string()),
            database: cluster.map(|_| "live_ci".to_string()),
        }
    }

    #[test]
    fn a_url_selects_postgres_otherwise_the_data_api() {
        let none = |_: &str| None;
        assert_eq!(
            metadb_config_from(&args(Some("postgres://h/db"), None), none).unwrap(),
            MetadbConfig::Postgres {
                url: "postgres://h/db".into()
            }
        );
        let from_env = |k: &str| (k == "METADB_URL").then(|| "postgres://env/db".to_string());
        assert_eq!(
            metadb_config_from(&args(None, None), from_env).unwrap(),
            MetadbConfig::Postgres {
                url: "postgres://env/db".into()
            }
        );
        assert_eq!(
            metadb_config_from(&args(None, Some("arn:cluster")), none).unwrap(),
            MetadbConfig::DataApi {
                cluster_arn: "arn:cluster".into(),
                secret_arn: "arn:secret".into(),
                database: "live_ci".into()
            }
        );
        let err = metadb_config_from(&args(None, None), none).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(
            err.to_string().contains("METADB_CLUSTER_ARN is missing"),
            "{err}"
        );
    }
}
