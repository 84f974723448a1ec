//! Votes from the pull request (issue 29 item 6): `/live-ci approve <unit>`
//! and `/live-ci reject <unit> <reason>` on the merged pull request, counted
//! in the same tally as mailed votes.
//!
//! Why here and not in the receiver: the receiver faces the internet and
//! holds neither vote rights nor `SendTaskSuccess`; it verifies the webhook
//! and invokes this function asynchronously with only where the comment is
//! ([`GitHubVoteRequest`]). Vote power stays in one place. And nothing in
//! that payload is trusted for identity: the comment is read again from
//! GitHub by its id (author, body, pull request), the pull request's merge
//! commit too, and team membership is asked of GitHub.
//!
//! One person, one vote: a login that `voter_github_logins` (configuration,
//! [`live_ci_core::voter_identity`]) ties to one of the execution's mail
//! voters votes as that voter, under the address, so mail and GitHub are one
//! vote of theirs.
//!
//! Every outcome that names a comment gets one reply on the pull request
//! ("counted: …", "… is not a voter of …", "… is not awaiting approval");
//! a refused vote changes nothing.

use std::ops::ControlFlow::{self, Break, Continue};

use serde::{Deserialize, Serialize};

use live_ci_core::account::{Accounts, GitHubVoter};
use live_ci_core::deploy::Vote;
use live_ci_core::escape::markdown::code;
use live_ci_core::port::{
    ApprovalRecord, ApprovalStore, Ballot, Cast, PortError, PortResultExt, PullRequestVotes,
    TokenDelivery, VoteChannel, VoteView, Voted,
};
use live_ci_core::voter_identity::{GitHubIdentity, VoterLogins};
use live_ci_core::webhook::{VoteChoice, VoteCommand, vote_command};

use crate::handler::{ApprovalResponder, DELIVERY_LEASE_SECS, HandOver};
use crate::ports::ResponderPorts;

/// What the receiver's asynchronous invoke carries: where the vote comment
/// is. Never who wrote it or what it says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GitHubVoteRequest {
    /// `owner/name`: must be this pipeline's repository.
    pub repository: String,
    /// The merged pull request the comment is on, checked against the
    /// comment as GitHub gives it.
    pub pull_request: u64,
    /// Identifies the comment, read again from GitHub (author, body).
    pub comment_id: u64,
}

/// The invoke's payload: `{"github_vote": {…}}`. A Function URL event never
/// has this key at its top level, so `main.rs` tells the two apart by it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GitHubVoteEvent {
    /// Where the vote comment is.
    pub github_vote: GitHubVoteRequest,
}

impl GitHubVoteEvent {
    /// The payload the receiver sends for one vote comment (the core's
    /// [`live_ci_core::port::github_vote_payload`], which this parses).
    pub fn payload(repository: &str, pull_request: u64, comment_id: u64) -> String {
        live_ci_core::port::github_vote_payload(repository, pull_request, comment_id)
    }
}

/// Who may vote from GitHub: the repository the votes are on, each
/// account's `github_voters`, and which logins are mail voters
/// (`voter_github_logins`: one person, one vote).
#[derive(Debug, Clone)]
pub struct GitHubVoting {
    /// `owner/name`: an invoke naming another repository counts nothing.
    pub repository: String,
    /// Each account's `github_voters`: the logins and teams admitted there.
    pub accounts: Accounts,
    /// From configuration only: nothing in the comment or the invoke can
    /// choose the address a vote is recorded under.
    pub logins: VoterLogins,
}

/// Why a vote comment could not be counted at all: the invoke fails, and
/// nothing changed (Lambda retries an asynchronous invoke).
#[derive(Debug, thiserror::Error)]
pub enum GitHubVoteError {
    /// No GitHub in the ports: votes from the pull request are off.
    #[error(
        "a github_vote invoke, but votes from the pull request are not configured (REPO_FULL_NAME unset)"
    )]
    NotConfigured,
    /// A port failed before the vote was recorded.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// What counting a vote comment did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GitHubVoteOutcome {
    /// The vote was recorded in the tally.
    pub counted: bool,
    /// The comment posted on the pull request (`None`: none was due, e.g.
    /// the comment is gone, or it failed: see `note`).
    pub reply: Option<String>,
    /// What happened, for the log.
    pub note: String,
}

