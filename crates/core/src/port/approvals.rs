//! The approval store port: what `approval_request` must leave for
//! `approval_response`, which only receives a link. One row per execution
//! (the encrypted task token and what the mail showed), one per mailed voter,
//! the votes and their decision, and the guarded hand-over of the task token
//! once the votes decide. The plain token is never stored: see
//! [`super::TokenCipher`]. It is all `approval_response` needs, so that
//! Lambda depends on no other metadb port.

use std::future::Future;

use serde::{Deserialize, Serialize};

use super::TokenDelivery;
use crate::deploy::{ExecutionRecord, ExecutionStatus, Tally, UnixMillis, Vote, VoteOutcome};

/// An approval request as `approval_request` stores it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewApprovalRequest {
    /// The execution waiting for approval.
    pub execution_id: String,
    /// The Step Functions execution waiting in Request Approval.
    pub sfn_execution_arn: String,
    /// The task token that completes the waiting Request Approval state,
    /// encrypted for this execution ([`super::TokenCipher::encrypt`]); the
    /// plain token is never mailed nor stored.
    pub task_token_ciphertext: String,
    /// Lowercase hex SHA-256 of the plain task token (what links carry).
    pub task_token_hash: String,
    /// Resources the plan adds.
    pub to_add: u32,
    /// Resources the plan changes in place.
    pub to_change: u32,
    /// Resources the plan destroys.
    pub to_destroy: u32,
    /// The plan as the mail words it (`PlanResult::summary`): the approval page
    /// shows the same, e.g. "outputs change: url" for an outputs-only plan.
    pub plan_summary: String,
    /// The plan phase's log page, linked from the mail.
    pub logs_url: String,
    /// When the links stop working: the request time plus the approval timeout.
    pub expires_at: UnixMillis,
}

/// An approval request as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRecord {
    /// The execution waiting for approval.
    pub execution_id: String,
    /// The Step Functions execution waiting in Request Approval.
    pub sfn_execution_arn: String,
    /// `None` only for a request stored before tokens were encrypted
    /// (migration 0006 dropped its plain token): it cannot be delivered.
    pub task_token_ciphertext: Option<String>,
    /// Lowercase hex SHA-256 of the plain task token (what links carry).
    pub task_token_hash: String,
    /// Resources the plan adds.
    pub to_add: u32,
    /// Resources the plan changes in place.
    pub to_change: u32,
    /// Resources the plan destroys.
    pub to_destroy: u32,
    /// `None` for requests stored before migration 0007 (the page shows counts).
    #[serde(default)]
    pub plan_summary: Option<String>,
    /// The plan phase's log page, linked from the mail.
    pub logs_url: String,
    /// When the request was stored.
    pub requested_at: UnixMillis,
    /// When the links stop working.
    pub expires_at: UnixMillis,
    /// When a caller took the task-token hand-over (see
    /// [`ApprovalStore::claim_decision_delivery`]).
    pub delivery_claimed_at: Option<UnixMillis>,
    /// When the decision reached (or was refused by) the workflow engine.
    pub decision_sent_at: Option<UnixMillis>,
    /// What became of it.
    pub delivery: Option<TokenDelivery>,
}

/// What storing an approval request did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RequestStored {
    /// Stored (first delivery, or a new task token replacing an undecided one).
    Stored,
    /// The same task token again (a repeated SNS delivery): nothing changed.
    Repeated,
    /// The execution's decision was already handed over: nothing changed.
    Decided,
    /// No such execution in the metadb.
    UnknownExecution,
}

/// What storing an approval request did, with what mailing its voters needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredRequest {
    /// What the store did with the request.
    pub stored: RequestStored,
    /// The stored request's expiry (the new one, or the earlier one for a
    /// repeated delivery): every link of one request expires together.
    /// `None` for an unknown execution.
    pub expires_at: Option<UnixMillis>,
    /// The voters already mailed links for this task token.
    pub mailed: Vec<String>,
    /// The execution's run (`None` for an unknown execution): what the
    /// "approval pending" notification names.
    #[serde(default)]
    pub run_id: Option<crate::deploy::RunId>,
}

/// What a vote link's page shows and is checked against, read at once: the
/// execution, its approval request (`None` when none was stored) and the
/// votes so far.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct VoteView {
    /// The execution voted on.
    pub execution: ExecutionRecord,
    /// Its approval request; `None` when none was stored.
    pub approval: Option<ApprovalRecord>,
    /// The votes so far against the thresholds.
    pub tally: Tally,
    /// The policy denials of the execution's recorded plan (`rule: message`),
    /// empty when none: with `policy_override` on, a denied plan is voted on
    /// and an approve needs a reason.
    #[serde(default)]
    pub policy_denials: Vec<String>,
}

