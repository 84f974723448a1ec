//! The handler: validate the request, store it for approval_response (the
//! task token only as its hash and its ciphertext, bound to the execution:
//! whoever reads the metadb cannot complete the waiting state), then mail
//! each voter not yet mailed for this task token.
//!
//! Delivery is at-least-once at the edge only: a repeated SNS delivery mails
//! nobody already recorded as mailed, but a crash between SES accepting the
//! mails and the metadb recording them (once, after the last send: every
//! metadb call is a round trip on the unit's path), or two deliveries racing,
//! can mail a voter twice. Both mails carry valid links for the same vote, so a second
//! copy is harmless; a missed mail would not be.
//!
//! A voter SES refuses for good (a MessageRejected of the sandbox, an
//! AccessDenied) would never get a mail, so nobody could reach the thresholds:
//! the waiting state is failed at once with SendTaskFailure ([`MAIL_REFUSED`]),
//! naming the voter, SES's text and the account, rather than left to the
//! approval timeout. Transient failures are only reported, for the retry.

use aws_lambda_events::event::sns::SnsEvent;
use live_ci_core::approval::{LinkKey, VoteLink, task_token_hash, task_token_hash_hex};
use live_ci_core::deploy::{Vote, is_valid_execution_name};
use live_ci_core::port::{
    ApprovalStore, Classify, Email, ErrorKind, Mailer, NewApprovalRequest, PortError,
    PortResultExt, RequestStored, StoredRequest, TaskFailures, TokenCipher, TokenDelivery,
    address_problem, announce,
};
use live_ci_stepfunctions::ApprovalRequest;
use serde::Serialize;

use crate::config::RequestSettings;
use crate::mail::{MailContext, render_email, vote_url};
use crate::notify::approval_pending;
use crate::ports::RequesterPorts;

/// The error a refused mail fails the approval state with (the state machine's
/// Catch maps it to `ApprovalFailed`, whose cause then starts with it).
pub const MAIL_REFUSED: &str = "MailRefused";

/// Why a request was not (completely) handled. The Lambda reports it as a
/// failed invocation, so the asynchronous retry mails whoever was missed.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// An SNS record's message is not an approval request.
    #[error("sns record {index}: message is not an approval request: {message}")]
    Payload {
        /// The record's position in the event, from 0.
        index: usize,
        /// The JSON parser's complaint.
        message: String,
    },
    /// The request is refused before anything is written or sent.
    #[error("approval request for {execution:?}: {field}: {message}")]
    Invalid {
        /// The deployment execution's id (as the request gave it).
        execution: String,
        /// The request field at fault (`execution.voters`, `task_token`...).
        field: &'static str,
        /// What is wrong with it, quoting the value.
        message: String,
    },
    /// The request names an execution (by id) the metadb has no record of.
    #[error("execution {0:?} is not in the metadb")]
    UnknownExecution(String),
    /// The metadb, SES, Step Functions or SNS failed.
    #[error(transparent)]
    Port(#[from] PortError),
    /// Nothing was stored: a task token is never written unencrypted.
    #[error("encrypting the task token of {execution:?}: {source}")]
    Encrypt {
        /// The deployment execution's id.
        execution: String,
        /// KMS's failure.
        #[source]
        source: PortError,
    },
    /// A voter's signed vote link could not be made.
    #[error("vote link for {voter:?}: {message}")]
    Link {
        /// The voter's address.
        voter: String,
        /// Why the link was refused.
        message: String,
    },
    /// A voter was refused for good but the approval state could not be
    /// failed: retried as the Step Functions call's failure says.
    #[error("failing the approval of {execution:?} after a refused mail ({cause}): {source}")]
    FailApproval {
        /// The deployment execution's id.
        execution: String,
        /// The cause the failure was to carry ([`refusal_cause`]).
        cause: String,
        /// Step Functions' failure.
        #[source]
        source: PortError,
    },
    /// `kind`: retryable when any of the failed sends was (the asynchronous
    /// retry then mails whoever was missed).
    #[error("mailing {failed} of {total} voters of {execution:?} failed: {messages}")]
    Mail {
        /// The deployment execution's id.
        execution: String,
        /// How many voters' mails failed.
        failed: usize,
        /// How many voters the request names.
        total: usize,
        /// Each failure's message, joined by `"; "`.
        messages: String,
        /// Retryable when any failed send was.
        kind: ErrorKind,
    },
}

