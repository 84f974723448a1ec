//! The approval store port over any [`Sql`] connection: the same SQL text for
//! PostgreSQL and the RDS Data API, like the rest of [`Store`].

use serde::Deserialize;

use live_ci_core::deploy::{ExecutionRecord, ExecutionStatus, RunId, Tally, Vote, VoteOutcome};
use live_ci_core::port::{
    ApprovalRecord, ApprovalStore, Ballot, ExecutionStore, NewApprovalRequest, RequestStored,
    StoredRequest, TokenDelivery, VoteView, Voted,
};
use live_ci_core::run_view::RunView;

use crate::error::{MetadbError, Result};
use crate::sql::approval_statements as q;
use crate::sql::statements as votes;
use crate::sql::{Param, Sql};
use crate::store::{Store, decode, decode_all, decode_first};

/// `STORE_APPROVAL_REQUEST`'s answer.
#[derive(Deserialize)]
struct StoreRow {
    stored: String,
    expires_at: Option<i64>,
    mailed: Vec<String>,
    #[serde(default)]
    run_id: Option<RunId>,
}

#[derive(Deserialize)]
struct VoteContext {
    status: ExecutionStatus,
    decision: Option<Vote>,
    is_voter: bool,
}

fn first_line(statement: &str) -> String {
    statement.lines().next().unwrap_or_default().to_string()
}

impl<S: Sql> ApprovalStore for Store<S> {
    type Error = MetadbError;

    async fn store_approval_request(&self, r: &NewApprovalRequest) -> Result<RequestStored> {
        Ok(self.store_approval_request_for_mail(r).await?.stored)
    }

    async fn store_approval_request_for_mail(
        &self,
        r: &NewApprovalRequest,
    ) -> Result<StoredRequest> {
        let rows = self
            .sql()
            .query(
                q::STORE_APPROVAL_REQUEST,
                &[
                    ("execution_id", Param::text(&r.execution_id)),
                    ("sfn_execution_arn", Param::text(&r.sfn_execution_arn)),
                    (
                        "task_token_ciphertext",
                        Param::text(&r.task_token_ciphertext),
                    ),
                    ("task_token_hash", Param::text(&r.task_token_hash)),
                    ("to_add", Param::Int(i64::from(r.to_add))),
                    ("to_change", Param::Int(i64::from(r.to_change))),
                    ("to_destroy", Param::Int(i64::from(r.to_destroy))),
                    ("plan_summary", Param::text(&r.plan_summary)),
                    ("logs_url", Param::text(&r.logs_url)),
                    ("expires_at", Param::Int(r.expires_at)),
                ],
            )
            .await?;
        let row: StoreRow =
            decode_first(q::STORE_APPROVAL_REQUEST, &rows)?.ok_or_else(|| MetadbError::Decode {
                statement: first_line(q::STORE_APPROVAL_REQUEST),
                message: "no row".into(),
            })?;
        let stored = match row.stored.as_str() {
            "stored" => RequestStored::Stored,
            "repeated" => RequestStored::Repeated,
            "decided" => RequestStored::Decided,
            "unknown" => RequestStored::UnknownExecution,
            other => {
                return Err(MetadbError::Decode {
                    statement: first_line(q::STORE_APPROVAL_REQUEST),
                    message: format!("unexpected answer {other:?}"),
                });
            }
        };
        Ok(StoredRequest {
            stored,
            expires_at: row.expires_at,
            mailed: row.mailed,
            run_id: row.run_id,
        })
    }

    async fn approval_request(&self, execution_id: &str) -> Result<Option<ApprovalRecord>> {
        let rows = self
            .sql()
            .query(
                q::APPROVAL_REQUEST,
                &[("execution_id", Param::text(execution_id))],
            )
            .await?;
        rows.first()
            .map(|row| {
                serde_json::from_str(row).map_err(|e| MetadbError::Decode {
                    statement: first_line(q::APPROVAL_REQUEST),
                    message: format!("{e} in {row:?}"),
                })
            })
            .transpose()
    }

