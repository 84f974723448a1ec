//! What each live-ci job may do on GitHub: one table of GitHub permissions per
//! job, and the permission every request the client sends needs. A GitHub App
//! asks for an installation token with exactly its job's set; whatever the
//! credentials, the client refuses a request its job's set does not cover, so a
//! handler that starts calling something new fails in the tests that run it
//! (and in `infra/README.md`'s table) instead of widening a token silently.

use std::fmt;

use reqwest::Method;
use serde_json::{Map, Value};

/// A live-ci program that talks to GitHub.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Job {
    /// The receiver Lambda (webhooks: statuses, comments, the plan command).
    Receiver,
    /// The trigger-sf Lambda (deploy statuses and comments).
    TriggerSf,
    /// The pr-plan ECS task.
    PrPlan,
    /// The create-deploy-stack ECS task.
    CreateDeployStack,
    /// The terra-run ECS task (one unit's plan or apply).
    TerraRun,
    /// The approval-response Lambda (votes from GitHub).
    ApprovalResponse,
    /// The drift check (issues for drifted units).
    Drift,
}

/// A GitHub App permission, by the name GitHub's API uses: repository
/// permissions, and `members` (an organization permission: team membership).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Permission {
    /// `checks`: check runs.
    Checks,
    /// `contents`: files, commits, clones.
    Contents,
    /// `issues`: issues and their comments.
    Issues,
    /// `members` (organization): team membership.
    Members,
    /// `metadata`: the repository's basic data (every App has read).
    Metadata,
    /// `pull_requests`: pull requests and their conversation.
    PullRequests,
    /// `statuses`: commit statuses.
    Statuses,
}

/// The level of a permission; `Write` includes `Read`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Access {
    /// `read`.
    Read,
    /// `write` (read included).
    Write,
}

/// One permission at one level.
pub type Grant = (Permission, Access);

use Access::{Read, Write};
use Permission::{Checks, Contents, Issues, Members, Metadata, PullRequests, Statuses};

/// Every job's permissions, the only place they are written. Why each:
/// - receiver: the merge lock status (statuses), the pull request, its files
///   and the open ones (pull requests: read), a commenter's permission on the
///   repository for `/live-ci plan` (metadata: read).
/// - trigger-sf: per-unit and merge lock statuses, the open pull requests and
///   their files, and the trunk's head (`GET branches/…`: contents: read).
/// - pr-plan: clones the head (contents: read), a status per unit, and writes
///   its one plan comment (pull requests: write).
/// - create-deploy-stack: clones the merge commit, the run's statuses, and the
///   merge lock status on every open pull request.
/// - terra-run: clones the unit's commit (when no packed checkout is stored)
///   and posts the unit's status.
/// - approval-response: counts a `/live-ci approve|reject` comment on a merged
///   pull request (issue 29): reads the comment by id and the pull request's
///   merge commit, answers with one comment (pull requests: write), and asks
///   whether the commenter is an active member of a voting team (members:
///   read, an organization permission).
/// - drift (issue 32 item 4): clones the trunk head (contents: read) and
///   keeps one issue per drifted unit: lists the open drift issues, opens,
///   edits, comments on and closes them (issues: write, which reads too).
///   Nothing else: it posts no status and touches no pull request.
///
/// Every job that posts statuses holds checks: write too: with an App, a
/// unit's status is a check run ([`crate::GitHubClient::with_check_runs`]);
/// the Merge Lock stays a commit status.
pub const JOB_PERMISSIONS: &[(Job, &[Grant])] = &[
    (
        Job::Receiver,
        &[
            (Checks, Write),
            (Metadata, Read),
            (PullRequests, Read),
            (Statuses, Write),
        ],
    ),
    (
        Job::TriggerSf,
        &[
            (Checks, Write),
            (Contents, Read),
            // Write: the deploy comment on the pull requests a run deploys.
            (PullRequests, Write),
            (Statuses, Write),
        ],
    ),
    (
        Job::PrPlan,
        &[
            (Checks, Write),
            (Contents, Read),
            (PullRequests, Write),
            (Statuses, Write),
        ],
    ),
    (
        Job::CreateDeployStack,
        &[
            (Checks, Write),
            (Contents, Read),
            (PullRequests, Read),
            (Statuses, Write),
        ],
    ),
    (
        Job::TerraRun,
        &[(Checks, Write), (Contents, Read), (Statuses, Write)],
    ),
    (
        Job::ApprovalResponse,
        &[(Members, Read), (PullRequests, Write)],
    ),
    (Job::Drift, &[(Contents, Read), (Issues, Write)]),
];

