//! The end-to-end driver: live-ci deployed by Terraform (`examples/local`, through
//! `scripts/deploy-local.sh`) into the local cloud (`scripts/local-cloud.sh`), the
//! sample live repository as a real git history, the GitHub fake in process, a
//! signed merge webhook, votes through the links of the mails LocalStack's SES
//! mailbox holds, and the final state read back from the metadb, Step Functions
//! and each unit's terraform state. Used by the integration tests and by the
//! `live-ci-demo` binary (`make demo`).

pub mod bench;
pub mod observe;
pub mod repo;
pub mod timeline;
pub mod vote;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

/// Everything that can go wrong driving the pipeline.
#[derive(Debug, thiserror::Error)]
pub enum E2eError {
    /// A command (a script, terraform, git) exited non-zero or did not start.
    #[error("{what} failed ({status}): {stderr}")]
    Command {
        /// The command, as a reader would type it.
        what: String,
        /// Its exit status, or why it did not start.
        status: String,
        /// Its stderr (empty when passed through).
        stderr: String,
    },
    /// A file or directory could not be read or written.
    #[error("I/O on {path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// A command or service printed something other than expected.
    #[error("unexpected output of {what}: {detail}")]
    Parse {
        /// What printed it.
        what: String,
        /// What was wrong, quoting the output.
        detail: String,
    },
    /// An HTTP request to the deployment failed or was refused.
    #[error("HTTP {what}: {detail}")]
    Http {
        /// The request (or `client` when the client could not be built).
        what: String,
        /// The status and answer, or the transport error.
        detail: String,
    },
    /// A direct query of the metadb's PostgreSQL failed.
    #[error("metadb: {0}")]
    Db(#[from] tokio_postgres::Error),
    /// A metadb adapter call failed.
    #[error("metadb: {0}")]
    Metadb(#[from] live_ci_metadb::MetadbError),
    /// A Step Functions call failed (the call and the SDK's error).
    #[error("Step Functions: {0}")]
    Sfn(String),
    /// A wait ran out.
    #[error("timed out after {secs} s waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long, in seconds.
        secs: u64,
    },
}

/// The result of every step that drives the pipeline.
pub type Result<T, E = E2eError> = std::result::Result<T, E>;

/// The repository root (this crate lives at `tests/e2e`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `$LIVE_CI_WORK`, as the scripts default it.
pub fn work_dir() -> PathBuf {
    std::env::var_os("LIVE_CI_WORK")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".work"))
}