/// What mailing the voters did.
struct Mailing {
    sent: Vec<(String, String)>,
    failures: Vec<String>,
    /// The voters SES refused for good, with its answer.
    refused: Vec<String>,
    /// Retryable when any failure was.
    kind: ErrorKind,
}

impl RequestError {
    /// Whether the asynchronous retry can succeed: a port's or mailing's own
    /// kind; a bad request is permanent.
    pub fn kind(&self) -> ErrorKind {
        match self {
            RequestError::Port(e)
            | RequestError::Encrypt { source: e, .. }
            | RequestError::FailApproval { source: e, .. } => e.kind(),
            RequestError::Mail { kind, .. } => *kind,
            RequestError::Payload { .. }
            | RequestError::Invalid { .. }
            | RequestError::UnknownExecution(_)
            | RequestError::Link { .. } => ErrorKind::Permanent,
        }
    }
}

/// The name CloudWatch and the DLQ see: [`ErrorKind::name`].
impl live_ci_boot::Classified for RequestError {
    fn kind(&self) -> ErrorKind {
        RequestError::kind(self)
    }
}

/// What one request did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MailReport {
    /// The deployment execution the request was for.
    pub execution_id: String,
    /// Voters mailed by this call.
    pub mailed: Vec<String>,
    /// Voters already mailed for this task token (a repeated delivery).
    pub already_mailed: Vec<String>,
    /// True when the decision was already handed over: nothing was mailed.
    pub decided: bool,
    /// Whether this call published "approval pending" (only the delivery
    /// that stored the request does), and the publish's failure, if any.
    pub announced: bool,
    /// Advisory failures (the "approval pending" publish) that did not fail the call.
    pub warnings: Vec<String>,
}

/// The handler with its ports ([`RequesterPorts`]); built once per cold start.
#[derive(Debug)]
pub struct ApprovalRequester<Ports> {
    settings: RequestSettings,
    key: LinkKey,
    ports: Ports,
}

/// The approval requests an SNS event carries, in record order.
pub fn parse_sns_event(event: &SnsEvent) -> Result<Vec<ApprovalRequest>, RequestError> {
    event
        .records
        .iter()
        .enumerate()
        .map(|(index, r)| {
            serde_json::from_str(&r.sns.message).map_err(|e| RequestError::Payload {
                index,
                message: e.to_string(),
            })
        })
        .collect()
}

impl<Ports: RequesterPorts> ApprovalRequester<Ports> {
    /// The handler; `key` signs the vote links.
    pub fn new(settings: RequestSettings, key: LinkKey, ports: Ports) -> Self {
        ApprovalRequester {
            settings,
            key,
            ports,
        }
    }

    /// Checks everything before anything is written or sent.
    fn validate(&self, r: &ApprovalRequest) -> Result<(), RequestError> {
        let e = &r.execution;
        let invalid = |field, message: String| RequestError::Invalid {
            execution: e.execution_id.clone(),
            field,
            message,
        };
        if !is_valid_execution_name(&e.execution_id) {
            return Err(invalid(
                "execution.execution_id",
                format!("{:?} is not a valid execution name", e.execution_id),
            ));
        }
        if r.task_token.trim().is_empty() {
            return Err(invalid("task_token", "is empty".into()));
        }
        if e.voters.is_empty() {
            return Err(invalid(
                "execution.voters",
                "is empty: nobody could approve this deployment".into(),
            ));
        }
        for voter in &e.voters {
            if let Some(problem) = address_problem(voter) {
                return Err(invalid("execution.voters", format!("{voter:?} {problem}")));
            }
        }
        if e.min_approval_count == 0 || e.min_rejection_count == 0 {
            return Err(invalid(
                "execution.min_approval_count",
                format!(
                    "thresholds must be at least 1 (approval {}, rejection {})",
                    e.min_approval_count, e.min_rejection_count
                ),
            ));
        }
        Ok(())
    }

