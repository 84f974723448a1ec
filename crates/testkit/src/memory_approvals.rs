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

#[cfg(all(test, feature = "approval"))]
mod tests {
    //! The fake against the real metadb: one scenario through every guard,
    //! and both must answer alike, so the fake cannot drift from the SQL.
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn request(id: &str, hash: &str) -> NewApprovalRequest {
        NewApprovalRequest {
            execution_id: id.into(),
            sfn_execution_arn: format!("arn:aws:states:us-west-2:111111111111:execution:x:{id}"),
            task_token_ciphertext: format!("ciphertext-{hash}"),
            task_token_hash: hash.into(),
            to_add: 1,
            to_change: 0,
            to_destroy: 0,
            plan_summary: "1 to add".into(),
            logs_url: "https://logs.example.com".into(),
            expires_at: now_ms() + 3_600_000,
        }
    }

    /// An answer without the error's type (the two stores' differ).
    fn fmt<T: std::fmt::Debug, E>(r: Result<T, E>) -> String {
        format!("{:?}", r.map_err(|_| "error"))
    }

    /// What the store answers along the scenario, one line per call.
    async fn scenario<S: ApprovalStore>(s: &S, id: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut say = |what: &str, answer: String| out.push(format!("{what}: {answer}"));
        let (a, b, c) = ("a@example.com", "b@example.com", "c@example.com");
        say(
            "unknown",
            fmt(s.store_approval_request(&request("nope", "h0")).await),
        );
        say(
            "store",
            fmt(s.store_approval_request(&request(id, "h1")).await),
        );
        say(
            "again",
            fmt(s.store_approval_request(&request(id, "h1")).await),
        );
        say(
            "new token",
            fmt(s.store_approval_request(&request(id, "h2")).await),
        );
        let stored = s.approval_request(id).await.unwrap().unwrap();
        say("stored hash", stored.task_token_hash);
        say("mail a", fmt(s.record_mailed(id, "h2", a, "m1").await));
        say(
            "mail a again",
            fmt(s.record_mailed(id, "h2", a, "m2").await),
        );
        say("mail b", fmt(s.record_mailed(id, "h2", b, "m3").await));
        say("mailed", fmt(s.mailed_voters(id, "h2").await));
        say("mailed h1", fmt(s.mailed_voters(id, "h1").await));
        say(
            "stranger",
            fmt(s.cast_vote(id, "x@example.com", Vote::Approve).await),
        );
        say(
            "no execution",
            fmt(s.cast_vote("nope", a, Vote::Approve).await),
        );
        say("a approves", fmt(s.cast_vote(id, a, Vote::Approve).await));
        say("decide early", fmt(s.decide(id).await));
        say("claim early", fmt(s.claim_decision_delivery(id, 60).await));
        say("a rejects", fmt(s.cast_vote(id, a, Vote::Reject).await));
        say("b rejects", fmt(s.cast_vote(id, b, Vote::Reject).await));
        say("decide", fmt(s.decide(id).await));
        say("decide again", fmt(s.decide(id).await));
        say("c late", fmt(s.cast_vote(id, c, Vote::Approve).await));
        say("tally", fmt(s.tally(id).await));
        say("claim", fmt(s.claim_decision_delivery(id, 60).await));
        say("claim again", fmt(s.claim_decision_delivery(id, 60).await));
        say(
            "store after claim",
            fmt(s.store_approval_request(&request(id, "h3")).await),
        );
        let delivered = TokenDelivery::Delivered;
        say(
            "record",
            fmt(s.record_decision_delivery(id, &delivered).await),
        );
        say(
            "record again",
            fmt(s.record_decision_delivery(id, &delivered).await),
        );
        let stored = s.approval_request(id).await.unwrap().unwrap();
        say("delivery", format!("{:?}", stored.delivery));
        let e = s.approval_execution(id).await.unwrap().unwrap();
        say("execution", format!("{:?} {:?}", e.status, e.decision));
        say(
            "no execution",
            fmt(s.approval_execution("nope").await.map(|e| e.is_some())),
        );
        out
    }

    #[tokio::test]
    async fn the_fake_answers_as_the_metadb_does() {
        let id = "run-1-c8c5-dev-fake-001";
        let voters = ["a@example.com", "b@example.com", "c@example.com"];
        let (tdb, db, _) = crate::approval::awaiting(id, &voters, 2, 2).await;
        let real = scenario(&db, id).await;
        let fake = scenario(
            &MemoryApprovals::with([running_execution(id, &voters, 2, 2)]),
            id,
        )
        .await;
        tdb.drop_db().await;
        assert_eq!(fake, real);
        // The scenario reached every guard (not two stores agreeing on errors).
        assert!(
            real.contains(&"decide: Ok(Some(Reject))".to_string()),
            "{real:#?}"
        );
        assert!(
            real.contains(&"claim again: Ok(false)".to_string()),
            "{real:#?}"
        );
    }
}