/// Runs a command to completion; its stdout on success. stderr is passed
/// through when `show` (the demo shows the deploy), else kept for the error.
pub async fn run_command(
    what: &str,
    mut cmd: tokio::process::Command,
    show: bool,
) -> Result<String> {
    cmd.stdout(Stdio::piped())
        .stderr(if show {
            Stdio::inherit()
        } else {
            Stdio::piped()
        })
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let out = cmd.output().await.map_err(|source| E2eError::Io {
        path: what.to_string(),
        source,
    })?;
    if !out.status.success() {
        return Err(E2eError::Command {
            what: what.to_string(),
            status: out.status.to_string(),
            stderr: tail(&String::from_utf8_lossy(&out.stderr), 4000),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn tail(s: &str, n: usize) -> String {
    let start = s.len().saturating_sub(n);
    let start = (start..s.len())
        .find(|i| s.is_char_boundary(*i))
        .unwrap_or(s.len());
    s[start..].to_string()
}

/// The running local cloud, as `scripts/local-cloud.sh up` prints it.
#[derive(Debug, Clone)]
pub struct Cloud {
    /// The `export NAME=value` lines `up` printed, by name (`AWS_ENDPOINT_URL`,
    /// `LIVE_CI_PG_URL`, ...).
    pub env: BTreeMap<String, String>,
}

impl Cloud {
    /// Starts the local cloud unless it runs (idempotent) and reads its env.
    pub async fn up(show: bool) -> Result<Self> {
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg(repo_root().join("scripts/local-cloud.sh"))
            .arg("up");
        let out = run_command("scripts/local-cloud.sh up", cmd, show).await?;
        let env: BTreeMap<String, String> = out
            .lines()
            .filter_map(|l| l.strip_prefix("export "))
            .filter_map(|l| l.split_once('='))
            // Values with shell metacharacters (the PostgreSQL URL's `&`) come quoted.
            .map(|(k, v)| (k.to_string(), v.trim_matches('\'').to_string()))
            .collect();
        for key in ["AWS_ENDPOINT_URL", "LIVE_CI_PG_URL"] {
            if !env.contains_key(key) {
                return Err(E2eError::Parse {
                    what: "scripts/local-cloud.sh up".into(),
                    detail: format!("no {key} in {out:?}"),
                });
            }
        }
        Ok(Cloud { env })
    }

    /// Stops the local cloud (`make demo`'s teardown).
    pub async fn down(show: bool) -> Result<()> {
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg(repo_root().join("scripts/local-cloud.sh"))
            .arg("down");
        run_command("scripts/local-cloud.sh down", cmd, show)
            .await
            .map(|_| ())
    }

    /// LocalStack's endpoint (`AWS_ENDPOINT_URL`, default `http://127.0.0.1:4566`).
    pub fn endpoint(&self) -> &str {
        self.env
            .get("AWS_ENDPOINT_URL")
            .map_or("http://127.0.0.1:4566", String::as_str)
    }

    /// The local PostgreSQL's URL (`LIVE_CI_PG_URL`; empty when absent).
    pub fn pg_url(&self) -> &str {
        self.env.get("LIVE_CI_PG_URL").map_or("", String::as_str)
    }

    /// A new, empty database on the local PostgreSQL for one deployment's
    /// metadb (`<prefix>_<unix seconds>`): the sample's merge commits are the
    /// same on every build, and a metadb holds one run per commit. Its URL.
    pub async fn fresh_database(&self, prefix: &str) -> Result<String> {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let name = format!("{prefix}_{secs}_{}", std::process::id());
        // TLS verified as the binaries do it (the URL names the test CA).
        let client = live_ci_metadb::connect(self.pg_url()).await?;
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await?;
        Ok(live_ci_metadb::with_database(self.pg_url(), &name))
    }

    /// Empties LocalStack's SES mailbox, so only this deployment's mails are read.
    pub async fn clear_mailbox(&self, http: &reqwest::Client) -> Result<()> {
        let url = format!("{}/_aws/ses", self.endpoint().trim_end_matches('/'));
        http.delete(&url)
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(|e| E2eError::Http {
                what: url,
                detail: e.to_string(),
            })?;
        Ok(())
    }
}

/// What the local cloud's IAM enforcement decided (`GET /_live_ci/iam/stats`,
/// localcloud/README.md "IAM").
#[derive(Debug, Clone, serde::Deserialize)]
pub struct IamStats {
    /// Whether requests are checked against the roles' policies at all.
    pub enforced: bool,
    /// Requests the policies allowed.
    pub authorised: u64,
    /// Requests the policies denied.
    pub denied: u64,
    /// Each denial: `role`, `action`, `resource`, `message`.
    pub denials: Vec<BTreeMap<String, String>>,
    /// Per statement: the requests it allowed, and allowed alone.
    pub statements: BTreeMap<String, StatementUse>,
    /// Operations outside the local cloud's action table (`iam_actions.py`),
    /// authorised as `<prefix>:<Operation>` on `*`: how often, and by which roles.
    #[serde(default)]
    pub unmapped: BTreeMap<String, u64>,
    /// Per unmapped action: the roles (ARNs) that made it.
    #[serde(default)]
    pub unmapped_roles: BTreeMap<String, Vec<String>>,
}

/// The account the local cloud deploys live-ci into: its roles are live-ci's own;
/// the target accounts' roles (other ids) run repository code (terraform).
pub const DEPLOYMENT_ACCOUNT: &str = "000000000000";

impl IamStats {
    /// Each unmapped action a role of live-ci's own account made, with those roles.
    /// Every AWS call of live-ci's code must be in the table, its resource checked
    /// as AWS does; calls of the target accounts' roles are terraform's (the
    /// repository's code) and are only counted.
    pub fn unmapped_own_calls(&self) -> BTreeMap<&str, Vec<&str>> {
        let own = format!(":iam::{DEPLOYMENT_ACCOUNT}:");
        self.unmapped_roles
            .iter()
            .filter_map(|(action, roles)| {
                let mine: Vec<&str> = roles
                    .iter()
                    .map(String::as_str)
                    .filter(|r| r.contains(&own))
                    .collect();
                (!mine.is_empty()).then_some((action.as_str(), mine))
            })
            .collect()
    }
}

/// How much one policy statement was used (see [`IamStats::statements`]).
#[derive(Debug, Clone, Copy, serde::Deserialize)]
pub struct StatementUse {
    /// Requests it allowed.
    pub allowed: u64,
    /// Requests it allowed that no other statement would have.
    pub sole: u64,
}

impl Cloud {
    /// The IAM enforcement's counts since the cloud started.
    pub async fn iam_stats(&self, http: &reqwest::Client) -> Result<IamStats> {
        let url = format!(
            "{}/_live_ci/iam/stats",
            self.endpoint().trim_end_matches('/')
        );
        let http_error = |e: reqwest::Error| E2eError::Http {
            what: url.clone(),
            detail: e.to_string(),
        };
        let body = http
            .get(&url)
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(http_error)?
            .text()
            .await
            .map_err(http_error)?;
        serde_json::from_str(&body).map_err(|e| E2eError::Parse {
            what: url.clone(),
            detail: format!("{e}: {body}"),
        })
    }

    /// The ARNs of the roles a deployment of the module named `name` made
    /// (tagged `live-ci:name`, infra/main.tf): whose denials the
    /// least-privilege check counts. Other suites share the local cloud and
    /// make roles of their own in the same account, some denied on purpose.
    pub async fn module_roles(&self, name: &str) -> Result<std::collections::BTreeSet<String>> {
        let iam = aws_sdk_iam::Client::new(&live_ci_testkit::aws::sdk_config_for(self.endpoint()));
        let failed = |what: &str, e: String| E2eError::Http {
            what: format!("iam {what}"),
            detail: e,
        };
        let mut roles = std::collections::BTreeSet::new();
        let mut pages = iam.list_roles().into_paginator().send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| failed("ListRoles", format!("{e:?}")))?;
            for role in page.roles() {
                let tags = iam
                    .list_role_tags()
                    .role_name(role.role_name())
                    .send()
                    .await
                    .map_err(|e| failed("ListRoleTags", format!("{e:?}")))?;
                if tags
                    .tags()
                    .iter()
                    .any(|t| t.key() == "live-ci:name" && t.value() == name)
                {
                    roles.insert(role.arn().to_string());
                }
            }
        }
        Ok(roles)
    }
}

/// The webhook secret, token and vote key of the local deployment.
pub const WEBHOOK_SECRET: &str = "local-webhook-secret-for-the-local-cloud";
/// The sample repository's name, as the webhook fixture and the module know it.
pub const REPO_FULL_NAME: &str = "acme/infrastructure-live";

/// What one `terraform apply` of `examples/local` deployed.
#[derive(Debug, Clone)]
pub struct Deployment {
    /// The receiver's Function URL (output `webhook_url`): where GitHub's webhooks go.
    pub webhook_url: String,
    /// approval_response's Function URL (output `approval_url`): the vote links' base.
    pub approval_url: String,
    /// The deployment state machine's ARN.
    pub state_machine_arn: String,
    /// The topic the state machine publishes approval requests (task tokens) to.
    pub approval_topic_arn: String,
    /// The metadb of this deployment.
    pub metadb_url: String,
    /// Where the sample units' terraform state lives: `<dir>/<commit>/<cfg_path with _>.tfstate`.
    pub state_dir: PathBuf,
    /// Every output of the module (`terraform output -json`), e.g. the task roles.
    pub outputs: Value,
}

impl Deployment {
    /// `scripts/deploy-local.sh apply` with the fake GitHub and the sample repo.
    pub async fn apply(
        cloud: &Cloud,
        metadb_url: &str,
        github_api_url: &str,
        clone_url: &Path,
        build: bool,
        show: bool,
    ) -> Result<Self> {
        Self::apply_with(
            cloud,
            metadb_url,
            github_api_url,
            clone_url,
            build,
            show,
            &[],
        )
        .await
    }

    /// [`Deployment::apply`] with more `scripts/deploy-local.sh` settings
    /// (`LIVE_CI_MAX_PARALLEL`, `LIVE_CI_ACCOUNTS_FILE`, `LIVE_CI_ALLOW_DESTROY`, …).
    pub async fn apply_with(
        cloud: &Cloud,
        metadb_url: &str,
        github_api_url: &str,
        clone_url: &Path,
        build: bool,
        show: bool,
        settings: &[(&str, String)],
    ) -> Result<Self> {
        // Per metadb: a fresh database starts with fresh unit state.
        let db_name = metadb_url
            .split('?')
            .next()
            .and_then(|base| base.rsplit('/').next())
            .unwrap_or("metadb");
        let state_dir = work_dir().join("tfstate").join(db_name);
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg(repo_root().join("scripts/deploy-local.sh"))
            .arg("apply")
            .envs(&cloud.env)
            .env("LIVE_CI_METADB_URL", metadb_url)
            .env("LIVE_CI_GITHUB_API_URL", github_api_url)
            .env("LIVE_CI_REPO_CLONE_URL", clone_url)
            .env("LIVE_CI_WEBHOOK_SECRET", WEBHOOK_SECRET)
            .env("LIVE_CI_STATE_DIR", &state_dir)
            .env("LIVE_CI_SKIP_BUILD", if build { "0" } else { "1" })
            .envs(settings.iter().map(|(k, v)| (*k, v.as_str())));
        let out = run_command("scripts/deploy-local.sh apply", cmd, show).await?;
        check_metadb_connection(&metadb_connection(), &work_dir())?;
        let outputs: Value = serde_json::from_str(&out).map_err(|e| E2eError::Parse {
            what: "terraform output -json".into(),
            detail: e.to_string(),
        })?;
        let get = |name: &str| -> Result<String> {
            outputs[name]["value"]
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| E2eError::Parse {
                    what: "terraform output -json".into(),
                    detail: format!("no output {name}"),
                })
        };
        Ok(Deployment {
            webhook_url: get("webhook_url")?,
            approval_url: get("approval_url")?,
            state_machine_arn: get("state_machine_arn")?,
            approval_topic_arn: get("approval_topic_arn")?,
            metadb_url: metadb_url.to_string(),
            state_dir,
            outputs,
        })
    }
}

/// How the deployed components reach the metadb, as `scripts/deploy-local.sh`
/// reads it: `data-api` (the module default, through the local cloud's rds-data
/// service) unless `LIVE_CI_METADB_CONNECTION` says `direct`.
pub fn metadb_connection() -> String {
    std::env::var("LIVE_CI_METADB_CONNECTION").unwrap_or_else(|_| "data-api".into())
}

/// On the Data API, no deployed component may be handed a direct `METADB_URL`
/// (the Lambda wrappers and the task's image-map entry would then bypass the
/// Data API and the e2e would prove nothing about it).
pub fn check_metadb_connection(connection: &str, work: &Path) -> Result<()> {
    if connection != "data-api" {
        return Ok(());
    }
    let mut files = vec![work.join("localcloud/image-map.json")];
    let lambdas = work.join("deploy-local/lambda");
    let entries = std::fs::read_dir(&lambdas).map_err(|source| E2eError::Io {
        path: lambdas.display().to_string(),
        source,
    })?;
    // With `make package` zips (make e2e-release) there is no wrapper to read.
    for entry in entries.flatten() {
        let wrapper = entry.path().join("src/bootstrap");
        if wrapper.exists() {
            files.push(wrapper);
        }
    }
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|source| E2eError::Io {
            path: file.display().to_string(),
            source,
        })?;
        if text.contains("METADB_URL") {
            return Err(E2eError::Parse {
                what: "the data-api deployment".into(),
                detail: format!(
                    "{} hands METADB_URL to a component: the metadb would bypass the data api",
                    file.display()
                ),
            });
        }
    }
    Ok(())
}