/// Where a vote came from: a signed link of the approval mail, or a
/// `/live-ci approve|reject` comment on the merged pull request (issue 29).
/// Both are counted in the same tally by the same decision path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VoteChannel {
    /// A signed link of the approval mail (the default).
    #[default]
    Mail,
    /// A `/live-ci approve|reject` comment on the merged pull request.
    GitHub,
}

impl VoteChannel {
    /// The metadb's `votes.channel`.
    pub fn as_str(self) -> &'static str {
        match self {
            VoteChannel::Mail => "mail",
            VoteChannel::GitHub => "github",
        }
    }
}

/// The voter identity of a GitHub login: `github:<login>`, lowercase (GitHub
/// logins ignore case). It never equals an e-mail address, which always holds
/// an `@` a login cannot.
pub fn github_voter_id(login: &str) -> String {
    format!("github:{}", login.to_ascii_lowercase())
}

/// One voter's vote, as a signed link (or a pull request comment) submits it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ballot<'a> {
    /// The execution voted on.
    pub execution_id: &'a str,
    /// An e-mail address for [`VoteChannel::Mail`] (one of the execution's
    /// `voters`), [`github_voter_id`] for [`VoteChannel::GitHub`] (whose
    /// right to vote the caller checked), or for a GitHub vote by a login
    /// that `voter_github_logins` ties to one of the execution's `voters`,
    /// that address ([`crate::voter_identity`]: one person, one vote).
    pub voter: &'a str,
    /// Where the vote came from.
    pub channel: VoteChannel,
    /// Approve or reject.
    pub vote: Vote,
    /// The task token hash the link carries (lowercase hex): a link of an
    /// older request of the execution records nothing.
    pub task_token_hash: &'a str,
    /// How long a hand-over may take before another caller retries it (see
    /// [`ApprovalStore::claim_decision_delivery`]).
    pub lease_secs: u32,
    /// Why the voter votes so (the page's `reason` field); an approve of a
    /// plan the policies denied is refused without one.
    pub reason: Option<&'a str>,
    /// The login (lowercase) that cast a GitHub vote recorded under a mail
    /// voter's address, and `None` for every other vote: recorded with the
    /// vote, and the same login's older `github:<login>` vote of the
    /// execution is folded into it (migration 0021).
    pub github_login: Option<&'a str>,
}

/// What [`ApprovalStore::vote`] did.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Voted {
    /// The execution, its request and tally as they were before the vote.
    pub view: VoteView,
    /// `None` when the view refused the vote and nothing changed: the voter
    /// is not one of the execution's, no request is stored, the link's task
    /// token hash is not the stored one, or voting is closed (undecided, and
    /// the request has no ciphertext or the execution no longer runs).
    #[serde(default)]
    pub cast: Option<Cast>,
    /// The vote approves a plan the policies denied without a reason: it was
    /// refused and nothing changed (`cast` is `None`).
    #[serde(default)]
    pub reason_required: bool,
}

/// A vote the view let through, and what followed from it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Cast {
    /// False when the execution was decided or had ended: the vote is not
    /// counted.
    pub recorded: bool,
    /// The execution's status after the vote.
    pub status: ExecutionStatus,
    /// The execution's decision after the vote (this vote's, or an earlier).
    pub decision: Option<Vote>,
    /// The votes after this one.
    pub tally: Tally,
    /// This caller took the hand-over of the decision and must send it.
    pub claimed: bool,
    /// The request after the claim: the task token to send, or what became of
    /// the hand-over so far.
    pub approval: Option<ApprovalRecord>,
}

/// Durable state of e-mail approvals and votes. Implemented by
/// `live-ci-metadb`'s adapters in the same SQL text as the
/// [`super::RunStore`], [`super::ExecutionStore`] and [`super::SweepStore`]
/// ports.
pub trait ApprovalStore: Send + Sync {
    /// The adapter's error, classified retryable or permanent.
    type Error: crate::port::Classify;

    /// Stores the request of an execution. A different task token for an
    /// execution whose decision was not handed over replaces the old one (the
    /// old links stop matching); the same token again changes nothing.
    fn store_approval_request(
        &self,
        request: &NewApprovalRequest,
    ) -> impl Future<Output = Result<RequestStored, Self::Error>> + Send;