impl GitHubVoteOutcome {
    fn silent(note: String) -> Self {
        GitHubVoteOutcome {
            counted: false,
            reply: None,
            note,
        }
    }
}

/// The vote as the reply words it.
fn choice_words(choice: &VoteChoice) -> &'static str {
    match choice {
        VoteChoice::Approve => "approves",
        VoteChoice::Reject { .. } => "rejects",
    }
}

/// A vote comment read from GitHub: its pull request, author and command.
struct Commented {
    number: u64,
    /// The author's login, lower case.
    login: String,
    /// The author as the replies quote them.
    who: String,
    cmd: VoteCommand,
}

/// The execution a comment votes on, and who the commenter votes as.
struct Admitted {
    view: VoteView,
    identity: GitHubIdentity,
    approval: ApprovalRecord,
}

/// The reply to a vote on a unit that is not awaiting approval.
fn not_awaiting(comment: &Commented) -> String {
    format!(
        "{}'s vote is not counted: unit {} is not awaiting approval in the deployment of pull request #{}",
        comment.who,
        code(comment.cmd.unit.as_str()),
        comment.number
    )
}

impl<Ports: ResponderPorts> ApprovalResponder<Ports> {
    /// Counts the vote comment `request` names, and answers it on the pull
    /// request, through the ports' GitHub. A port failing before the vote is
    /// an error (the invoke is retried by Lambda: nothing changed); after
    /// it, only logged. Without GitHub in the ports, an error before
    /// anything is read.
    pub async fn github_vote(
        &self,
        voting: &GitHubVoting,
        request: &GitHubVoteRequest,
    ) -> Result<GitHubVoteOutcome, GitHubVoteError> {
        let Some(github) = self.github() else {
            return Err(GitHubVoteError::NotConfigured);
        };
        Ok(self.count(github, voting, request).await?)
    }

    /// [`github_vote`](Self::github_vote) with GitHub at hand.
    async fn count(
        &self,
        github: &Ports::GitHub,
        voting: &GitHubVoting,
        request: &GitHubVoteRequest,
    ) -> Result<GitHubVoteOutcome, PortError> {
        let comment = match self.read_comment(github, voting, request).await? {
            Continue(comment) => comment,
            Break(outcome) => return Ok(outcome),
        };
        let admitted = match self.admit(github, voting, &comment).await? {
            Continue(admitted) => admitted,
            Break(outcome) => return Ok(outcome),
        };
        let voted = self.cast(&comment, &admitted).await?;
        let Commented {
            number, who, cmd, ..
        } = &comment;
        let unit = code(cmd.unit.as_str());
        if voted.as_ref().is_some_and(|v| v.reason_required) {
            let reply = format!(
                "{who}'s approval of {unit} is not counted: its plan was denied by policy, and approving it needs a reason; approve from the approval page, which asks for one"
            );
            return Ok(self.answer(github, *number, false, reply).await);
        }
        let Some(cast) = voted.and_then(|v| v.cast).filter(|c| c.recorded) else {
            return Ok(self
                .answer(github, *number, false, not_awaiting(&comment))
                .await);
        };
        let reply = self.counted_reply(&comment, &admitted, &cast).await;
        Ok(self.answer(github, *number, true, reply).await)
    }