/// A Function URL's host does not resolve here: send to LocalStack with that
/// `Host` header. Returns (the URL to send to, the Host header).
pub fn function_url_target(endpoint: &str, url: &str) -> Result<(String, String)> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| E2eError::Parse {
            what: "Function URL".into(),
            detail: url.to_string(),
        })?;
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    Ok((
        format!("{}/{path}", endpoint.trim_end_matches('/')),
        host.to_string(),
    ))
}

/// A merged pull request, as the webhook describes it.
#[derive(Debug, Clone)]
pub struct Merge {
    /// The pull request number.
    pub number: u64,
    /// The merge commit on the trunk.
    pub merge_commit: String,
    /// The merge's first parent: the trunk before the merge.
    pub base_sha: String,
    /// The merge's second parent: the pull request's head.
    pub head_sha: String,
    /// The pull request's branch name.
    pub head_ref: String,
}

/// The `pull_request` `closed` + merged payload (from the receiver's fixture,
/// with this merge's numbers and commits).
pub fn merge_payload(merge: &Merge) -> Result<Vec<u8>> {
    let path = repo_root().join("tests/fixtures/github/pull_request_closed_merged.json");
    let text = std::fs::read_to_string(&path).map_err(|source| E2eError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let mut v: Value = serde_json::from_str(&text).map_err(|e| E2eError::Parse {
        what: path.display().to_string(),
        detail: e.to_string(),
    })?;
    v["number"] = json!(merge.number);
    let pr = &mut v["pull_request"];
    pr["number"] = json!(merge.number);
    pr["merge_commit_sha"] = json!(merge.merge_commit);
    pr["head"]["sha"] = json!(merge.head_sha);
    pr["head"]["ref"] = json!(merge.head_ref);
    pr["base"]["sha"] = json!(merge.base_sha);
    pr["base"]["ref"] = json!("main");
    serde_json::to_vec(&v).map_err(|e| E2eError::Parse {
        what: "payload".into(),
        detail: e.to_string(),
    })
}

/// `X-Hub-Signature-256` of a body.
pub fn sign(secret: &str, body: &[u8]) -> String {
    // HMAC takes keys of any length: new_from_slice cannot fail for it.
    let mut mac = match Hmac::<Sha256>::new_from_slice(secret.as_bytes()) {
        Ok(m) => m,
        Err(_) => return String::new(),
    };
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// POSTs a signed merge webhook to the receiver's Function URL; the status and
/// the receiver's JSON answer.
pub async fn send_merge_webhook(
    http: &reqwest::Client,
    endpoint: &str,
    deployment: &Deployment,
    merge: &Merge,
    delivery: &str,
) -> Result<(u16, Value)> {
    let body = merge_payload(merge)?;
    send_webhook(http, endpoint, deployment, "pull_request", delivery, body).await
}

/// POSTs any signed delivery (`event` as `X-GitHub-Event`) to the receiver.
pub async fn send_webhook(
    http: &reqwest::Client,
    endpoint: &str,
    deployment: &Deployment,
    event: &str,
    delivery: &str,
    body: Vec<u8>,
) -> Result<(u16, Value)> {
    let (url, host) = function_url_target(endpoint, &deployment.webhook_url)?;
    let resp = http
        .post(&url)
        .header("host", host)
        .header("content-type", "application/json")
        .header("x-github-event", event)
        .header("x-github-delivery", delivery)
        .header("x-hub-signature-256", sign(WEBHOOK_SECRET, &body))
        .body(body)
        .send()
        .await
        .map_err(|e| E2eError::Http {
            what: "webhook".into(),
            detail: e.to_string(),
        })?;
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap_or_default();
    let json = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Ok((status, json))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unmapped_calls_of_live_ci_roles_are_its_own() {
        let stats: IamStats = serde_json::from_value(serde_json::json!({
            "enforced": true, "authorised": 3, "denied": 0, "denials": [], "statements": {},
            "unmapped": {"ssm:DescribeParameters": 2, "ssm:DeleteParameter": 1},
            "unmapped_roles": {
                "ssm:DescribeParameters": ["arn:aws:iam::222222222222:role/live-ci-plan",
                                           "arn:aws:iam::000000000000:role/live-ci-terra-run"],
                "ssm:DeleteParameter": ["arn:aws:iam::222222222222:role/live-ci-apply"]
            }
        }))
        .unwrap();
        let own = stats.unmapped_own_calls();
        assert_eq!(
            own.into_iter().collect::<Vec<_>>(),
            [(
                "ssm:DescribeParameters",
                vec!["arn:aws:iam::000000000000:role/live-ci-terra-run"]
            )]
        );
    }

    #[test]
    fn function_urls_go_to_the_endpoint_with_their_host() {
        let (url, host) = function_url_target(
            "http://127.0.0.1:4566",
            "http://abc.lambda-url.us-east-1.localhost.localstack.cloud:4566/?t=x",
        )
        .unwrap();
        assert_eq!(url, "http://127.0.0.1:4566/?t=x");
        assert_eq!(
            host,
            "abc.lambda-url.us-east-1.localhost.localstack.cloud:4566"
        );
    }

    fn deployed(image_map: &str, wrapper: &str) -> tempfile::TempDir {
        let work = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(work.path().join("localcloud")).unwrap();
        std::fs::write(work.path().join("localcloud/image-map.json"), image_map).unwrap();
        let src = work.path().join("deploy-local/lambda/receiver/src");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("bootstrap"), wrapper).unwrap();
        work
    }

    #[test]
    fn a_data_api_deployment_handing_out_metadb_url_is_refused() {
        let direct_wrapper = "#!/bin/sh\nexport METADB_URL='postgres://x'\nexec receiver\n";
        let work = deployed(
            r#"{"live-ci-task": ["/usr/bin/env", "live-ci-task"]}"#,
            direct_wrapper,
        );
        let err = check_metadb_connection("data-api", work.path()).unwrap_err();
        assert!(err.to_string().contains("receiver/src/bootstrap"), "{err}");
        // Direct mode may hand it out.
        check_metadb_connection("direct", work.path()).unwrap();

        let work = deployed(
            r#"{"live-ci-task": ["/usr/bin/env", "METADB_URL=postgres://x", "live-ci-task"]}"#,
            "#!/bin/sh\nexec receiver\n",
        );
        let err = check_metadb_connection("data-api", work.path()).unwrap_err();
        assert!(err.to_string().contains("image-map.json"), "{err}");

        let work = deployed(
            r#"{"live-ci-task": ["/usr/bin/env", "live-ci-task"]}"#,
            "#!/bin/sh\nexec receiver\n",
        );
        check_metadb_connection("data-api", work.path()).unwrap();
    }

    #[test]
    fn the_signature_is_githubs() {
        // GitHub's documented example: secret "It's a Secret to Everybody".
        assert_eq!(
            sign("It's a Secret to Everybody", b"Hello, World!"),
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
        );
    }
}
