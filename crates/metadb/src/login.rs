//! The restricted jobs' own metadb logins: terra-run's (issue 27), member of
//! migration 0015's NOLOGIN `live_ci_terra_run`, and the drift job's (issue
//! 32 item 4), member of migration 0020's `live_ci_drift` ([`LoginRole`]).
//! Each is a login role per database, whose password lives in a
//! Secrets Manager secret the Terraform module creates empty. The migrator
//! (create-deploy-stack, holding the master secret) sets it once; terra-run
//! then reaches the Data API with that secret only, and checks the schema
//! instead of migrating ([`check_schema`]). Through a direct connection the
//! secret also holds the login's own URL, which ECS injects into terra-run as
//! `METADB_URL` (the secret's `url` JSON key), so terra-run never holds the
//! master URL either.

use std::future::Future;

use rand::Rng;
use rand::distr::Alphanumeric;
use serde::{Deserialize, Serialize};

use crate::error::{MetadbError, Result};
use crate::functions::{AppliedFunctions, FunctionSet, Verdict};
use crate::migrate::{MIGRATIONS, applied_functions, conflict};
use crate::sql::statements::{APPLIED_FUNCTIONS, APPLIED_MIGRATIONS, MIGRATION_LOCK};
use crate::sql::{Param, Sql, SqlTx};

/// The NOLOGIN role carrying terra-run's grants (migration 0015).
pub const TERRA_RUN_ROLE: &str = "live_ci_terra_run";

/// The NOLOGIN role carrying the drift job's grants (migration 0020).
pub const DRIFT_ROLE: &str = "live_ci_drift";

/// A job that logs in as its own restricted login: which NOLOGIN role
/// carries its grants, and how its login and secret are named. One
/// provisioning ([`provision_login`]) serves every one of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginRole {
    /// terra-run: [`TERRA_RUN_ROLE`].
    TerraRun,
    /// The drift check: [`DRIFT_ROLE`].
    Drift,
}

impl LoginRole {
    /// The NOLOGIN role the login is made a member of.
    pub fn role(self) -> &'static str {
        match self {
            LoginRole::TerraRun => TERRA_RUN_ROLE,
            LoginRole::Drift => DRIFT_ROLE,
        }
    }

    /// The job's name in the login (`<database>_<name>_login`), the logs and
    /// the module's secret (`<name>/metadb/<metadb_name>/<job>`).
    pub fn name(self) -> &'static str {
        match self {
            LoginRole::TerraRun => "terra_run",
            LoginRole::Drift => "drift",
        }
    }
}

/// Characters of a generated password: alphanumeric, so it needs no quoting
/// anywhere (a connection URL, a JSON secret).
const PASSWORD_LEN: usize = 40;

/// The secret's value, in the shape the RDS Data API reads.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoginCredentials {
    /// The PostgreSQL user.
    pub username: String,
    /// Its generated password (alphanumeric).
    pub password: String,
    /// Direct connections only: the metadb's URL with this login's user and
    /// password, injected by ECS into terra-run as `METADB_URL` (the task
    /// definition names the secret's `url` key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl std::fmt::Debug for LoginCredentials {
    /// Never the password, nor the URL that holds it: this type reaches logs
    /// through errors and tracing.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginCredentials")
            .field("username", &self.username)
            .field("url", &self.url.as_ref().map(|_| "<set>"))
            .finish_non_exhaustive()
    }
}

/// The database a direct connection's URL names (its path), which names
/// terra-run's login ([`terra_run_login`]). The error never quotes the URL:
/// it holds the master password.
pub fn database_of_url(url: &str) -> Result<String> {
    let parsed = parse_url(url)?;
    let database = parsed.path().trim_start_matches('/');
    if database.is_empty() {
        return Err(MetadbError::Login {
            login: String::new(),
            message: "METADB_URL names no database (postgres://host:port/<database>); terra-run's login is per database".into(),
        });
    }
    Ok(database.to_string())
}

/// `url` (the migrator's, the master's) with `login`'s user and password in
/// place of its own: same host, port, database and parameters (`sslmode`).
fn login_url(url: &str, login: &LoginCredentials) -> Result<String> {
    let mut parsed = parse_url(url)?;
    let refused = || MetadbError::Login {
        login: login.username.clone(),
        message: "METADB_URL has no host to put a user in".into(),
    };
    parsed
        .set_username(&login.username)
        .map_err(|()| refused())?;
    parsed
        .set_password(Some(&login.password))
        .map_err(|()| refused())?;
    Ok(parsed.into())
}

fn parse_url(url: &str) -> Result<url::Url> {
    // url's ParseError says what is wrong without quoting the input.
    url::Url::parse(url).map_err(|e| MetadbError::Login {
        login: String::new(),
        message: format!("METADB_URL is not a postgres:// URL: {e}"),
    })
}

