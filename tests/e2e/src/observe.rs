//! Watching a run and collecting its outcome: the metadb rows (runs,
//! executions, merge lock), the Step Functions execution statuses and the
//! terraform state of each unit; and the loop that votes on each unit's mail
//! as it arrives until the run has finished.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::vote::{self, Vote};
use crate::{E2eError, Result};

/// One execution row.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionRow {
    /// The execution's metadb id.
    pub execution_id: String,
    /// The unit's directory, repository-relative.
    pub cfg_path: String,
    /// The account the unit deploys to.
    pub account_name: String,
    /// `apply` or `destroy`, as stored.
    pub action: String,
    /// Whether it is a rollback execution rather than the unit's deploy.
    pub is_rollback: bool,
    /// The execution's status, as stored.
    pub status: String,
    /// Why it has that status, when recorded.
    pub status_reason: Option<String>,
    /// The voters' decision, once handed over.
    pub decision: Option<String>,
    /// The Step Functions execution's ARN, once started.
    pub sfn_execution_arn: Option<String>,
}

/// A run and its executions.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    /// The run's metadb id.
    pub run_id: i64,
    /// The run's status, as stored.
    pub status: String,
    /// Its executions (rollbacks included).
    pub executions: Vec<ExecutionRow>,
}

impl RunRow {
    /// Ended: deployed, failed, or superseded by a run at a newer trunk commit.
    pub fn finished(&self) -> bool {
        matches!(self.status.as_str(), "succeeded" | "failed" | "superseded")
    }

    /// The run's non-rollback executions by unit path.
    pub fn by_path(&self) -> BTreeMap<String, &ExecutionRow> {
        self.executions
            .iter()
            .filter(|e| !e.is_rollback)
            .map(|e| (e.cfg_path.clone(), e))
            .collect()
    }
}

/// A metadb connection (the local PostgreSQL).
pub struct Metadb {
    client: tokio_postgres::Client,
}

impl std::fmt::Debug for Metadb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metadb")
    }
}

impl Metadb {
    /// Connects to the metadb at PostgreSQL URL `url`.
    pub async fn connect(url: &str) -> Result<Self> {
        let client = live_ci_metadb::connect(url).await?;
        Ok(Metadb { client })
    }

    /// How many approval mails approval-request has recorded as sent (any run).
    pub async fn approval_mails_sent(&self) -> Result<i64> {
        let row = self
            .client
            .query_one("SELECT count(*) FROM approval_mails", &[])
            .await?;
        Ok(row.get(0))
    }

    /// Every run of a commit (more than one would be a duplicate deployment).
    pub async fn runs(&self, commit: &str) -> Result<Vec<RunRow>> {
        let rows = self
            .client
            .query(
                "SELECT run_id, status FROM runs WHERE commit_id = $1 ORDER BY run_id",
                &[&commit],
            )
            .await?;
        let mut runs = Vec::new();
        for row in rows {
            let run_id: i64 = row.get(0);
            let executions = self
                .client
                .query(
                    "SELECT execution_id, cfg_path, account_name, action, is_rollback, status, \
                     status_reason, decision, sfn_execution_arn \
                     FROM executions WHERE run_id = $1 ORDER BY seq",
                    &[&run_id],
                )
                .await?
                .into_iter()
                .map(|r| ExecutionRow {
                    execution_id: r.get(0),
                    cfg_path: r.get(1),
                    account_name: r.get(2),
                    action: r.get(3),
                    is_rollback: r.get(4),
                    status: r.get(5),
                    status_reason: r.get(6),
                    decision: r.get(7),
                    sfn_execution_arn: r.get(8),
                })
                .collect();
            runs.push(RunRow {
                run_id,
                status: row.get(1),
                executions,
            });
        }
        Ok(runs)
    }

    /// The run holding the merge lock, if any.
    pub async fn lock_holder(&self) -> Result<Option<i64>> {
        let row = self
            .client
            .query_one("SELECT run_id FROM merge_lock", &[])
            .await?;
        Ok(row.get(0))
    }