/// What cloning the live repository over HTTPS with the job's token needs.
pub const CLONE: Grant = (Contents, Read);

/// The whole of a module-source token ([`Job::module_source_permissions`]):
/// reading the listed repositories' code, nothing else.
pub const MODULE_SOURCES: Grant = (Contents, Read);

impl Job {
    /// Every job, in the table's order.
    pub const ALL: [Job; 7] = [
        Job::Receiver,
        Job::TriggerSf,
        Job::PrPlan,
        Job::CreateDeployStack,
        Job::TerraRun,
        Job::ApprovalResponse,
        Job::Drift,
    ];

    /// The job's name as the module and the logs spell it.
    pub fn name(self) -> &'static str {
        match self {
            Job::Receiver => "receiver",
            Job::TriggerSf => "trigger-sf",
            Job::PrPlan => "pr-plan",
            Job::CreateDeployStack => "create-deploy-stack",
            Job::TerraRun => "terra-run",
            Job::ApprovalResponse => "approval-response",
            Job::Drift => "drift",
        }
    }

    /// The job's row of [`JOB_PERMISSIONS`].
    pub fn permissions(self) -> &'static [Grant] {
        JOB_PERMISSIONS
            .iter()
            .find(|(job, _)| *job == self)
            .map_or(&[], |(_, grants)| *grants)
    }

    /// Whether the job's set covers `needed` (a write grant covers a read).
    pub fn allows(self, needed: Grant) -> bool {
        self.permissions()
            .iter()
            .any(|(p, a)| *p == needed.0 && *a >= needed.1)
    }

    /// Whether the job runs repository code (terraform, terragrunt), and so
    /// may ask for a separate token for private module sources: pr-plan,
    /// create-deploy-stack (a plan scan), terra-run and drift (its plans).
    /// The Lambdas never.
    pub fn runs_repository_code(self) -> bool {
        matches!(
            self,
            Job::PrPlan | Job::CreateDeployStack | Job::TerraRun | Job::Drift
        )
    }

    /// The `permissions` object of a module-source token request:
    /// `{"contents": "read"}` ([`MODULE_SOURCES`]).
    pub fn module_source_permissions() -> Map<String, Value> {
        let (p, a) = MODULE_SOURCES;
        [(p.to_string(), Value::String(a.to_string()))]
            .into_iter()
            .collect()
    }

    /// The `permissions` object of an installation token request:
    /// `{"contents": "read", "statuses": "write", …}`.
    pub fn token_permissions(self) -> Map<String, Value> {
        self.permissions()
            .iter()
            .map(|(p, a)| (p.to_string(), Value::String(a.to_string())))
            .collect()
    }
}

impl fmt::Display for Job {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Checks => "checks",
            Contents => "contents",
            Issues => "issues",
            Members => "members",
            Metadata => "metadata",
            PullRequests => "pull_requests",
            Statuses => "statuses",
        })
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Read => "read",
            Write => "write",
        })
    }
}

/// What an `issues/{number}/…` request is about. GitHub numbers pull
/// requests and issues in one sequence and serves a pull request's
/// conversation under `issues/{number}/comments`, so the path alone cannot
/// say which permission a comment needs: on a pull request `pull_requests`
/// covers it, on a real issue only `issues` does. The client says which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Thread {
    /// A pull request's conversation (`pull_requests` covers it).
    PullRequest,
    /// A real issue (only `issues` covers it).
    Issue,
}

