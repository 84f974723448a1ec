//! Test support for the approval Lambdas: a real metadb ([`crate::pg`]), an
//! execution waiting in Request Approval, a real task-token cipher
//! (LocalStack's KMS), and recording fakes for the two services that cannot
//! run here as they do in AWS (SES v2 mail, Step Functions task tokens).

use std::sync::Mutex;

use live_ci_aws::KmsTokenCipher;
use live_ci_aws::sdk::kms;
use live_ci_core::approval::{LinkKey, task_token_hash};
use live_ci_core::deploy::{ExecutionRecord, RunId, Tally, Vote, VoteOutcome};
use live_ci_core::port::{
    ApprovalRecord, ApprovalStore, Ballot, Email, ExecutionStore, Mailer, NewApprovalRequest,
    RequestStored, RunStore, StoredRequest, TaskFailures, TaskTokens, TokenDelivery, VoteView,
    Voted,
};
use live_ci_metadb::PgMetadb;
use live_ci_stepfunctions::{ApprovalRequest, PlanResult};

pub use crate::params::FakeError;
use crate::params::lock;
pub use crate::pg;

/// The vote-link signing key the tests share.
pub const KEY: &[u8] = b"test-vote-link-key-0123456789abcdef";

/// [`KEY`] as a link key.
pub fn key() -> LinkKey {
    LinkKey::new(KEY).expect("the test key is long enough")
}

/// A KMS client of the project's LocalStack.
pub fn kms_client() -> kms::Client {
    kms::Client::new(&crate::aws::sdk_config())
}

/// A fresh key of the project's LocalStack KMS.
pub async fn kms_key() -> String {
    kms_client()
        .create_key()
        .description(crate::unique("live-ci-task-tokens"))
        .send()
        .await
        .expect("localstack kms creates a key")
        .key_metadata
        .expect("a created key has metadata")
        .key_id
}

/// The task-token cipher on this test process's key of LocalStack's KMS: the
/// encryption context and the key binding are KMS's own, not imitated. The
/// requester and the responder of a test share it, as the two Lambdas share
/// the module's task-token key. A new client per call: each test has its own
/// runtime.
pub async fn cipher() -> KmsTokenCipher {
    static KEY: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    let key = KEY.get_or_init(kms_key).await;
    KmsTokenCipher::new(kms_client(), key.clone())
}

/// Now, in Unix seconds.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// A fresh migrated metadb with one running execution `id` (voters and
/// thresholds as given), as trigger_sf leaves it when Step Functions starts.
pub async fn awaiting(
    id: &str,
    voters: &[&str],
    min_approval_count: u32,
    min_rejection_count: u32,
) -> (pg::TestDb, PgMetadb, ExecutionRecord) {
    let tdb = pg::TestDb::new().await;
    let db = tdb.metadb(8).await;
    let mut e = pg::exec(id, "dev", &[]);
    e.voters = voters.iter().map(|v| v.to_string()).collect();
    e.min_approval_count = min_approval_count;
    e.min_rejection_count = min_rejection_count;
    let run = db
        .create_run(&pg::run(&format!("commit-{id}"), 10, vec![e]))
        .await
        .expect("create the run");
    let run_id: RunId = run.run_id;
    let claimed = db.claim_ready(run_id, 10).await.expect("claim the unit");
    assert_eq!(claimed.len(), 1);
    let arn = format!("arn:aws:states:us-west-2:111111111111:execution:live-ci:{id}");
    assert!(
        db.attach_execution_arn(id, &arn)
            .await
            .expect("attach the arn")
    );
    let record = db
        .execution(id)
        .await
        .expect("read the execution")
        .expect("the execution exists");
    (tdb, db, record)
}

/// The approval request the state machine publishes for `record`.
pub fn request_for(record: &ExecutionRecord, task_token: &str) -> ApprovalRequest {
    ApprovalRequest {
        task_token: task_token.to_string(),
        sfn_execution_arn: record.sfn_execution_arn.clone().unwrap_or_default(),
        execution: record.sfn_input(),
        plan: PlanResult {
            execution_id: record.execution_id.clone(),
            to_add: 2,
            to_change: 1,
            to_destroy: 0,
            to_replace: 0,
            to_import: 0,
            to_forget: 0,
            outputs_changed: Vec::new(),
            skip_apply: false,
            plan_artifact: format!("s3://artifacts/{}/plan.tfplan", record.execution_id),
            logs_url: "https://console.aws.amazon.com/cloudwatch/home#logs/terra-run".into(),
            first_changes: Vec::new(),
            more_changes: 0,
            policy_denials: Vec::new(),
        },
    }
}

