//! The direct PostgreSQL adapter (tokio-postgres with a deadpool pool): used
//! locally and in tests, and selectable in AWS.

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use tokio_postgres::types::{ToSql, Type};

use crate::error::{MetadbError, Result};
use crate::sql::text::to_positional;
use crate::sql::{Param, Params, Sql, SqlTx};
use crate::store::Store;
use crate::tls::parse_url;

/// The metadb over a direct PostgreSQL connection.
pub type PgMetadb = Store<PgSql>;

impl PgMetadb {
    /// Connects lazily to `postgres://…` (connections open on first use).
    pub fn connect(url: &str, max_connections: usize) -> Result<Self> {
        Ok(Store::new(PgSql::connect(url, max_connections)?))
    }
}

/// A pool of PostgreSQL connections running the shared SQL text: `:name`
/// parameters become `$n`, with types taken from the values.
#[derive(Clone)]
pub struct PgSql {
    pool: Pool,
}

impl std::fmt::Debug for PgSql {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgSql")
            .field("status", &self.pool.status())
            .finish()
    }
}

impl PgSql {
    /// TLS as the URL's `sslmode` / `sslrootcert` say (see [`crate::tls`]).
    pub fn connect(url: &str, max_connections: usize) -> Result<Self> {
        let target = parse_url(url)?;
        let manager_config = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = match target.tls {
            Some(tls) => Manager::from_config(target.config, tls, manager_config),
            None => Manager::from_config(target.config, tokio_postgres::NoTls, manager_config),
        };
        let pool = Pool::builder(manager)
            .max_size(max_connections.max(1))
            .build()
            .map_err(|e| MetadbError::Pool(Box::new(e)))?;
        Ok(PgSql { pool })
    }

    async fn client(&self) -> Result<Object> {
        self.pool.get().await.map_err(|e| match e {
            deadpool_postgres::PoolError::Backend(e) => MetadbError::from(e),
            e => MetadbError::Pool(Box::new(e)),
        })
    }
}

type Value = Box<dyn ToSql + Sync + Send>;

fn bind(sql: &str, params: Params<'_>) -> Result<(String, Vec<Type>, Vec<Value>)> {
    let positional = to_positional(sql);
    let mut types = Vec::with_capacity(positional.names.len());
    let mut values: Vec<Value> = Vec::with_capacity(positional.names.len());
    for name in &positional.names {
        let (_, param) = params
            .iter()
            .find(|(n, _)| n == name)
            .ok_or_else(|| MetadbError::MissingParameter { name: name.clone() })?;
        let (ty, value): (Type, Value) = match param {
            Param::Int(n) => (Type::INT8, Box::new(*n)),
            Param::Float(x) => (Type::FLOAT8, Box::new(*x)),
            Param::Bool(b) => (Type::BOOL, Box::new(*b)),
            Param::Text(s) | Param::Json(s) => (Type::TEXT, Box::new(s.clone())),
            Param::NullInt => (Type::INT8, Box::new(None::<i64>)),
            Param::NullText => (Type::TEXT, Box::new(None::<String>)),
        };
        types.push(ty);
        values.push(value);
    }
    Ok((positional.sql, types, values))
}

async fn query_on(client: &Object, sql: &str, params: Params<'_>) -> Result<Vec<String>> {
    let (sql, types, values) = bind(sql, params)?;
    let statement = client.prepare_typed_cached(&sql, &types).await?;
    let refs: Vec<&(dyn ToSql + Sync)> = values
        .iter()
        .map(|v| v.as_ref() as &(dyn ToSql + Sync))
        .collect();
    let rows = client.query(&statement, &refs).await?;
    rows.iter()
        .map(|r| Ok(r.try_get::<_, Option<String>>(0)?.unwrap_or_default()))
        .collect()
}

async fn execute_on(client: &Object, sql: &str, params: Params<'_>) -> Result<u64> {
    let (sql, types, values) = bind(sql, params)?;
    let statement = client.prepare_typed_cached(&sql, &types).await?;
    let refs: Vec<&(dyn ToSql + Sync)> = values
        .iter()
        .map(|v| v.as_ref() as &(dyn ToSql + Sync))
        .collect();
    Ok(client.execute(&statement, &refs).await?)
}

impl Sql for PgSql {
    type Tx = PgTx;

    async fn query(&self, sql: &str, params: Params<'_>) -> Result<Vec<String>> {
        query_on(&self.client().await?, sql, params).await
    }

    async fn execute(&self, sql: &str, params: Params<'_>) -> Result<u64> {
        execute_on(&self.client().await?, sql, params).await
    }

    async fn begin(&self) -> Result<PgTx> {
        let client = self.client().await?;
        client.batch_execute("BEGIN").await?;
        Ok(PgTx {
            client: Some(client),
        })
    }
}

/// A transaction on one pooled connection. BEGIN/COMMIT are sent by hand so
/// the transaction can own its connection.
pub struct PgTx {
    client: Option<Object>,
}

impl std::fmt::Debug for PgTx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTx")
            .field("open", &self.client.is_some())
            .finish()
    }
}

impl PgTx {
    fn client(&self) -> Result<&Object> {
        self.client.as_ref().ok_or(MetadbError::TransactionFinished)
    }
}

impl SqlTx for PgTx {
    async fn query(&mut self, sql: &str, params: Params<'_>) -> Result<Vec<String>> {
        query_on(self.client()?, sql, params).await
    }

    async fn execute(&mut self, sql: &str, params: Params<'_>) -> Result<u64> {
        execute_on(self.client()?, sql, params).await
    }

    async fn commit(mut self) -> Result<()> {
        let client = self.client.take();
        if let Some(client) = &client {
            client.batch_execute("COMMIT").await?;
        }
        Ok(())
    }

    async fn rollback(mut self) -> Result<()> {
        let client = self.client.take();
        if let Some(client) = &client {
            client.batch_execute("ROLLBACK").await?;
        }
        Ok(())
    }
}

impl Drop for PgTx {
    fn drop(&mut self) {
        // An unfinished transaction cannot be rolled back without awaiting: take
        // the connection out of the pool and close it, which aborts it server-side.
        if let Some(client) = self.client.take() {
            drop(Object::take(client));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_after_the_end_of_a_transaction_is_a_permanent_error() {
        use live_ci_core::port::{Classify, ErrorKind};
        let finished = PgTx { client: None };
        let err = finished.client().expect_err("no connection is left");
        assert!(matches!(err, MetadbError::TransactionFinished), "{err:?}");
        assert_eq!(err.kind(), ErrorKind::Permanent);
    }

    #[test]
    fn binds_by_name_and_redacts_passwords() {
        use crate::tls::redact;
        let (sql, types, values) = bind(
            "SELECT :b, :a::jsonb, :b",
            &[("a", Param::Json("[]".into())), ("b", Param::Int(1))],
        )
        .unwrap();
        assert_eq!(sql, "SELECT $1, $2::jsonb, $1");
        assert_eq!(types, [Type::INT8, Type::TEXT]);
        assert_eq!(values.len(), 2);
        let err = bind("SELECT :x", &[]).err().unwrap().to_string();
        assert_eq!(err, "statement needs parameter \"x\", which was not given");
        assert_eq!(
            redact("postgres://me:secret@db:5432/x"),
            "postgres://me:***@db:5432/x"
        );
        assert_eq!(redact("postgres://me@db/x"), "postgres://me@db/x");
        assert_eq!(
            redact("postgres://db/x?user=me&password=secret"),
            "postgres://db/x?user=me&password=***"
        );
    }
}