    /// The comment read again from GitHub by its id, on this repository's
    /// pull request, and its vote command; or why it is not counted.
    async fn read_comment(
        &self,
        github: &Ports::GitHub,
        voting: &GitHubVoting,
        request: &GitHubVoteRequest,
    ) -> Result<ControlFlow<GitHubVoteOutcome, Commented>, PortError> {
        if !request.repository.eq_ignore_ascii_case(&voting.repository) {
            return Ok(Break(GitHubVoteOutcome::silent(format!(
                "repository {:?} is not this pipeline's {:?}",
                request.repository, voting.repository
            ))));
        }
        let Some(comment) = github
            .vote_comment(request.comment_id)
            .await
            .port("github")?
        else {
            return Ok(Break(GitHubVoteOutcome::silent(format!(
                "comment {} no longer exists",
                request.comment_id
            ))));
        };
        if comment.number != request.pull_request {
            return Ok(Break(GitHubVoteOutcome::silent(format!(
                "comment {} is on #{}, not on pull request #{}",
                comment.id, comment.number, request.pull_request
            ))));
        }
        let number = comment.number;
        let who = code(&comment.author);
        let cmd = match vote_command(&comment.body) {
            None => {
                return Ok(Break(GitHubVoteOutcome::silent(format!(
                    "comment {} is no vote command (edited since?)",
                    comment.id
                ))));
            }
            Some(Err(why)) => {
                let reply = format!("{who}'s vote is not counted: {}", code(&why));
                return Ok(Break(self.answer(github, number, false, reply).await));
            }
            Some(Ok(cmd)) => cmd,
        };
        Ok(Continue(Commented {
            number,
            login: comment.author.to_ascii_lowercase(),
            who,
            cmd,
        }))
    }

    /// The execution awaiting the vote in the merged pull request's run, and
    /// whether the commenter may vote on it. One person, one vote: a login the
    /// operator's map ties to one of the execution's mail voters votes as
    /// that voter (recorded under the address, channel github) and needs no
    /// github_voters entry: the map says it is the same person, who may vote
    /// by mail anyway. Anyone else is `github:<login>`, admitted by
    /// github_voters alone.
    async fn admit(
        &self,
        github: &Ports::GitHub,
        voting: &GitHubVoting,
        comment: &Commented,
    ) -> Result<ControlFlow<GitHubVoteOutcome, Admitted>, PortError> {
        let Commented {
            number,
            login,
            who,
            cmd,
        } = comment;
        let unit = code(cmd.unit.as_str());
        let Some(merge) = github.merge_commit(*number).await.port("github")? else {
            let reply = format!(
                "{who}'s vote on {unit} is not counted: pull request #{number} is not merged"
            );
            return Ok(Break(self.answer(github, *number, false, reply).await));
        };
        let Some(view) = self
            .db()
            .awaiting_vote(&merge, cmd.unit.as_str())
            .await
            .port("metadb")?
        else {
            let reply = not_awaiting(comment);
            return Ok(Break(self.answer(github, *number, false, reply).await));
        };
        let account = &view.execution.account_name;
        let voters = voting
            .accounts
            .get(account)
            .map(|a| a.github_voters())
            .unwrap_or_default();
        let identity = voting.logins.github_identity(&view.execution.voters, login);
        let admitted = match &identity {
            GitHubIdentity::MailVoter(_) => true,
            GitHubIdentity::Login(_) => self.is_voter(github, &voters, login).await?,
        };
        if !admitted {
            let reply = format!(
                "{who} is not a voter of {unit} (account {}): the vote is not counted",
                code(account)
            );
            return Ok(Break(self.answer(github, *number, false, reply).await));
        }
        let Some(approval) = view.approval.clone() else {
            let reply = not_awaiting(comment);
            return Ok(Break(self.answer(github, *number, false, reply).await));
        };
        Ok(Continue(Admitted {
            view,
            identity,
            approval,
        }))
    }

    /// Casts the vote in the same tally as mailed votes.
    async fn cast(
        &self,
        comment: &Commented,
        admitted: &Admitted,
    ) -> Result<Option<Voted>, PortError> {
        let Commented { login, cmd, .. } = comment;
        let voter = admitted.identity.voter_id();
        let vote = match cmd.choice {
            VoteChoice::Approve => Vote::Approve,
            VoteChoice::Reject { .. } => Vote::Reject,
        };
        if let VoteChoice::Reject { reason } = &cmd.choice {
            tracing::info!(
                voter,
                unit = cmd.unit.as_str(),
                reason,
                "rejected from the pull request"
            );
        }
        self.db()
            .vote(&Ballot {
                execution_id: &admitted.view.execution.execution_id,
                voter,
                channel: VoteChannel::GitHub,
                vote,
                task_token_hash: &admitted.approval.task_token_hash,
                lease_secs: DELIVERY_LEASE_SECS,
                // A comment's approve carries no reason: an approve of a plan
                // the policies denied (policy_override) is then refused, as
                // the page refuses one without a reason.
                reason: match &cmd.choice {
                    VoteChoice::Reject { reason } => Some(reason.as_str()),
                    VoteChoice::Approve => None,
                },
                // Recorded with a vote under a mail voter's address: which
                // login cast it (and its older `github:` vote is folded in).
                github_login: match &admitted.identity {
                    GitHubIdentity::MailVoter(_) => Some(login.as_str()),
                    GitHubIdentity::Login(_) => None,
                },
            })
            .await
            .port("metadb")
    }