    /// Pairs (unit, dependency) of a run where the unit was claimed before its
    /// dependency (same run, execution_deps) finished: must be empty.
    pub async fn order_violations(&self, run_id: i64) -> Result<Vec<(String, String)>> {
        let rows = self
            .client
            .query(
                "SELECT e.cfg_path, d.cfg_path FROM execution_deps x \
                 JOIN executions e ON e.id = x.execution \
                 JOIN executions d ON d.id = x.depends_on \
                 WHERE e.run_id = $1 AND e.claimed_at IS NOT NULL \
                 AND (d.finished_at IS NULL OR d.finished_at > e.claimed_at)",
                &[&run_id],
            )
            .await?;
        Ok(rows.into_iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    /// Pairs (unit, unit of an account it waits for) claimed out of account
    /// order: an apply waits for the applies of the accounts its account
    /// depends on, a destroy for the destroys of the accounts that depend on
    /// its account (`wait_accounts`: same action, reversed for destroys).
    pub async fn account_order_violations(&self, run_id: i64) -> Result<Vec<(String, String)>> {
        let rows = self
            .client
            .query(
                "SELECT e.cfg_path, d.cfg_path FROM executions e \
                 JOIN executions d ON d.run_id = e.run_id \
                 WHERE e.run_id = $1 AND e.claimed_at IS NOT NULL AND NOT d.is_rollback \
                 AND d.action = e.action \
                 AND ((e.action = 'apply' AND e.account_deps ? d.account_name) \
                      OR (e.action = 'destroy' AND d.account_deps ? e.account_name)) \
                 AND (d.finished_at IS NULL OR d.finished_at > e.claimed_at)",
                &[&run_id],
            )
            .await?;
        Ok(rows.into_iter().map(|r| (r.get(0), r.get(1))).collect())
    }
}

fn sfn_client(endpoint: &str) -> aws_sdk_sfn::Client {
    let config = aws_sdk_sfn::Config::builder()
        .behavior_version(aws_sdk_sfn::config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_sdk_sfn::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_sfn::config::Credentials::new(
            "test", "test", None, None, "e2e",
        ))
        .build();
    aws_sdk_sfn::Client::from_conf(config)
}

/// The status of each Step Functions execution (by ARN), from DescribeExecution.
pub async fn sfn_statuses(endpoint: &str, arns: &[String]) -> Result<BTreeMap<String, String>> {
    let client = sfn_client(endpoint);
    let mut out = BTreeMap::new();
    for arn in arns {
        let d = client
            .describe_execution()
            .execution_arn(arn)
            .send()
            .await
            .map_err(|e| E2eError::Sfn(format!("{arn}: {e:?}")))?;
        out.insert(arn.clone(), d.status().as_str().to_string());
    }
    Ok(out)
}

/// When each Step Functions execution (by ARN) started and stopped, in
/// milliseconds since the Unix epoch (`None`: still running).
pub async fn sfn_times(
    endpoint: &str,
    arns: &[String],
) -> Result<BTreeMap<String, (i64, Option<i64>)>> {
    let client = sfn_client(endpoint);
    let millis = |d: &aws_sdk_sfn::primitives::DateTime| {
        d.secs() * 1000 + i64::from(d.subsec_nanos() / 1_000_000)
    };
    let mut out = BTreeMap::new();
    for arn in arns {
        let d = client
            .describe_execution()
            .execution_arn(arn)
            .send()
            .await
            .map_err(|e| E2eError::Sfn(format!("{arn}: {e:?}")))?;
        out.insert(
            arn.clone(),
            (millis(d.start_date()), d.stop_date().map(millis)),
        );
    }
    Ok(out)
}

/// The resource addresses in a unit's terraform state at a commit (the plan
/// and apply templates of `scripts/deploy-local.sh` keep it there); `None`
/// when no state was written.
pub fn tf_resources(state_dir: &Path, commit: &str, cfg_path: &str) -> Option<BTreeSet<String>> {
    let path = state_dir
        .join(commit)
        .join(format!("{}.tfstate", cfg_path.replace('/', "_")));
    let text = std::fs::read_to_string(path).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    Some(
        v["resources"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|r| {
                        format!(
                            "{}.{}",
                            r["type"].as_str().unwrap_or_default(),
                            r["name"].as_str().unwrap_or_default()
                        )
                    })
                    .collect()
            })
            .unwrap_or_default(),
    )
}

