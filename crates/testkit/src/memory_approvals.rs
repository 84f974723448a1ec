//! An in-memory [`ApprovalStore`]: the approval store port and nothing else,
//! so a consumer driven by it proves its bound needs no other metadb port (a
//! widened bound no longer compiles against it). It keeps the guards of the
//! metadb's SQL (`approval_statements`, `CAST_VOTE`, `DECIDE`) in plain Rust:
//! votes only while the execution runs undecided, one decision, one hand-over.
//! The metadb's own tests (`crates/metadb/tests/it/approvals.rs`) cover the
//! real statements; this fake is for consumers.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use live_ci_core::deploy::{
    Action, ExecutionRecord, ExecutionStatus, Tally, UnixMillis, Vote, VoteOutcome,
};
use live_ci_core::path::RepoPath;
use live_ci_core::port::{
    ApprovalRecord, ApprovalStore, NewApprovalRequest, RequestStored, TokenDelivery,
};

use crate::params::{FakeError, lock};

#[derive(Debug, Default)]
struct State {
    executions: BTreeMap<String, ExecutionRecord>,
    /// Per execution: voter to vote.
    votes: BTreeMap<String, BTreeMap<String, Vote>>,
    requests: BTreeMap<String, ApprovalRecord>,
    /// (execution, task token hash, voter).
    mailed: BTreeSet<(String, String, String)>,
}

/// Executions waiting for approval, their requests, mails and votes. Clones
/// share one state, as two Lambdas share the metadb.
#[derive(Debug, Default, Clone)]
pub struct MemoryApprovals {
    state: Arc<Mutex<State>>,
}

fn now_ms() -> UnixMillis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

/// A running execution of unit `dev/<id>` with a Step Functions ARN, as
/// trigger_sf leaves it when the state machine starts: what an approval
/// request is for.
pub fn running_execution(
    id: &str,
    voters: &[&str],
    min_approval_count: u32,
    min_rejection_count: u32,
) -> ExecutionRecord {
    let voters: Vec<String> = voters.iter().map(|v| v.to_string()).collect();
    ExecutionRecord {
        run_id: 1,
        execution_id: id.into(),
        is_rollback: false,
        pr_id: 7,
        commit_id: format!("commit-{id}"),
        base_ref: "main".into(),
        head_ref: "feature".into(),
        cfg_path: RepoPath::new(&format!("dev/{id}")).expect("a valid unit path"),
        cfg_deps: Vec::new(),
        action: Action::Apply,
        status: ExecutionStatus::Running,
        status_reason: None,
        plan_command: "terragrunt plan".into(),
        apply_command: "terragrunt apply".into(),
        new_providers: Vec::new(),
        new_resources: Vec::new(),
        account_name: "dev".into(),
        account_path: "dev".into(),
        account_deps: Vec::new(),
        approval_voters: voters.clone(),
        rejection_voters: voters.clone(),
        voters,
        min_approval_count,
        min_rejection_count,
        plan_role_arn: "arn:aws:iam::111111111111:role/plan".into(),
        apply_role_arn: "arn:aws:iam::111111111111:role/apply".into(),
        priority: 1.0,
        wait_for: Vec::new(),
        wait_accounts: Vec::new(),
        sfn_execution_arn: Some(format!(
            "arn:aws:states:us-west-2:111111111111:execution:live-ci:{id}"
        )),
        decision: None,
        created_at: now_ms(),
        claimed_at: Some(now_ms()),
        finished_at: None,
        updated_at: now_ms(),
    }
}

impl MemoryApprovals {
    /// A store knowing `executions`.
    pub fn with(executions: impl IntoIterator<Item = ExecutionRecord>) -> Self {
        let store = MemoryApprovals::default();
        {
            let mut state = lock(&store.state);
            for e in executions {
                state.executions.insert(e.execution_id.clone(), e);
            }
        }
        store
    }

    /// The execution as stored now (its decision included).
    pub fn execution(&self, execution_id: &str) -> Option<ExecutionRecord> {
        lock(&self.state).executions.get(execution_id).cloned()
    }

    fn tally_of(state: &State, execution_id: &str) -> Option<Tally> {
        let e = state.executions.get(execution_id)?;
        let votes = state.votes.get(execution_id);
        let cast = |want: Vote| -> Vec<String> {
            votes
                .map(|v| {
                    v.iter()
                        .filter(|(_, vote)| **vote == want)
                        .map(|(voter, _)| voter.clone())
                        .collect()
                })
                .unwrap_or_default()
        };
        Some(Tally {
            approval_voters: cast(Vote::Approve),
            rejection_voters: cast(Vote::Reject),
            min_approval_count: e.min_approval_count,
            min_rejection_count: e.min_rejection_count,
            decision: e.decision,
        })
    }
}

impl ApprovalStore for MemoryApprovals {
    type Error = FakeError;