/// The permission a request to the repository needs, from its method and its
/// path below `/repos/{owner}/{name}/` (or `/repositories/{id}/`, where
/// GitHub's pagination links point), query removed, and what an issue
/// number names (`thread`). `None`: a request this table does not know,
/// which the client refuses (fail closed: a new call is added here, with its
/// permission, before any job may make it).
pub fn required(method: &Method, path: &str, thread: Thread) -> Option<Grant> {
    let segments: Vec<&str> = path.split('/').collect();
    // The permission a comment route needs: the thread's.
    let comments = |access| match thread {
        Thread::PullRequest => (PullRequests, access),
        Thread::Issue => (Issues, access),
    };
    let grant = match (method.as_str(), segments.as_slice()) {
        ("POST", ["statuses", sha]) if !sha.is_empty() => (Statuses, Write),
        ("POST", ["check-runs"]) => (Checks, Write),
        ("PATCH", ["check-runs", id]) if !id.is_empty() => (Checks, Write),
        // A commit's check runs by name, to edit the one another job made
        // (GitHub: "GitHub Apps must have the checks:read permission").
        ("GET", ["commits", sha, "check-runs"]) if !sha.is_empty() => (Checks, Read),
        ("GET", ["pulls"]) | ("GET", ["pulls", _]) | ("GET", ["pulls", _, "files"]) => {
            (PullRequests, Read)
        }
        // A pull request's conversation comments are issue comments; GitHub
        // lets a pull-requests permission read and write them, and only an
        // issues permission those of a real issue.
        ("GET", ["issues", _, "comments"]) | ("GET", ["issues", "comments", _]) => comments(Read),
        ("POST", ["issues", _, "comments"]) | ("PATCH", ["issues", "comments", _]) => {
            comments(Write)
        }
        // Real issues themselves (the drift job's): listed, opened, edited
        // and closed (a `PATCH` with `state`). Only an issues permission,
        // whatever the caller says the number is.
        ("GET", ["issues"]) => (Issues, Read),
        ("POST", ["issues"]) => (Issues, Write),
        ("PATCH", ["issues", n]) if !n.is_empty() && *n != "comments" => (Issues, Write),
        // The pull requests that produced a commit (the trunk sweep's "was
        // this head merged?"). Not checked against GitHub's permission pages:
        // trigger-sf holds contents: read too, should it need that instead.
        ("GET", ["commits", sha, "pulls"]) if !sha.is_empty() => (PullRequests, Read),
        ("GET", ["collaborators", _, "permission"]) => (Metadata, Read),
        ("GET", ["branches", rest @ ..]) if !rest.is_empty() => (Contents, Read),
        _ => return None,
    };
    Some(grant)
}