    /// [`Self::store_approval_request`], answering also what mailing needs
    /// ([`Self::mailed_voters`] and the stored expiry), in one step.
    fn store_approval_request_for_mail(
        &self,
        request: &NewApprovalRequest,
    ) -> impl Future<Output = Result<StoredRequest, Self::Error>> + Send;

    /// The stored request of an execution, if any.
    fn approval_request(
        &self,
        execution_id: &str,
    ) -> impl Future<Output = Result<Option<ApprovalRecord>, Self::Error>> + Send;

    /// The voters already mailed for this task token.
    fn mailed_voters(
        &self,
        execution_id: &str,
        task_token_hash: &str,
    ) -> impl Future<Output = Result<Vec<String>, Self::Error>> + Send;

    /// Records that `voter` was mailed links for this task token; false when
    /// already recorded.
    fn record_mailed(
        &self,
        execution_id: &str,
        task_token_hash: &str,
        voter: &str,
        message_id: &str,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// [`Self::record_mailed`] for several `(voter, message_id)` at once;
    /// returns the voters not recorded before.
    fn record_mails(
        &self,
        execution_id: &str,
        task_token_hash: &str,
        mails: &[(String, String)],
    ) -> impl Future<Output = Result<Vec<String>, Self::Error>> + Send;

    /// Takes the hand-over of the decided execution's task token: true for
    /// exactly one caller while no delivery is recorded and no other claim is
    /// younger than `lease_secs` (a caller that died mid-send is retried after
    /// it).
    fn claim_decision_delivery(
        &self,
        execution_id: &str,
        lease_secs: u32,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// Records what the engine said to the decision; false when one was
    /// already recorded.
    fn record_decision_delivery(
        &self,
        execution_id: &str,
        delivery: &TokenDelivery,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// The execution a vote link names (its unit, voters, status and
    /// decision), as [`super::ExecutionStore::execution`] reads it: the vote
    /// page shows it and checks the voter against it.
    fn approval_execution(
        &self,
        execution_id: &str,
    ) -> impl Future<Output = Result<Option<ExecutionRecord>, Self::Error>> + Send;

    /// Stores (or changes) one voter's vote on a running execution until a
    /// decision is reached.
    fn cast_vote(
        &self,
        execution_id: &str,
        voter: &str,
        vote: Vote,
    ) -> impl Future<Output = Result<VoteOutcome, Self::Error>> + Send;

    /// The votes cast so far and the thresholds, `None` for an unknown
    /// execution.
    fn tally(
        &self,
        execution_id: &str,
    ) -> impl Future<Output = Result<Option<Tally>, Self::Error>> + Send;

    /// Records the decision the votes reached, once: exactly one caller gets
    /// `Some` and sends the task token; everyone else gets `None`.
    fn decide(
        &self,
        execution_id: &str,
    ) -> impl Future<Output = Result<Option<Vote>, Self::Error>> + Send;

    /// What a vote link's page shows, in one read; `None` for an unknown
    /// execution.
    fn vote_view(
        &self,
        execution_id: &str,
    ) -> impl Future<Output = Result<Option<VoteView>, Self::Error>> + Send;

    /// The saved plan recorded for the execution (the record the apply
    /// checks), for the page to show that plan's JSON; `None` when no plan is
    /// recorded.
    fn voted_plan(
        &self,
        execution_id: &str,
    ) -> impl Future<Output = Result<Option<super::SavedPlan>, Self::Error>> + Send;

    /// What the read-only run page shows: the run and up to `limit` of its
    /// executions with their plan summaries and votes; `None` for an unknown
    /// run.
    fn run_view(
        &self,
        run_id: crate::deploy::RunId,
        limit: u32,
    ) -> impl Future<Output = Result<Option<crate::run_view::RunView>, Self::Error>> + Send;

    /// A voter's vote in one step, serialized with the execution's other
    /// votes: checks the ballot against the view, records the vote, decides
    /// ([`Self::decide`]) and, once decided, tries the hand-over
    /// ([`Self::claim_decision_delivery`]). `None` for an unknown execution.
    fn vote(
        &self,
        ballot: &Ballot<'_>,
    ) -> impl Future<Output = Result<Option<Voted>, Self::Error>> + Send;

    /// The execution of `unit` awaiting approval in the run of `commit` (a
    /// merged pull request's merge commit), read as [`Self::vote_view`]:
    /// running, undecided, with a stored request not yet answered; `None`
    /// when no such execution exists.
    fn awaiting_vote(
        &self,
        commit: &str,
        unit: &str,
    ) -> impl Future<Output = Result<Option<VoteView>, Self::Error>> + Send;
}