    /// Handles one approval request at `now` (Unix seconds).
    pub async fn handle(
        &self,
        request: &ApprovalRequest,
        now: u64,
    ) -> Result<MailReport, RequestError> {
        self.validate(request)?;
        let e = &request.execution;
        let hash = task_token_hash(&request.task_token);
        let hash_hex = task_token_hash_hex(&request.task_token);
        let stored = self.store_request(request, &hash_hex, now).await?;
        let mut report = MailReport {
            execution_id: e.execution_id.clone(),
            mailed: Vec::new(),
            already_mailed: Vec::new(),
            decided: false,
            announced: false,
            warnings: Vec::new(),
        };
        match stored.stored {
            RequestStored::UnknownExecution => {
                return Err(RequestError::UnknownExecution(e.execution_id.clone()));
            }
            RequestStored::Decided => {
                report.decided = true;
                return Ok(report);
            }
            RequestStored::Stored | RequestStored::Repeated => {}
        }
        // A repeated delivery signs with the stored expiry, so every link of
        // one request expires together with the state's timeout.
        let expires_at = stored
            .expires_at
            .ok_or_else(|| RequestError::UnknownExecution(e.execution_id.clone()))?;
        let expires_at = u64::try_from(expires_at / 1000).unwrap_or(0);
        let Mailing {
            sent,
            failures,
            refused,
            kind,
        } = self
            .mail_voters(request, &stored.mailed, hash, expires_at, &mut report)
            .await?;
        if !sent.is_empty() {
            self.ports
                .store()
                .record_mails(&e.execution_id, &hash_hex, &sent)
                .await
                .port("metadb")?;
        }
        if !refused.is_empty() {
            self.fail_approval(request, &refused).await?;
        }
        // Once per request: only the delivery that stored it (a repeated SNS
        // delivery finds it `Repeated`), and not when a refused mail has
        // already failed the approval. Advisory: a failure is a warning.
        if stored.stored == RequestStored::Stored && refused.is_empty() {
            let event = approval_pending(&self.settings, request, stored.run_id);
            report.announced = true;
            if let Some(warning) = announce(self.ports.notifications(), event).await {
                report.warnings.push(warning);
            }
        }
        if failures.is_empty() {
            Ok(report)
        } else {
            Err(RequestError::Mail {
                execution: e.execution_id.clone(),
                failed: failures.len(),
                total: e.voters.len(),
                messages: failures.join("; "),
                kind,
            })
        }
    }

    /// Encrypts the task token and stores the request: one round trip
    /// before the first mail, answered with the stored expiry and who was
    /// mailed already.
    async fn store_request(
        &self,
        request: &ApprovalRequest,
        hash_hex: &str,
        now: u64,
    ) -> Result<StoredRequest, RequestError> {
        let e = &request.execution;
        let expires_ms = now
            .saturating_add(self.settings.approval_timeout_secs)
            .saturating_mul(1000);
        let ciphertext = self
            .ports
            .cipher()
            .encrypt(&request.task_token, &e.execution_id)
            .await
            .port("token cipher")
            .map_err(|source| RequestError::Encrypt {
                execution: e.execution_id.clone(),
                source,
            })?;
        Ok(self
            .ports
            .store()
            .store_approval_request_for_mail(&NewApprovalRequest {
                execution_id: e.execution_id.clone(),
                sfn_execution_arn: request.sfn_execution_arn.clone(),
                task_token_ciphertext: ciphertext,
                task_token_hash: hash_hex.to_string(),
                to_add: request.plan.to_add,
                to_change: request.plan.to_change,
                to_destroy: request.plan.to_destroy,
                plan_summary: request.plan.summary(),
                logs_url: request.plan.logs_url.clone(),
                expires_at: i64::try_from(expires_ms).unwrap_or(i64::MAX),
            })
            .await
            .port("metadb")?)
    }