    async fn mailed_voters(
        &self,
        execution_id: &str,
        task_token_hash: &str,
    ) -> Result<Vec<String>> {
        self.sql()
            .query(
                q::MAILED_VOTERS,
                &[
                    ("execution_id", Param::text(execution_id)),
                    ("task_token_hash", Param::text(task_token_hash)),
                ],
            )
            .await
    }

    async fn record_mailed(
        &self,
        execution_id: &str,
        task_token_hash: &str,
        voter: &str,
        message_id: &str,
    ) -> Result<bool> {
        let rows = self
            .sql()
            .query(
                q::RECORD_MAILED,
                &[
                    ("execution_id", Param::text(execution_id)),
                    ("task_token_hash", Param::text(task_token_hash)),
                    ("voter", Param::text(voter)),
                    ("message_id", Param::text(message_id)),
                ],
            )
            .await?;
        Ok(!rows.is_empty())
    }

    async fn record_mails(
        &self,
        execution_id: &str,
        task_token_hash: &str,
        mails: &[(String, String)],
    ) -> Result<Vec<String>> {
        if mails.is_empty() {
            return Ok(Vec::new());
        }
        let mails: Vec<serde_json::Value> = mails
            .iter()
            .map(
                |(voter, message_id)| serde_json::json!({"voter": voter, "message_id": message_id}),
            )
            .collect();
        self.sql()
            .query(
                q::RECORD_MAILS,
                &[
                    ("execution_id", Param::text(execution_id)),
                    ("task_token_hash", Param::text(task_token_hash)),
                    (
                        "mails",
                        Param::text(serde_json::Value::Array(mails).to_string()),
                    ),
                ],
            )
            .await
    }

    async fn claim_decision_delivery(&self, execution_id: &str, lease_secs: u32) -> Result<bool> {
        let rows = self
            .sql()
            .query(
                q::CLAIM_DECISION_DELIVERY,
                &[
                    ("execution_id", Param::text(execution_id)),
                    ("lease_secs", Param::Int(i64::from(lease_secs))),
                ],
            )
            .await?;
        Ok(!rows.is_empty())
    }

    async fn record_decision_delivery(
        &self,
        execution_id: &str,
        delivery: &TokenDelivery,
    ) -> Result<bool> {
        let (outcome, reason) = delivery.parts();
        let rows = self
            .sql()
            .query(
                q::RECORD_DECISION_DELIVERY,
                &[
                    ("execution_id", Param::text(execution_id)),
                    ("delivery", Param::text(outcome)),
                    ("delivery_reason", Param::opt_text(reason)),
                ],
            )
            .await?;
        Ok(!rows.is_empty())
    }

    async fn approval_execution(&self, execution_id: &str) -> Result<Option<ExecutionRecord>> {
        ExecutionStore::execution(self, execution_id).await
    }

    async fn cast_vote(&self, execution_id: &str, voter: &str, vote: Vote) -> Result<VoteOutcome> {
        let stored = self
            .sql()
            .query(
                votes::CAST_VOTE,
                &[
                    ("execution_id", Param::text(execution_id)),
                    ("voter", Param::text(voter)),
                    ("vote", Param::text(vote.as_str())),
                ],
            )
            .await?;
        if !stored.is_empty() {
            return match self.tally(execution_id).await? {
                Some(t) => Ok(VoteOutcome::Recorded(t)),
                None => Ok(VoteOutcome::UnknownExecution),
            };
        }
        let rows = self
            .sql()
            .query(
                votes::VOTE_CONTEXT,
                &[
                    ("execution_id", Param::text(execution_id)),
                    ("voter", Param::text(voter)),
                ],
            )
            .await?;
        Ok(
            match decode_first::<VoteContext>(votes::VOTE_CONTEXT, &rows)? {
                None => VoteOutcome::UnknownExecution,
                Some(c) if !c.is_voter => VoteOutcome::NotAVoter,
                Some(c) => VoteOutcome::Closed {
                    status: c.status,
                    decision: c.decision,
                },
            },
        )
    }