    async fn store_approval_request(
        &self,
        r: &NewApprovalRequest,
    ) -> Result<RequestStored, FakeError> {
        let mut state = lock(&self.state);
        if !state.executions.contains_key(&r.execution_id) {
            return Ok(RequestStored::UnknownExecution);
        }
        if let Some(prev) = state.requests.get(&r.execution_id) {
            if prev.decision_sent_at.is_some() || prev.delivery_claimed_at.is_some() {
                return Ok(RequestStored::Decided);
            }
            if prev.task_token_hash == r.task_token_hash {
                return Ok(RequestStored::Repeated);
            }
        }
        let record = ApprovalRecord {
            execution_id: r.execution_id.clone(),
            sfn_execution_arn: r.sfn_execution_arn.clone(),
            task_token_ciphertext: Some(r.task_token_ciphertext.clone()),
            task_token_hash: r.task_token_hash.clone(),
            to_add: r.to_add,
            to_change: r.to_change,
            to_destroy: r.to_destroy,
            plan_summary: Some(r.plan_summary.clone()),
            logs_url: r.logs_url.clone(),
            requested_at: now_ms(),
            expires_at: r.expires_at,
            delivery_claimed_at: None,
            decision_sent_at: None,
            delivery: None,
        };
        state.requests.insert(r.execution_id.clone(), record);
        Ok(RequestStored::Stored)
    }

    async fn approval_request(
        &self,
        execution_id: &str,
    ) -> Result<Option<ApprovalRecord>, FakeError> {
        Ok(lock(&self.state).requests.get(execution_id).cloned())
    }

    async fn mailed_voters(
        &self,
        execution_id: &str,
        task_token_hash: &str,
    ) -> Result<Vec<String>, FakeError> {
        Ok(lock(&self.state)
            .mailed
            .iter()
            .filter(|(e, h, _)| e == execution_id && h == task_token_hash)
            .map(|(_, _, voter)| voter.clone())
            .collect())
    }

    async fn record_mailed(
        &self,
        execution_id: &str,
        task_token_hash: &str,
        voter: &str,
        _message_id: &str,
    ) -> Result<bool, FakeError> {
        Ok(lock(&self.state).mailed.insert((
            execution_id.to_string(),
            task_token_hash.to_string(),
            voter.to_string(),
        )))
    }

    async fn claim_decision_delivery(
        &self,
        execution_id: &str,
        lease_secs: u32,
    ) -> Result<bool, FakeError> {
        let mut state = lock(&self.state);
        let decided = state
            .executions
            .get(execution_id)
            .is_some_and(|e| e.decision.is_some());
        let now = now_ms();
        let Some(request) = state.requests.get_mut(execution_id) else {
            return Ok(false);
        };
        let free = request
            .delivery_claimed_at
            .is_none_or(|at| at < now - i64::from(lease_secs) * 1000);
        if !decided || request.decision_sent_at.is_some() || !free {
            return Ok(false);
        }
        request.delivery_claimed_at = Some(now);
        Ok(true)
    }

    async fn record_decision_delivery(
        &self,
        execution_id: &str,
        delivery: &TokenDelivery,
    ) -> Result<bool, FakeError> {
        let mut state = lock(&self.state);
        let Some(request) = state.requests.get_mut(execution_id) else {
            return Ok(false);
        };
        if request.decision_sent_at.is_some() {
            return Ok(false);
        }
        request.decision_sent_at = Some(now_ms());
        request.delivery = Some(delivery.clone());
        Ok(true)
    }

    async fn approval_execution(
        &self,
        execution_id: &str,
    ) -> Result<Option<ExecutionRecord>, FakeError> {
        Ok(self.execution(execution_id))
    }

    async fn cast_vote(
        &self,
        execution_id: &str,
        voter: &str,
        vote: Vote,
    ) -> Result<VoteOutcome, FakeError> {
        let mut state = lock(&self.state);
        let Some(e) = state.executions.get(execution_id) else {
            return Ok(VoteOutcome::UnknownExecution);
        };
        if !e.voters.iter().any(|v| v == voter) {
            return Ok(VoteOutcome::NotAVoter);
        }
        if e.status != ExecutionStatus::Running || e.decision.is_some() {
            return Ok(VoteOutcome::Closed {
                status: e.status,
                decision: e.decision,
            });
        }
        state
            .votes
            .entry(execution_id.to_string())
            .or_default()
            .insert(voter.to_string(), vote);
        Ok(match Self::tally_of(&state, execution_id) {
            Some(t) => VoteOutcome::Recorded(t),
            None => VoteOutcome::UnknownExecution,
        })
    }

    async fn tally(&self, execution_id: &str) -> Result<Option<Tally>, FakeError> {
        Ok(Self::tally_of(&lock(&self.state), execution_id))
    }

    async fn decide(&self, execution_id: &str) -> Result<Option<Vote>, FakeError> {
        let mut state = lock(&self.state);
        let Some(tally) = Self::tally_of(&state, execution_id) else {
            return Ok(None);
        };
        let Some(e) = state.executions.get_mut(execution_id) else {
            return Ok(None);
        };
        if e.decision.is_some() || e.status != ExecutionStatus::Running {
            return Ok(None);
        }
        // Rejection wins a tie, as in the metadb's DECIDE.
        let decision = tally.reached();
        e.decision = decision;
        Ok(decision)
    }
}