    /// Mails every voter not mailed yet (recorded together after the sends:
    /// one round trip instead of one per voter between the mails).
    async fn mail_voters(
        &self,
        request: &ApprovalRequest,
        mailed: &[String],
        hash: [u8; 32],
        expires_at: u64,
        report: &mut MailReport,
    ) -> Result<Mailing, RequestError> {
        let mut out = Mailing {
            sent: Vec::new(),
            failures: Vec::new(),
            refused: Vec::new(),
            kind: ErrorKind::Permanent,
        };
        for voter in &request.execution.voters {
            if mailed.contains(voter) || report.mailed.contains(voter) {
                if !report.already_mailed.contains(voter) {
                    report.already_mailed.push(voter.clone());
                }
                continue;
            }
            let email = self.email(request, voter, hash, expires_at)?;
            match self.ports.mailer().send(&email).await {
                Ok(message_id) => {
                    out.sent.push((voter.clone(), message_id));
                    report.mailed.push(voter.clone());
                }
                Err(err) => {
                    if err.kind() == ErrorKind::Retryable {
                        out.kind = ErrorKind::Retryable;
                    } else {
                        out.refused.push(format!("{voter:?}: {err}"));
                    }
                    out.failures.push(format!("{voter:?}: {err}"));
                }
            }
        }
        Ok(out)
    }

    /// Fails the waiting approval state: `refused` voters can never be mailed.
    /// A token the execution no longer waits for (an earlier delivery failed
    /// it, or it ended) is no error.
    async fn fail_approval(
        &self,
        request: &ApprovalRequest,
        refused: &[String],
    ) -> Result<(), RequestError> {
        let execution = &request.execution.execution_id;
        let cause = refusal_cause(&request.sfn_execution_arn, refused);
        let sent = self
            .ports
            .tokens()
            .send_failure(&request.task_token, MAIL_REFUSED, &cause)
            .await
            .port("step functions")
            .map_err(|source| RequestError::FailApproval {
                execution: execution.clone(),
                cause: cause.clone(),
                source,
            })?;
        match sent {
            TokenDelivery::Delivered => {
                tracing::error!(execution = %execution, cause = %cause, "approval failed: a voter's mail was refused");
            }
            TokenDelivery::Gone { reason } => {
                tracing::warn!(execution = %execution, cause = %cause, reason = %reason, "a voter's mail was refused; the approval no longer waits");
            }
        }
        Ok(())
    }

    /// One voter's mail with their own approve and reject links.
    pub fn email(
        &self,
        request: &ApprovalRequest,
        voter: &str,
        task_token_hash: [u8; 32],
        expires_at: u64,
    ) -> Result<Email, RequestError> {
        let url = |vote| {
            self.key
                .sign(&VoteLink {
                    execution_id: request.execution.execution_id.clone(),
                    voter: voter.to_string(),
                    vote,
                    task_token_hash,
                    expires_at,
                })
                .map(|token| vote_url(&self.settings.approval_url, &token))
                .map_err(|e| RequestError::Link {
                    voter: voter.to_string(),
                    message: e.to_string(),
                })
        };
        let approve_url = url(Vote::Approve)?;
        let reject_url = url(Vote::Reject)?;
        let (subject, text, html) = render_email(&MailContext {
            settings: &self.settings,
            request,
            voter,
            approve_url: &approve_url,
            reject_url: &reject_url,
            expires_at,
        });
        Ok(Email {
            from: self.settings.from_address.clone(),
            to: voter.to_string(),
            subject,
            text,
            html,
        })
    }
}

/// The failure cause of a refused mail: each refused voter with SES's own text,
/// and the account and region whose SES refused (those of the execution: the
/// module runs SES beside its state machine), with what to do about it.
pub fn refusal_cause(sfn_execution_arn: &str, refused: &[String]) -> String {
    let parts: Vec<&str> = sfn_execution_arn.splitn(6, ':').collect();
    let (region, account) = match parts.as_slice() {
        ["arn", _, "states", region, account, _] => (*region, *account),
        _ => ("an unknown region", "an unknown account"),
    };
    format!(
        "SES of account {account} ({region}) refused the approval mail for good: {}. \
         In the SES sandbox every voter must be a verified identity; verify the address \
         or move the account out of the sandbox (infra/README.md), then merge again",
        refused.join("; ")
    )
}