/// The permission a request outside the repository needs, from its method and
/// its whole path: only a team membership look-up
/// (`/orgs/{org}/teams/{team_slug}/memberships/{username}`, members: read).
/// `None` for anything else (refused, as for [`required`]).
pub fn required_outside_repo(method: &Method, path: &str) -> Option<Grant> {
    let segments: Vec<&str> = path.split('/').collect();
    match (method.as_str(), segments.as_slice()) {
        ("GET", ["", "orgs", org, "teams", slug, "memberships", user])
            if !org.is_empty() && !slug.is_empty() && !user.is_empty() =>
        {
            Some((Members, Read))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request about a pull request (every job's but drift's).
    fn pr(method: &Method, path: &str) -> Option<Grant> {
        required(method, path, Thread::PullRequest)
    }

    #[test]
    fn every_job_has_one_row_and_a_write_covers_a_read() {
        for job in Job::ALL {
            let rows = JOB_PERMISSIONS.iter().filter(|(j, _)| *j == job).count();
            assert_eq!(rows, 1, "{job}");
        }
        assert!(Job::PrPlan.allows((PullRequests, Read)));
        assert!(!Job::TerraRun.allows((PullRequests, Read)));
        assert!(!Job::Receiver.allows(CLONE));
        assert!(!Job::CreateDeployStack.allows((PullRequests, Write)));
    }

    #[test]
    fn requests_map_to_their_permission_and_unknown_ones_to_none() {
        let get = Method::GET;
        assert_eq!(pr(&Method::POST, "statuses/abc"), Some((Statuses, Write)));
        assert_eq!(pr(&get, "pulls/3/files"), Some((PullRequests, Read)));
        assert_eq!(pr(&Method::POST, "check-runs"), Some((Checks, Write)));
        assert_eq!(pr(&Method::PATCH, "check-runs/5"), Some((Checks, Write)));
        assert_eq!(pr(&get, "check-runs/5"), None);
        assert_eq!(pr(&get, "commits/abc/check-runs"), Some((Checks, Read)));
        assert_eq!(pr(&get, "pulls"), Some((PullRequests, Read)));
        assert_eq!(
            pr(
                &get,
                "commits/6dcb09b5b57875f334f61aebed695e2e4193db5e/pulls"
            ),
            Some((PullRequests, Read))
        );
        assert_eq!(
            pr(&Method::PATCH, "issues/comments/9"),
            Some((PullRequests, Write))
        );
        assert_eq!(
            pr(&get, "collaborators/octo/permission"),
            Some((Metadata, Read))
        );
        assert_eq!(pr(&get, "branches/release/v1"), Some((Contents, Read)));
        assert_eq!(pr(&Method::DELETE, "issues/comments/9"), None);
        assert_eq!(pr(&Method::PUT, "contents/README.md"), None);
        assert_eq!(pr(&Method::POST, "statuses/"), None);
        assert_eq!(pr(&get, "hooks"), None);
        assert_eq!(pr(&get, "issues/comments/9"), Some((PullRequests, Read)));
        assert_eq!(
            required_outside_repo(&get, "/orgs/acme/teams/ops/memberships/alice"),
            Some((Members, Read))
        );
        assert_eq!(
            required_outside_repo(&Method::PUT, "/orgs/acme/teams/ops/memberships/alice"),
            None
        );
        assert_eq!(required_outside_repo(&get, "/orgs/acme/members"), None);
        assert!(Job::ApprovalResponse.allows((Members, Read)));
        assert!(!Job::Receiver.allows((Members, Read)));
    }

    /// A real issue's routes need the issues permission: a pull-requests
    /// token may comment on a pull request's conversation but not on an
    /// issue (GitHub answers 403), and may not open, edit or close one.
    #[test]
    fn issue_routes_need_the_issues_permission() {
        let issue = |m: &Method, p: &str| required(m, p, Thread::Issue);
        for (method, path) in [
            (Method::POST, "issues/7/comments"),
            (Method::PATCH, "issues/comments/9"),
            (Method::POST, "issues"),
            (Method::PATCH, "issues/7"),
        ] {
            assert_eq!(
                issue(&method, path),
                Some((Issues, Write)),
                "{method} {path}"
            );
            assert!(Job::Drift.allows((Issues, Write)));
        }
        assert_eq!(issue(&Method::GET, "issues"), Some((Issues, Read)));
        assert_eq!(
            issue(&Method::GET, "issues/7/comments"),
            Some((Issues, Read))
        );
        // The issue routes proper are the issues permission whatever the caller says.
        assert_eq!(pr(&Method::POST, "issues"), Some((Issues, Write)));
        assert_eq!(pr(&Method::PATCH, "issues/7"), Some((Issues, Write)));
        assert_eq!(pr(&Method::GET, "issues"), Some((Issues, Read)));
        // A pull request's comment stays the pull-requests permission.
        assert_eq!(
            pr(&Method::POST, "issues/7/comments"),
            Some((PullRequests, Write))
        );
        // No job that comments on pull requests may touch a real issue.
        for job in [Job::PrPlan, Job::TriggerSf, Job::ApprovalResponse] {
            assert!(!job.allows((Issues, Write)), "{job}");
        }
        // drift may clone and keep issues, nothing else.
        assert!(Job::Drift.allows(CLONE));
        assert!(!Job::Drift.allows((PullRequests, Read)));
        assert!(!Job::Drift.allows((Statuses, Write)));
        assert_eq!(
            Value::Object(Job::Drift.token_permissions()),
            serde_json::json!({"contents": "read", "issues": "write"})
        );
    }

    #[test]
    fn a_token_request_names_exactly_the_jobs_permissions() {
        let body = Value::Object(Job::TerraRun.token_permissions());
        assert_eq!(
            body,
            serde_json::json!({"checks": "write", "contents": "read", "statuses": "write"})
        );
    }
}
