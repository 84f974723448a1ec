//! What a verified delivery asks for: plan a pull request's head commit, deploy
//! a merge commit, answer a ping, or nothing (with the reason). Pull requests
//! from forks or untrusted authors are not planned; a maintainer's
//! `/live-ci plan` comment asks for their plan instead. A human's
//! `/live-ci approve|reject <unit>` comment on a merged pull request is a vote.

use regex::Regex;

use super::WebhookError;
use super::event::{IssueCommentEvent, PingEvent, PullRequestEvent};
use super::trust::{TrustPolicy, may_have_write_access, plan_request, untrusted_reason};
use super::vote::{VoteChoice, vote_command};
use crate::path::RepoPath;

/// The pipeline's reaction to one delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// GitHub's `ping` on hook creation: answered, nothing else.
    Ping,
    /// Plan the head commit of a pull request into the trunk (the commit, not the
    /// branch tip at some later time: the original planned moving branch tips).
    PlanPullRequest {
        /// The pull request's number.
        number: u64,
        /// The head commit to plan.
        head_sha: String,
        /// The head branch.
        head_ref: String,
        /// The branch it merges into.
        base_ref: String,
        /// The pull request's page.
        html_url: String,
    },
    /// Deploy a merged pull request's merge commit.
    DeployMerge {
        /// The pull request's number.
        number: u64,
        /// The commit its merge made on the trunk.
        merge_commit_sha: String,
        /// The trunk branch.
        base_ref: String,
        /// The pull request's base commit (`base.sha` in the delivery).
        base_sha: String,
        /// The merged branch.
        head_ref: String,
        /// The merged branch's head commit.
        head_sha: String,
        /// The pull request's page.
        html_url: String,
    },
    /// A pull request whose code is not run without a maintainer's command: its
    /// head commit gets a status saying why and how to have it planned.
    NotPlanned {
        /// The pull request's number.
        number: u64,
        /// The head commit that gets the status.
        head_sha: String,
        /// The status description (`not planned: …`).
        reason: String,
    },
    /// A `/live-ci plan` comment on a pull request by someone who may have write
    /// access: the receiver checks `commenter`'s permission through the API,
    /// then plans the pull request's current head (which must be `pinned_sha`
    /// when the comment names one).
    PlanRequested {
        /// The pull request's number.
        number: u64,
        /// The commenter's login.
        commenter: String,
        /// The full head commit the command names, if any.
        pinned_sha: Option<String>,
    },
    /// A `/live-ci approve|reject <unit>` comment on a merged pull request.
    /// `voter` is the commenter's login as GitHub signed it in the delivery,
    /// for the log only: approval_response reads the comment again and
    /// checks its author against the account's `github_voters` (a login or a
    /// team membership) or `voter_github_logins` before anything counts.
    Vote {
        /// The pull request's number.
        number: u64,
        /// The comment's id: approval_response counts the vote from the
        /// comment as GitHub serves it by this id, never from the delivery.
        comment_id: u64,
        /// The commenter's login, from the delivery (for the log only).
        voter: String,
        /// The unit voted on.
        unit: RepoPath,
        /// Approve, or reject with a reason.
        choice: VoteChoice,
    },
    /// A vote command that counts nothing (a pull request not merged, a
    /// malformed command): the receiver answers `voter` with `reply`.
    VoteRefused {
        /// The pull request's number.
        number: u64,
        /// The commenter's login.
        voter: String,
        /// Why the command counts nothing, to post as a reply.
        reply: String,
    },
    /// Nothing to do; the reason goes back to GitHub in the response body.
    Ignore(String),
}

/// The status description of a pull request that is not planned: how to get a
/// plan comes first, so GitHub's 140-character limit never cuts it off.
pub fn not_planned_description(why: &str) -> String {
    format!(
        "not planned: a maintainer comments \"{}\" to plan it ({why})",
        super::trust::PLAN_COMMAND
    )
}

