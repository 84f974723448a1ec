//! An Aurora cluster with the Data API enabled and its master secret, created in
//! the project's LocalStack through the RDS and Secrets Manager APIs (as
//! Terraform creates them), so tests reach the local PostgreSQL through the
//! plugin's `rds-data` service exactly as the binaries reach Aurora in AWS.

use std::time::Duration;

/// What a Data API client names on every call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataApiCluster {
    /// The cluster's ARN (`METADB_CLUSTER_ARN`).
    pub cluster_arn: String,
    /// The ARN of the secret holding its credentials (`METADB_SECRET_ARN`).
    pub secret_arn: String,
    /// The database name on the cluster (`METADB_NAME`).
    pub database: String,
}

/// LocalStack routes a request by the service in its credential scope; the
/// signature itself is not checked.
fn authorization(service: &str) -> String {
    format!(
        "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/{service}/aws4_request, SignedHeaders=host, Signature=0"
    )
}

/// Creates cluster `id` (database `database`, master user `username`) and a
/// secret holding its credentials.
pub async fn create_cluster(
    endpoint: &str,
    id: &str,
    database: &str,
    username: &str,
) -> Result<DataApiCluster, String> {
    create_cluster_with(endpoint, id, database, username, &[]).await
}

/// [`create_cluster`] with more `CreateDBCluster` parameters (query form, e.g.
/// `("ServerlessV2ScalingConfiguration.MinCapacity", "0")`).
pub async fn create_cluster_with(
    endpoint: &str,
    id: &str,
    database: &str,
    username: &str,
    extra: &[(&str, &str)],
) -> Result<DataApiCluster, String> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| e.to_string())?;
    let password = "local-data-api-1";
    let body = http
        .post(format!("{endpoint}/"))
        .header("Authorization", authorization("rds"))
        .form(
            &[
                ("Action", "CreateDBCluster"),
                ("Version", "2014-10-31"),
                ("DBClusterIdentifier", id),
                ("Engine", "aurora-postgresql"),
                ("EngineVersion", "15.4"),
                ("MasterUsername", username),
                ("MasterUserPassword", password),
                ("DatabaseName", database),
                ("EnableHttpEndpoint", "true"),
            ]
            .into_iter()
            .chain(extra.iter().copied())
            .collect::<Vec<_>>(),
        )
        .send()
        .await
        .map_err(|e| format!("CreateDBCluster: {e}"))?
        .text()
        .await
        .map_err(|e| format!("CreateDBCluster: {e}"))?;
    let cluster_arn = between(&body, "<DBClusterArn>", "</DBClusterArn>")
        .ok_or_else(|| format!("CreateDBCluster answered {body}"))?;
    let secret: serde_json::Value = http
        .post(format!("{endpoint}/"))
        .header("Authorization", authorization("secretsmanager"))
        .header("X-Amz-Target", "secretsmanager.CreateSecret")
        .header("Content-Type", "application/x-amz-json-1.1")
        .body(
            serde_json::json!({
                "Name": format!("{id}-master"),
                // Required without an SDK to fill it in: 32 to 64 characters.
                "ClientRequestToken": format!("{id:0>40}").chars().take(64).collect::<String>(),
                "SecretString": serde_json::json!({"username": username, "password": password}).to_string(),
            })
            .to_string(),
        )
        .send()
        .await
        .map_err(|e| format!("CreateSecret: {e}"))?
        .json()
        .await
        .map_err(|e| format!("CreateSecret: {e}"))?;
    let secret_arn = secret["ARN"]
        .as_str()
        .ok_or_else(|| format!("CreateSecret answered {secret}"))?;
    Ok(DataApiCluster {
        cluster_arn: cluster_arn.to_string(),
        secret_arn: secret_arn.to_string(),
        database: database.to_string(),
    })
}

/// Creates secret `name` with no value, as the module creates terra-run's
/// login secret (`infra/metadb.tf`); returns its ARN.
pub async fn create_empty_secret(endpoint: &str, name: &str) -> Result<String, String> {
    let answer = secrets_call(
        endpoint,
        "CreateSecret",
        serde_json::json!({
            "Name": name,
            "ClientRequestToken": format!("{name:0>40}").chars().take(64).collect::<String>(),
        }),
    )
    .await?;
    answer["ARN"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("CreateSecret answered {answer}"))
}

/// The current `SecretString` of secret `arn`, `None` while it has no value.
pub async fn secret_string(endpoint: &str, arn: &str) -> Result<Option<String>, String> {
    let answer = secrets_call(
        endpoint,
        "GetSecretValue",
        serde_json::json!({ "SecretId": arn }),
    )
    .await?;
    if answer["__type"]
        .as_str()
        .is_some_and(|t| t.ends_with("ResourceNotFoundException"))
    {
        return Ok(None);
    }
    answer["SecretString"]
        .as_str()
        .map(|s| Some(s.to_string()))
        .ok_or_else(|| format!("GetSecretValue answered {answer}"))
}

async fn secrets_call(
    endpoint: &str,
    operation: &str,
    body: serde_json::Value,
) -> Result<serde_json::Value, String> {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| e.to_string())?
        .post(format!("{endpoint}/"))
        .header("Authorization", authorization("secretsmanager"))
        .header("X-Amz-Target", format!("secretsmanager.{operation}"))
        .header("Content-Type", "application/x-amz-json-1.1")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| format!("{operation}: {e}"))?
        .json()
        .await
        .map_err(|e| format!("{operation}: {e}"))
}

/// Sets the local cloud's Aurora Serverless v2 auto-pause (localcloud
/// `aurora.py`, `PUT /_live_ci/aurora`): clusters with minimum capacity 0 pause
/// after `idle_seconds` without a call and then answer `DatabaseResumingException`
/// for `resume_seconds` (0: never pause).
pub async fn set_auto_pause(
    endpoint: &str,
    resume_seconds: f64,
    idle_seconds: Option<f64>,
) -> Result<(), String> {
    reqwest::Client::new()
        .put(format!("{endpoint}/_live_ci/aurora"))
        .json(&serde_json::json!({"resume_seconds": resume_seconds, "idle_seconds": idle_seconds}))
        .send()
        .await
        .and_then(|r| r.error_for_status())
        .map(|_| ())
        .map_err(|e| format!("PUT /_live_ci/aurora: {e}"))
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = text.find(start)? + start.len();
    let to = text[from..].find(end)? + from;
    Some(&text[from..to])
}