    /// The reply to a counted vote: the tally, and when the votes decided,
    /// the decision handed over and what became of it.
    async fn counted_reply(&self, comment: &Commented, admitted: &Admitted, cast: &Cast) -> String {
        let tally = format!(
            "{} of {} approvals, {} of {} rejections",
            cast.tally.approval_voters.len(),
            cast.tally.min_approval_count,
            cast.tally.rejection_voters.len(),
            cast.tally.min_rejection_count
        );
        let counted = format!(
            "counted: {} {} {} ({tally})",
            comment.who,
            choice_words(&comment.cmd.choice),
            code(comment.cmd.unit.as_str())
        );
        let Some(decision) = cast.decision else {
            return format!("{counted}.");
        };
        let id = admitted.view.execution.execution_id.clone();
        let current = cast
            .approval
            .clone()
            .unwrap_or_else(|| admitted.approval.clone());
        let outcome = match self.hand_over(&id, cast, &current, decision).await {
            HandOver::NotOurs => "the decision is being handed over".to_string(),
            HandOver::Sent(TokenDelivery::Delivered) => match decision {
                Vote::Approve => "the deployment goes on to Apply".to_string(),
                Vote::Reject => "the deployment is rejected and will not be applied".to_string(),
            },
            HandOver::Sent(TokenDelivery::Gone { .. }) => {
                "but Step Functions no longer waits for this approval: it changes nothing"
                    .to_string()
            }
            HandOver::Refused(why) => {
                format!("but {why}, so nothing was sent: an operator must look at it")
            }
            HandOver::Unreachable => {
                "but Step Functions could not be reached; the next vote retries the hand-over"
                    .to_string()
            }
        };
        format!(
            "{counted}. The votes decided: {}; {outcome}.",
            decision.as_str()
        )
    }

    /// Whether `login` is one of `voters`: listed, or an active member of a
    /// listed team (asked of GitHub, team by team, until one says yes).
    async fn is_voter(
        &self,
        github: &Ports::GitHub,
        voters: &[GitHubVoter],
        login: &str,
    ) -> Result<bool, PortError> {
        if voters
            .iter()
            .any(|v| matches!(v, GitHubVoter::Login(l) if l == login))
        {
            return Ok(true);
        }
        for voter in voters {
            if let GitHubVoter::Team { org, slug } = voter
                && github.team_member(org, slug, login).await.port("github")?
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Posts `reply` on the pull request; a refusal is logged, never fatal
    /// (the vote, if counted, stays counted).
    async fn answer(
        &self,
        github: &Ports::GitHub,
        number: u64,
        counted: bool,
        reply: String,
    ) -> GitHubVoteOutcome {
        match github.reply(number, &reply).await.port("github") {
            Ok(()) => GitHubVoteOutcome {
                counted,
                note: reply.clone(),
                reply: Some(reply),
            },
            Err(e) => {
                tracing::warn!(error = %e, pull_request = number, "replying to a vote failed");
                GitHubVoteOutcome {
                    counted,
                    reply: None,
                    note: format!("{reply} (the reply failed: {e})"),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_receivers_payload_is_what_the_invoke_decodes() {
        let event: GitHubVoteEvent =
            serde_json::from_str(&GitHubVoteEvent::payload("acme/live", 43, 9)).unwrap();
        assert_eq!(
            event.github_vote,
            GitHubVoteRequest {
                repository: "acme/live".into(),
                pull_request: 43,
                comment_id: 9
            }
        );
        // Nothing else rides along: an author or a body would be refused.
        let extra = r#"{"github_vote": {"repository": "acme/live", "pull_request": 43, "comment_id": 9, "author": "admin"}}"#;
        assert!(serde_json::from_str::<GitHubVoteEvent>(extra).is_err());
    }
}