/// Where a login's credentials are kept: Secrets Manager in AWS
/// ([`SecretsManagerLogin`]).
pub trait LoginSecret: Send + Sync {
    /// The stored credentials, `None` while the secret has no value yet.
    fn read(&self) -> impl Future<Output = Result<Option<LoginCredentials>>> + Send;
    /// Stores `credentials` as the secret's value.
    fn write(&self, credentials: &LoginCredentials) -> impl Future<Output = Result<()>> + Send;
}

/// `role`'s login in `database`: the local cloud shares one PostgreSQL
/// server between deployments and roles are per server, so the name is per
/// database. Database names are the module's `metadb_name`, an identifier.
/// The suffix keeps it apart from the NOLOGIN role for the module's default
/// `metadb_name`, `live_ci` (a role cannot be granted to itself).
pub fn login_name(database: &str, role: LoginRole) -> Result<String> {
    let login = format!("{database}_{}_login", role.name());
    let longest = 63 - (login.len() - database.len());
    let valid = database
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && database
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && login.len() <= 63;
    if valid {
        Ok(login)
    } else {
        Err(MetadbError::Login {
            login,
            message: format!(
                "database name {database:?} is not a lowercase identifier of at most {longest} characters"
            ),
        })
    }
}

/// terra-run's login in `database` ([`login_name`]).
pub fn terra_run_login(database: &str) -> Result<String> {
    login_name(database, LoginRole::TerraRun)
}

/// Makes `role`'s login usable: under the migrations' advisory lock (so
/// two migrators never write two passwords), reads the secret, writes a
/// generated password into it when it has none, and gives the login that
/// password (as a SCRAM verifier: `log_statement = ddl` logs the statement)
/// and membership of the role's NOLOGIN role, creating the login when
/// missing. A password once stored is never replaced, so a running job is
/// never locked out; setting the same password again (a new salt) also heals
/// a start that stored the secret but died before `ALTER ROLE`. With
/// `direct_url` (the migrator's own URL, direct connections), the secret also
/// gets the login's URL on the same server and database, rewritten only when
/// it differs. Returns the login's name.
pub async fn provision_login<S: Sql, L: LoginSecret>(
    sql: &S,
    secret: &L,
    database: &str,
    role: LoginRole,
    direct_url: Option<&str>,
) -> Result<String> {
    let login = login_name(database, role)?;
    let mut tx = sql.begin().await?;
    match provision_in(&mut tx, secret, &login, role, direct_url).await {
        Ok(()) => tx.commit().await?,
        Err(e) => {
            let _ = tx.rollback().await;
            return Err(e);
        }
    }
    Ok(login)
}

/// [`provision_login`] for terra-run.
pub async fn provision_terra_run_login<S: Sql, L: LoginSecret>(
    sql: &S,
    secret: &L,
    database: &str,
    direct_url: Option<&str>,
) -> Result<String> {
    provision_login(sql, secret, database, LoginRole::TerraRun, direct_url).await
}

async fn provision_in<T: SqlTx, L: LoginSecret>(
    tx: &mut T,
    secret: &L,
    login: &str,
    role: LoginRole,
    direct_url: Option<&str>,
) -> Result<()> {
    tx.query(MIGRATION_LOCK, &[]).await?;
    let stored = secret.read().await?;
    let mut credentials = match &stored {
        Some(stored) => stored.clone(),
        None => LoginCredentials {
            username: login.to_string(),
            password: rand::rng()
                .sample_iter(&Alphanumeric)
                .take(PASSWORD_LEN)
                .map(char::from)
                .collect(),
            url: None,
        },
    };
    if credentials.username != login {
        return Err(MetadbError::Login {
            login: login.to_string(),
            message: format!(
                "its secret names user {:?}, not this database's login",
                credentials.username
            ),
        });
    }
    if let Some(url) = direct_url {
        credentials.url = Some(login_url(url, &credentials)?);
    }
    if stored.as_ref() != Some(&credentials) {
        secret.write(&credentials).await?;
        tracing::info!(
            login,
            job = role.name(),
            generated = stored.is_none(),
            "stored the job's metadb login in its secret"
        );
    }
    let exists = tx
        .query(
            "SELECT rolname::text FROM pg_roles WHERE rolname = :login",
            &[("login", Param::text(login))],
        )
        .await?;
    // Utility statements take no parameters: the login is a checked
    // identifier and the verifier is base64 and `$:` only.
    if exists.is_empty() {
        tx.execute(&format!("CREATE ROLE \"{login}\" LOGIN INHERIT"), &[])
            .await?;
    }
    let verifier = postgres_protocol::password::scram_sha_256(credentials.password.as_bytes());
    tx.execute(
        &format!("ALTER ROLE \"{login}\" LOGIN INHERIT PASSWORD '{verifier}'"),
        &[],
    )
    .await?;
    tx.execute(&format!("GRANT {} TO \"{login}\"", role.role()), &[])
        .await?;
    Ok(())
}