/// Routes a delivery by its `X-GitHub-Event` name and verified body. Only pull
/// requests into `trunk` of `repository` (when given) do anything; `trust` says
/// whose pull requests are planned without a maintainer's command. Merged pull
/// requests always deploy: the merge is the human gate. `bot_login` is the
/// login live-ci's own comments are made by (the git host's
/// `PullRequestAuthority::bot_login`): its comments are never commands, so
/// nothing it writes (a summary naming a hostile unit path) can ask for a plan.
pub fn route(
    event: &str,
    body: &[u8],
    trunk: &str,
    repository: Option<&str>,
    trust: &TrustPolicy,
    bot_login: Option<&str>,
) -> Result<Route, WebhookError> {
    let malformed = |e: serde_json::Error| WebhookError::MalformedPayload {
        event: event.to_string(),
        message: e.to_string(),
    };
    match event {
        "ping" => {
            serde_json::from_slice::<PingEvent>(body).map_err(malformed)?;
            Ok(Route::Ping)
        }
        "pull_request" => {
            let ev: PullRequestEvent = serde_json::from_slice(body).map_err(malformed)?;
            route_pull_request(event, &ev, trunk, repository, trust)
        }
        "issue_comment" => {
            let ev: IssueCommentEvent = serde_json::from_slice(body).map_err(malformed)?;
            route_comment(&ev, repository, bot_login)
        }
        other => {
            // Still require JSON: a garbled body is a client error whatever the event.
            serde_json::from_slice::<serde_json::Value>(body).map_err(malformed)?;
            Ok(Route::Ignore(format!("event {other:?} is not handled")))
        }
    }
}

/// A `pull_request` event: opened or updated on the trunk (planned when
/// trusted), merged (deployed), or nothing to do.
fn route_pull_request(
    event: &str,
    ev: &PullRequestEvent,
    trunk: &str,
    repository: Option<&str>,
    trust: &TrustPolicy,
) -> Result<Route, WebhookError> {
    let pr = &ev.pull_request;
    if let Some(repo) = repository
        && !ev.repository.full_name.eq_ignore_ascii_case(repo)
    {
        return Ok(Route::Ignore(format!(
            "repository {:?} is not the configured {repo:?}",
            ev.repository.full_name
        )));
    }
    if pr.base.name != trunk {
        return Ok(Route::Ignore(format!(
            "pull request #{} targets {:?}, not the trunk {trunk:?}",
            ev.number, pr.base.name
        )));
    }
    match ev.action.as_str() {
        "opened" | "reopened" | "synchronize" | "ready_for_review" => {
            if pr.draft {
                return Ok(Route::Ignore(format!(
                    "pull request #{} is a draft; it is planned when marked ready for review",
                    ev.number
                )));
            }
            let repo = repository.unwrap_or(&ev.repository.full_name);
            let head_repo = pr.head.repo.as_ref().map(|r| r.full_name.as_str());
            if let Some(why) = untrusted_reason(repo, head_repo, &pr.author_association, trust) {
                return Ok(Route::NotPlanned {
                    number: ev.number,
                    head_sha: pr.head.sha.clone(),
                    reason: not_planned_description(&why),
                });
            }
            Ok(Route::PlanPullRequest {
                number: ev.number,
                head_sha: pr.head.sha.clone(),
                head_ref: pr.head.name.clone(),
                base_ref: pr.base.name.clone(),
                html_url: pr.html_url.clone(),
            })
        }
        "closed" if pr.merged => {
            let merge_commit_sha = pr
                .merge_commit_sha
                .clone()
                .filter(|s| !s.is_empty())
                .ok_or_else(|| WebhookError::MalformedPayload {
                    event: event.to_string(),
                    message: format!(
                        "pull request #{} is merged but has no merge_commit_sha",
                        ev.number
                    ),
                })?;
            Ok(Route::DeployMerge {
                number: ev.number,
                merge_commit_sha,
                base_ref: pr.base.name.clone(),
                base_sha: pr.base.sha.clone(),
                head_ref: pr.head.name.clone(),
                head_sha: pr.head.sha.clone(),
                html_url: pr.html_url.clone(),
            })
        }
        "closed" => Ok(Route::Ignore(format!(
            "pull request #{} was closed without merging",
            ev.number
        ))),
        other => Ok(Route::Ignore(format!(
            "pull_request action {other:?} needs no plan or deploy"
        ))),
    }
}