/// The stored hash of a task token.
pub fn hash(task_token: &str) -> [u8; 32] {
    task_token_hash(task_token)
}

/// [`hash`] in hex.
pub fn hash_hex(task_token: &str) -> String {
    live_ci_core::approval::task_token_hash_hex(task_token)
}

/// The value of a `Label:  URL` line of a mail's plain-text part.
pub fn text_link(email: &Email, label: &str) -> String {
    email
        .text
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{label}:")))
        .map(|l| l.trim().to_string())
        .unwrap_or_else(|| panic!("no {label} link in {}", email.text))
}

/// The `t` parameter of a vote link.
pub fn token_of(url: &str) -> String {
    url.split_once("?t=")
        .unwrap_or_else(|| panic!("no token in {url:?}"))
        .1
        .to_string()
}

/// Records every mail; fails for addresses in `fail_for`.
#[derive(Debug, Default)]
pub struct RecordingMailer {
    /// Every mail sent, in order.
    pub sent: Mutex<Vec<Email>>,
    /// Recipients SES refuses.
    pub fail_for: Mutex<Vec<String>>,
}

impl RecordingMailer {
    /// The mails sent so far.
    pub fn sent(&self) -> Vec<Email> {
        lock(&self.sent).clone()
    }
}

impl Mailer for RecordingMailer {
    type Error = FakeError;

    async fn send(&self, email: &Email) -> Result<String, FakeError> {
        if lock(&self.fail_for).contains(&email.to) {
            return Err(FakeError(format!("ses refused {:?}", email.to)));
        }
        let mut sent = lock(&self.sent);
        sent.push(email.clone());
        Ok(format!("message-{}", sent.len()))
    }
}

/// Records every SendTaskFailure approval_request sends (a voter SES refused
/// for good) and answers `answer` (Delivered by default).
#[derive(Debug)]
pub struct RecordingFailures {
    /// Every SendTaskFailure: (token, error, cause).
    pub calls: Mutex<Vec<(String, String, String)>>,
    /// What each send answers.
    pub answer: Mutex<Result<TokenDelivery, String>>,
}

impl Default for RecordingFailures {
    fn default() -> Self {
        RecordingFailures {
            calls: Mutex::new(Vec::new()),
            answer: Mutex::new(Ok(TokenDelivery::Delivered)),
        }
    }
}

impl RecordingFailures {
    /// The sends so far.
    pub fn calls(&self) -> Vec<(String, String, String)> {
        lock(&self.calls).clone()
    }
}

impl TaskFailures for RecordingFailures {
    type Error = FakeError;

    async fn send_failure(
        &self,
        token: &str,
        error: &str,
        cause: &str,
    ) -> Result<TokenDelivery, FakeError> {
        lock(&self.calls).push((token.to_string(), error.to_string(), cause.to_string()));
        lock(&self.answer).clone().map_err(FakeError)
    }
}

/// Records every SendTaskSuccess and answers `answer` (Delivered by default).
#[derive(Debug)]
pub struct RecordingTokens {
    /// Every SendTaskSuccess: (token, output).
    pub calls: Mutex<Vec<(String, String)>>,
    /// What each send answers.
    pub answer: Mutex<Result<TokenDelivery, String>>,
    /// Slows the send, so concurrent callers overlap for real.
    pub delay_ms: u64,
}

impl Default for RecordingTokens {
    fn default() -> Self {
        RecordingTokens {
            calls: Mutex::new(Vec::new()),
            answer: Mutex::new(Ok(TokenDelivery::Delivered)),
            delay_ms: 0,
        }
    }
}

impl RecordingTokens {
    /// The sends so far.
    pub fn calls(&self) -> Vec<(String, String)> {
        lock(&self.calls).clone()
    }
}

impl TaskTokens for RecordingTokens {
    type Error = FakeError;