/// terra-run's start: it does not migrate (its role may not), it checks that
/// every migration it was built with is applied, and names expected and found
/// versions when not. A newer schema (a later binary migrated) passes. Then
/// the functions ([`check_functions`] with this binary's set).
pub async fn check_schema<S: Sql>(sql: &S) -> Result<()> {
    check_schema_with(sql, &FunctionSet::current()).await
}

/// [`check_schema`] with `functions` as the binary's function set (tests
/// pass an altered one).
pub async fn check_schema_with<S: Sql>(sql: &S, functions: &FunctionSet) -> Result<()> {
    let applied: Vec<u32> = sql
        .query(APPLIED_MIGRATIONS, &[])
        .await?
        .iter()
        .filter_map(|v| v.parse().ok())
        .collect();
    let expected = MIGRATIONS.last().map_or(0, |m| m.version);
    if !MIGRATIONS.iter().all(|m| applied.contains(&m.version)) {
        return Err(MetadbError::SchemaBehind {
            expected,
            found: applied.iter().copied().max().unwrap_or(0),
        });
    }
    check_functions(sql, functions).await
}

/// The metadb's recorded function set against `functions`: the same
/// revision and hash, or a newer revision (a later binary migrated), pass;
/// an older one (or none) fails naming both, as does the same revision
/// under another hash.
async fn check_functions<S: Sql>(sql: &S, functions: &FunctionSet) -> Result<()> {
    let applied = applied_functions(sql.query(APPLIED_FUNCTIONS, &[]).await?);
    match functions.against(applied.as_ref()) {
        Verdict::Current | Verdict::Newer => Ok(()),
        Verdict::Behind => Err(MetadbError::FunctionsBehind {
            expected: functions.describe(),
            found: AppliedFunctions::describe(applied.as_ref()),
        }),
        Verdict::Conflict => Err(conflict(functions, applied.as_ref())),
    }
}

/// [`LoginSecret`] in Secrets Manager (the secret the module creates empty).
#[derive(Debug, Clone)]
pub struct SecretsManagerLogin {
    client: aws_sdk_secretsmanager::Client,
    secret_arn: String,
}

impl SecretsManagerLogin {
    /// The login kept in secret `secret_arn`.
    pub fn new(client: aws_sdk_secretsmanager::Client, secret_arn: &str) -> Self {
        SecretsManagerLogin {
            client,
            secret_arn: secret_arn.to_string(),
        }
    }

    /// The client built from the binary's AWS config (binaries need not
    /// depend on the Secrets Manager SDK themselves).
    pub fn from_sdk_config(aws: &aws_config::SdkConfig, secret_arn: &str) -> Self {
        Self::new(aws_sdk_secretsmanager::Client::new(aws), secret_arn)
    }

    fn error(&self, message: String) -> MetadbError {
        MetadbError::Secret {
            secret: self.secret_arn.clone(),
            message,
        }
    }
}

impl LoginSecret for SecretsManagerLogin {
    async fn read(&self) -> Result<Option<LoginCredentials>> {
        use aws_sdk_secretsmanager::error::{DisplayErrorContext, ProvideErrorMetadata};
        let out = match self
            .client
            .get_secret_value()
            .secret_id(&self.secret_arn)
            .send()
            .await
        {
            Ok(out) => out,
            // A secret without any value has no AWSCURRENT version.
            Err(e) if e.code() == Some("ResourceNotFoundException") => return Ok(None),
            Err(e) => {
                return Err(self.error(format!("GetSecretValue: {}", DisplayErrorContext(&e))));
            }
        };
        let Some(text) = out.secret_string() else {
            return Ok(None);
        };
        serde_json::from_str(text).map(Some).map_err(|e| {
            self.error(format!(
                "value is not {{\"username\", \"password\"}} json: {e}"
            ))
        })
    }

    async fn write(&self, credentials: &LoginCredentials) -> Result<()> {
        use aws_sdk_secretsmanager::error::DisplayErrorContext;
        let value = serde_json::to_string(credentials)
            .map_err(|e| self.error(format!("encoding the value: {e}")))?;
        self.client
            .put_secret_value()
            .secret_id(&self.secret_arn)
            .secret_string(value)
            .send()
            .await
            .map_err(|e| self.error(format!("PutSecretValue: {}", DisplayErrorContext(&e))))?;
        Ok(())
    }
}