    async fn tally(&self, execution_id: &str) -> Result<Option<Tally>> {
        let rows = self
            .sql()
            .query(votes::TALLY, &[("execution_id", Param::text(execution_id))])
            .await?;
        decode_first(votes::TALLY, &rows)
    }

    async fn decide(&self, execution_id: &str) -> Result<Option<Vote>> {
        let rows = self
            .sql()
            .query(
                votes::DECIDE,
                &[("execution_id", Param::text(execution_id))],
            )
            .await?;
        Ok(match rows.first().map(String::as_str) {
            Some("approve") => Some(Vote::Approve),
            Some("reject") => Some(Vote::Reject),
            _ => None,
        })
    }

    async fn voted_plan(
        &self,
        execution_id: &str,
    ) -> Result<Option<live_ci_core::port::SavedPlan>> {
        live_ci_core::port::ExecutionStore::saved_plan(self, execution_id).await
    }

    async fn vote_view(&self, execution_id: &str) -> Result<Option<VoteView>> {
        let rows = self
            .sql()
            .query(q::VOTE_VIEW, &[("execution_id", Param::text(execution_id))])
            .await?;
        decode_first(q::VOTE_VIEW, &rows)
    }

    async fn run_view(&self, run_id: RunId, limit: u32) -> Result<Option<RunView>> {
        // Two reads at once: the run, and its units with plans and votes.
        let run_params = [("run_id", Param::Int(run_id))];
        let unit_params = [
            ("run_id", Param::Int(run_id)),
            ("limit", Param::Int(i64::from(limit))),
        ];
        let (run, units) = tokio::join!(
            self.sql().query(votes::RUN_BY_ID, &run_params),
            self.sql().query(q::RUN_VIEW_UNITS, &unit_params)
        );
        let Some(run) = decode_first(votes::RUN_BY_ID, &run?)? else {
            return Ok(None);
        };
        let units = decode_all(q::RUN_VIEW_UNITS, &units?)?;
        Ok(Some(RunView { run, units }))
    }

    async fn vote(&self, ballot: &Ballot<'_>) -> Result<Option<Voted>> {
        // Not retried: a vote whose answer was lost may have taken the
        // hand-over, and a retry would then show it as someone else's.
        let rows = self
            .sql()
            .query(
                q::VOTE,
                &[
                    ("execution_id", Param::text(ballot.execution_id)),
                    ("voter", Param::text(ballot.voter)),
                    ("vote", Param::text(ballot.vote.as_str())),
                    ("task_token_hash", Param::text(ballot.task_token_hash)),
                    ("lease_secs", Param::Int(i64::from(ballot.lease_secs))),
                    ("channel", Param::text(ballot.channel.as_str())),
                    ("reason", ballot.reason.map_or(Param::NullText, Param::text)),
                    (
                        "github_login",
                        ballot.github_login.map_or(Param::NullText, Param::text),
                    ),
                ],
            )
            .await?;
        // SQL NULL: no execution has the id.
        match rows.first().map(String::as_str) {
            None | Some("") => Ok(None),
            Some(row) => decode(q::VOTE, row).map(Some),
        }
    }

    async fn awaiting_vote(&self, commit: &str, unit: &str) -> Result<Option<VoteView>> {
        let rows = self
            .sql()
            .query(
                q::AWAITING_VOTE,
                &[("commit", Param::text(commit)), ("unit", Param::text(unit))],
            )
            .await?;
        // SQL NULL: no execution of the unit awaits approval in that run.
        match rows.first().map(String::as_str) {
            None | Some("") => Ok(None),
            Some(row) => decode(q::AWAITING_VOTE, row).map(Some),
        }
    }
}