/// What happened while driving a run.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The run as it ended.
    pub run: RunRow,
    /// Executions voted on, with the vote.
    pub votes: BTreeMap<String, Vote>,
    /// From the start of the wait to the run's end.
    pub elapsed: Duration,
}

/// Waits for the run of `commit`, votes on each of its units' mails as they
/// come (`decide` by cfg_path; one voter's link per execution), and returns
/// once the run has finished. `on_tick` sees every snapshot (the demo logs).
pub async fn drive(
    db: &Metadb,
    http: &reqwest::Client,
    endpoint: &str,
    commit: &str,
    timeout: Duration,
    decide: &(dyn Fn(&ExecutionRow) -> Vote + Sync),
    on_vote: &(dyn Fn(&ExecutionRow, Vote) + Sync),
) -> Result<Outcome> {
    let poll = Duration::from_millis(500);
    drive_polling(db, http, endpoint, commit, timeout, poll, decide, on_vote).await
}

/// How often [`drive_polling`] asks the metadb whether approval-request sent
/// a mail: as soon as one is recorded, the mailbox is read, as a voter reads a
/// mail when it arrives. The mailbox itself (every mail, from the local cloud)
/// is read only then or every `poll`.
const MAIL_SENT_CHECK: Duration = Duration::from_millis(20);

/// `drive`, reading the mailbox when a mail was sent and at least every
/// `poll`: the benchmark polls often, so that a unit's approval waits on the
/// pipeline and not on the voter.
#[allow(clippy::too_many_arguments)]
pub async fn drive_polling(
    db: &Metadb,
    http: &reqwest::Client,
    endpoint: &str,
    commit: &str,
    timeout: Duration,
    poll: Duration,
    decide: &(dyn Fn(&ExecutionRow) -> Vote + Sync),
    on_vote: &(dyn Fn(&ExecutionRow, Vote) + Sync),
) -> Result<Outcome> {
    let start = Instant::now();
    let mut votes = BTreeMap::new();
    let check = MAIL_SENT_CHECK.min(poll);
    // The sent-mail count when the mailbox was last read, and when that was.
    let mut read: Option<(i64, Instant)> = None;
    loop {
        if start.elapsed() > timeout {
            return Err(E2eError::Timeout {
                what: format!("the run of {commit} to finish (votes so far: {votes:?})"),
                secs: timeout.as_secs(),
            });
        }
        let sent = db.approval_mails_sent().await?;
        if read.is_some_and(|(count, at)| count == sent && at.elapsed() < poll) {
            tokio::time::sleep(check).await;
            continue;
        }
        read = Some((sent, Instant::now()));
        let runs = db.runs(commit).await?;
        if let Some(run) = runs.into_iter().next() {
            if run.finished() {
                return Ok(Outcome {
                    run,
                    votes,
                    elapsed: start.elapsed(),
                });
            }
            let ids: BTreeMap<&str, &ExecutionRow> = run
                .executions
                .iter()
                .map(|e| (e.execution_id.as_str(), e))
                .collect();
            let mut ballots = Vec::new();
            for mail in vote::mails(http, endpoint).await? {
                let Some(e) = ids.get(mail.execution_id.as_str()) else {
                    continue;
                };
                if votes.contains_key(&e.execution_id) || e.status != "running" {
                    continue;
                }
                let choice = decide(e);
                let link = match choice {
                    Vote::Approve => mail.approve_url.clone(),
                    Vote::Reject => mail.reject_url.clone(),
                };
                votes.insert(e.execution_id.clone(), choice);
                ballots.push((*e, choice, link));
            }
            // Every voter clicks at once, as people do: one at a time, a
            // hundred units' approvals would queue behind each other here.
            let clicks = ballots
                .iter()
                .map(|(_, _, link)| vote::click(http, endpoint, link));
            for result in futures_util::future::join_all(clicks).await {
                result?;
            }
            for (e, choice, _) in ballots {
                on_vote(e, choice);
            }
        }
        tokio::time::sleep(check).await;
    }
}