fn route_comment(
    ev: &IssueCommentEvent,
    repository: Option<&str>,
    bot_login: Option<&str>,
) -> Result<Route, WebhookError> {
    let number = ev.issue.number;
    if let Some(repo) = repository
        && !ev.repository.full_name.eq_ignore_ascii_case(repo)
    {
        return Ok(Route::Ignore(format!(
            "repository {:?} is not the configured {repo:?}",
            ev.repository.full_name
        )));
    }
    if ev.action != "created" {
        return Ok(Route::Ignore(format!(
            "issue_comment action {:?} asks for nothing",
            ev.action
        )));
    }
    if ev.issue.pull_request.is_none() {
        return Ok(Route::Ignore(format!(
            "issue #{number} is not a pull request"
        )));
    }
    let author = &ev.comment.user;
    // GitHub logins are case-insensitive.
    if bot_login.is_some_and(|bot| author.login.eq_ignore_ascii_case(bot)) {
        return Ok(Route::Ignore(format!(
            "the comment on pull request #{number} is live-ci's own ({:?})",
            author.login
        )));
    }
    // Apps (live-ci's own when it runs as one) and other bot accounts: a bot
    // commenting is never a maintainer asking.
    if author.kind.eq_ignore_ascii_case("Bot") {
        return Ok(Route::Ignore(format!(
            "the comment on pull request #{number} is by the bot {:?}",
            author.login
        )));
    }
    if let Some(vote) = vote_command(&ev.comment.body) {
        return Ok(route_vote(ev, vote));
    }
    let Some(request) = plan_request(&ev.comment.body) else {
        return Ok(Route::Ignore(format!(
            "the comment on pull request #{number} does not start with a {:?} line",
            super::trust::PLAN_COMMAND
        )));
    };
    let commenter = &ev.comment.user.login;
    if !may_have_write_access(&ev.comment.author_association) {
        return Ok(Route::Ignore(format!(
            "{commenter:?} ({}) cannot have write access; only maintainers may ask for a plan",
            ev.comment.author_association
        )));
    }
    Ok(Route::PlanRequested {
        number,
        commenter: commenter.clone(),
        pinned_sha: request.pinned_sha,
    })
}

/// A vote command by a human on a pull request: a vote only once the pull
/// request is merged (its merge commit is what awaits approval; the
/// issue_comment payload carries `issue.pull_request.merged_at`).
fn route_vote(ev: &IssueCommentEvent, vote: Result<super::vote::VoteCommand, String>) -> Route {
    let number = ev.issue.number;
    let voter = ev.comment.user.login.clone();
    let merged = ev
        .issue
        .pull_request
        .as_ref()
        .and_then(|pr| pr.get("merged_at"))
        .and_then(serde_json::Value::as_str)
        .is_some_and(|at| !at.is_empty());
    if !merged {
        return Route::VoteRefused {
            number,
            voter,
            reply: format!(
                "pull request #{number} is not merged; votes count on a merged pull request whose deployment awaits approval"
            ),
        };
    }
    match vote {
        Ok(cmd) => Route::Vote {
            number,
            comment_id: ev.comment.id,
            voter,
            unit: cmd.unit,
            choice: cmd.choice,
        },
        Err(reply) => Route::VoteRefused {
            number,
            voter,
            reply,
        },
    }
}

/// Which changed files concern the pipeline.
#[derive(Debug, Clone)]
pub struct FilePattern(Regex);

impl FilePattern {
    /// The default: Terragrunt, Terraform and their data files.
    pub const DEFAULT: &'static str = r"\.(hcl|tf|tfvars|json|yaml|yml)$";

    /// Compiles `pattern` (a regex matched anywhere in a repository path).
    pub fn new(pattern: &str) -> Result<Self, WebhookError> {
        Regex::new(pattern)
            .map(FilePattern)
            .map_err(|e| WebhookError::Pattern {
                pattern: pattern.to_string(),
                message: e.to_string(),
            })
    }

    /// Whether the pipeline cares about a change to `path`.
    pub fn matches(&self, path: &str) -> bool {
        self.0.is_match(path)
    }

    /// Whether any of `paths` concerns the pipeline.
    pub fn matches_any<S: AsRef<str>>(&self, paths: &[S]) -> bool {
        paths.iter().any(|p| self.matches(p.as_ref()))
    }

    /// The pattern as configured.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_pattern() {
        let p = FilePattern::new(FilePattern::DEFAULT).unwrap();
        assert!(p.matches("dev/app/terragrunt.hcl"));
        assert!(p.matches("modules/x/main.tf"));
        assert!(!p.matches("README.md"));
        assert!(!p.matches("hcl/notes.txt"));
        assert!(p.matches_any(&["README.md", "a.yml"]));
        let err = FilePattern::new("(").unwrap_err();
        assert!(err.to_string().starts_with("invalid file pattern \"(\""));
    }

    #[test]
    fn other_events_need_json_too() {
        assert!(matches!(
            route(
                "push",
                b"not json",
                "main",
                None,
                &TrustPolicy::default(),
                None
            ),
            Err(WebhookError::MalformedPayload { .. })
        ));
        assert_eq!(
            route("issues", b"{}", "main", None, &TrustPolicy::default(), None).unwrap(),
            Route::Ignore("event \"issues\" is not handled".into())
        );
    }
}