    async fn send_success(
        &self,
        token: &str,
        output_json: &str,
    ) -> Result<TokenDelivery, FakeError> {
        lock(&self.calls).push((token.to_string(), output_json.to_string()));
        if self.delay_ms > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(self.delay_ms)).await;
        }
        lock(&self.answer).clone().map_err(FakeError)
    }

    async fn send_failure(&self, _: &str, _: &str, _: &str) -> Result<TokenDelivery, FakeError> {
        panic!("approval_response never sends SendTaskFailure")
    }

    async fn heartbeat(&self, _: &str) -> Result<TokenDelivery, FakeError> {
        panic!("approval_response never heartbeats")
    }
}

/// The real metadb seen through the approval store port alone: a Lambda
/// generic over a store this wraps can call `ApprovalStore` and nothing else,
/// so a test driving it proves the Lambda needs no other metadb port (a
/// widened bound stops the test compiling), while every answer still comes
/// from the real SQL.
#[derive(Debug, Clone)]
pub struct ApprovalsOnly<S>(pub S);

impl<S: ApprovalStore> ApprovalStore for ApprovalsOnly<S> {
    type Error = S::Error;

    async fn store_approval_request(
        &self,
        request: &NewApprovalRequest,
    ) -> Result<RequestStored, S::Error> {
        self.0.store_approval_request(request).await
    }

    async fn store_approval_request_for_mail(
        &self,
        request: &NewApprovalRequest,
    ) -> Result<StoredRequest, S::Error> {
        self.0.store_approval_request_for_mail(request).await
    }

    async fn approval_request(
        &self,
        execution_id: &str,
    ) -> Result<Option<ApprovalRecord>, S::Error> {
        self.0.approval_request(execution_id).await
    }

    async fn voted_plan(
        &self,
        execution_id: &str,
    ) -> Result<Option<live_ci_core::port::SavedPlan>, S::Error> {
        self.0.voted_plan(execution_id).await
    }

    async fn run_view(
        &self,
        run_id: live_ci_core::deploy::RunId,
        limit: u32,
    ) -> Result<Option<live_ci_core::run_view::RunView>, S::Error> {
        self.0.run_view(run_id, limit).await
    }

    async fn record_mails(
        &self,
        execution_id: &str,
        hash: &str,
        mails: &[(String, String)],
    ) -> Result<Vec<String>, S::Error> {
        self.0.record_mails(execution_id, hash, mails).await
    }

    async fn mailed_voters(&self, execution_id: &str, hash: &str) -> Result<Vec<String>, S::Error> {
        self.0.mailed_voters(execution_id, hash).await
    }

    async fn record_mailed(
        &self,
        execution_id: &str,
        hash: &str,
        voter: &str,
        message_id: &str,
    ) -> Result<bool, S::Error> {
        self.0
            .record_mailed(execution_id, hash, voter, message_id)
            .await
    }

    async fn claim_decision_delivery(
        &self,
        execution_id: &str,
        lease_secs: u32,
    ) -> Result<bool, S::Error> {
        self.0
            .claim_decision_delivery(execution_id, lease_secs)
            .await
    }

    async fn record_decision_delivery(
        &self,
        execution_id: &str,
        delivery: &TokenDelivery,
    ) -> Result<bool, S::Error> {
        self.0
            .record_decision_delivery(execution_id, delivery)
            .await
    }

    async fn approval_execution(
        &self,
        execution_id: &str,
    ) -> Result<Option<ExecutionRecord>, S::Error> {
        self.0.approval_execution(execution_id).await
    }

    async fn cast_vote(
        &self,
        execution_id: &str,
        voter: &str,
        vote: Vote,
    ) -> Result<VoteOutcome, S::Error> {
        self.0.cast_vote(execution_id, voter, vote).await
    }

    async fn tally(&self, execution_id: &str) -> Result<Option<Tally>, S::Error> {
        self.0.tally(execution_id).await
    }

    async fn decide(&self, execution_id: &str) -> Result<Option<Vote>, S::Error> {
        self.0.decide(execution_id).await
    }

    async fn vote_view(&self, execution_id: &str) -> Result<Option<VoteView>, S::Error> {
        self.0.vote_view(execution_id).await
    }

    async fn vote(&self, ballot: &Ballot<'_>) -> Result<Option<Voted>, S::Error> {
        self.0.vote(ballot).await
    }

    async fn awaiting_vote(&self, commit: &str, unit: &str) -> Result<Option<VoteView>, S::Error> {
        self.0.awaiting_vote(commit, unit).await
    }
}
