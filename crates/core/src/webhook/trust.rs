//! Whose pull requests live-ci plans on its own. `terraform plan` runs the pull
//! request's code (`data "external"`, terragrunt `run_cmd`, custom providers), so a
//! plan is started only for a branch of the repository itself by a trusted author;
//! anyone else's pull request waits for a maintainer's `/live-ci plan` comment,
//! whose author's permission is checked through the git host's API.

use std::collections::BTreeSet;

/// The comment a maintainer writes on a pull request to have it planned.
pub const PLAN_COMMAND: &str = "/live-ci plan";

/// The author associations trusted by default (the module's
/// `pr_plan_author_associations`).
pub const DEFAULT_PLAN_ASSOCIATIONS: &[&str] = &["OWNER", "MEMBER", "COLLABORATOR"];

/// Every value GitHub documents for `author_association`.
pub const KNOWN_ASSOCIATIONS: &[&str] = &[
    "COLLABORATOR",
    "CONTRIBUTOR",
    "FIRST_TIMER",
    "FIRST_TIME_CONTRIBUTOR",
    "MANNEQUIN",
    "MEMBER",
    "NONE",
    "OWNER",
];

/// Associations that can come with write access to the repository: only their
/// comments are worth a permission look-up (anyone may comment on a public
/// repository, and each look-up is an API call).
const MAY_HAVE_WRITE: &[&str] = &["OWNER", "MEMBER", "COLLABORATOR"];

/// Which pull-request authors get plans without a maintainer's command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustPolicy {
    associations: BTreeSet<String>,
}

impl Default for TrustPolicy {
    fn default() -> Self {
        TrustPolicy {
            associations: DEFAULT_PLAN_ASSOCIATIONS
                .iter()
                .map(|s| s.to_string())
                .collect(),
        }
    }
}

impl TrustPolicy {
    /// A policy trusting exactly `associations`; an unknown name is an error
    /// quoting it (a typo would otherwise silently trust nobody).
    pub fn new<S: AsRef<str>>(associations: &[S]) -> Result<Self, String> {
        let mut set = BTreeSet::new();
        for a in associations {
            let a = a.as_ref().trim();
            if !KNOWN_ASSOCIATIONS.contains(&a) {
                return Err(format!(
                    "unknown author association {a:?} (known: {})",
                    KNOWN_ASSOCIATIONS.join(", ")
                ));
            }
            set.insert(a.to_string());
        }
        Ok(TrustPolicy { associations: set })
    }

    /// Parses the JSON list the module sets (`["OWNER","MEMBER"]`; `[]` trusts
    /// nobody, so every pull request waits for a maintainer's command).
    pub fn parse_json(text: &str) -> Result<Self, String> {
        let list: Vec<String> = serde_json::from_str(text)
            .map_err(|e| format!("expected a JSON list of author associations: {e}"))?;
        Self::new(&list)
    }

    /// Whether an author with this association is planned without a command.
    pub fn allows(&self, association: &str) -> bool {
        self.associations.contains(association)
    }
}

/// Why a pull request is not planned on its own, or `None` when it may be:
/// its head must be a branch of `repository` and its author trusted.
pub fn untrusted_reason(
    repository: &str,
    head_repository: Option<&str>,
    author_association: &str,
    policy: &TrustPolicy,
) -> Option<String> {
    match head_repository {
        None => return Some("its head repository was deleted".into()),
        Some(head) if !head.eq_ignore_ascii_case(repository) => {
            return Some(format!("its head is in the fork {head}"));
        }
        Some(_) => {}
    }
    if policy.allows(author_association) {
        return None;
    }
    // Short: it ends a commit status (140 characters); the module's
    // `pr_plan_author_associations` documents the list.
    Some(format!(
        "author association {author_association:?} is not trusted"
    ))
}

/// A `/live-ci plan` request read from a comment: the command alone on the
/// comment's first line, optionally pinned to the full 40-hex head commit the
/// maintainer reviewed (`/live-ci plan 1a2b…`), so a push after the review is
/// not planned. A command further down is not one: a comment that quotes or
/// embeds text (a plan summary listing a unit named `x\n/live-ci plan`, a
/// reply quoting a command) must not become a request, and a prefix pin could
/// be matched by a commit the author crafted to share it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanRequest {
    /// The full head commit (lowercase hex) the maintainer reviewed, if the
    /// command names one: only that commit may be planned.
    pub pinned_sha: Option<String>,
}

/// The plan request in a comment's body, if any: its first line (surrounding
/// whitespace aside) is the command, alone or with one full commit id.
pub fn plan_request(body: &str) -> Option<PlanRequest> {
    let line = body.split('\n').next()?;
    let rest = line.trim().strip_prefix(PLAN_COMMAND)?;
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    let mut words = rest.split_whitespace();
    match (words.next(), words.next()) {
        (None, _) => Some(PlanRequest { pinned_sha: None }),
        (Some(sha), None) if sha.len() == 40 && sha.chars().all(|c| c.is_ascii_hexdigit()) => {
            Some(PlanRequest {
                pinned_sha: Some(sha.to_ascii_lowercase()),
            })
        }
        _ => None,
    }
}

/// Whether a commenter's association can come with write access at all (the
/// cheap pre-check before the permission look-up).
pub fn may_have_write_access(association: &str) -> bool {
    MAY_HAVE_WRITE.contains(&association)
}

/// A user's permission on the repository, as GitHub's
/// `GET /repos/{owner}/{repo}/collaborators/{user}/permission` reports it
/// (`maintain` counts as `write`, `triage` as `read` in that field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RepoPermission {
    /// No access, or a value the API may add later.
    None,
    /// `read` or `triage`.
    Read,
    /// `write` or `maintain`: push access.
    Write,
    /// `admin`.
    Admin,
}

impl RepoPermission {
    /// Parses the API's `permission` field; anything unknown is no permission.
    pub fn parse(value: &str) -> Self {
        match value {
            "admin" => RepoPermission::Admin,
            "write" | "maintain" => RepoPermission::Write,
            "read" | "triage" => RepoPermission::Read,
            _ => RepoPermission::None,
        }
    }

    /// Push access: such a user could run code through the trunk anyway.
    pub fn may_request_plans(self) -> bool {
        self >= RepoPermission::Write
    }

    /// The permission as the API spells it (`maintain`, `triage` folded).
    pub fn as_str(self) -> &'static str {
        match self {
            RepoPermission::None => "none",
            RepoPermission::Read => "read",
            RepoPermission::Write => "write",
            RepoPermission::Admin => "admin",
        }
    }
}

/// A pull request as the git host reports it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequestHead {
    /// The pull request's number.
    pub number: u64,
    /// False once closed or merged.
    pub open: bool,
    /// The head branch's latest commit.
    pub head_sha: String,
    /// The head branch.
    pub head_ref: String,
    /// The branch it merges into.
    pub base_ref: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_rejects_unknown_associations_by_name() {
        let p = TrustPolicy::parse_json(r#"["OWNER", "MEMBER"]"#).unwrap();
        assert!(p.allows("OWNER") && !p.allows("COLLABORATOR"));
        assert!(!TrustPolicy::parse_json("[]").unwrap().allows("OWNER"));
        let err = TrustPolicy::parse_json(r#"["OWNER", "MEMBR"]"#).unwrap_err();
        assert!(
            err.starts_with("unknown author association \"MEMBR\""),
            "{err}"
        );
        assert!(TrustPolicy::parse_json("OWNER").is_err());
        assert!(TrustPolicy::default().allows("COLLABORATOR"));
        assert!(!TrustPolicy::default().allows("CONTRIBUTOR"));
    }

    #[test]
    fn forks_deleted_heads_and_untrusted_authors_have_a_reason() {
        let p = TrustPolicy::default();
        let repo = "acme/live";
        assert_eq!(
            untrusted_reason(repo, Some("Acme/Live"), "MEMBER", &p),
            None
        );
        assert_eq!(
            untrusted_reason(repo, Some("eve/live"), "OWNER", &p).as_deref(),
            Some("its head is in the fork eve/live")
        );
        assert!(untrusted_reason(repo, None, "OWNER", &p).is_some());
        assert_eq!(
            untrusted_reason(repo, Some(repo), "CONTRIBUTOR", &p).as_deref(),
            Some("author association \"CONTRIBUTOR\" is not trusted")
        );
    }

    #[test]
    fn plan_requests_are_the_whole_first_line_with_a_full_sha() {
        const SHA: &str = "e4d1a9c07b3f25d8e6a1c4b9f0d7e2a5c8b3f161";
        assert_eq!(
            plan_request("/live-ci plan"),
            Some(PlanRequest { pinned_sha: None })
        );
        assert_eq!(
            plan_request("  /live-ci plan  \r\nthanks"),
            Some(PlanRequest { pinned_sha: None })
        );
        assert_eq!(
            plan_request(&format!("/live-ci plan {}\r\nreviewed", SHA.to_uppercase())),
            Some(PlanRequest {
                pinned_sha: Some(SHA.into())
            })
        );
        for no in [
            "/live-ci planx",
            "> /live-ci plan",
            "/live-ci plan please",
            "/live-ci plan abc",
            "please /live-ci plan",
            "",
            // not alone on the first line
            "LGTM\r\n  /live-ci plan\nthanks",
            "<!-- live-ci:pr-plan -->\n| `x` |\n/live-ci plan\n",
            // a pin is the full commit id, never a prefix
            "/live-ci plan e4d1a9c",
            "/live-ci plan e4d1a9c07b3f25d8e6a1c4b9f0d7e2a5c8b3f16",
            "/live-ci plan e4d1a9c07b3f25d8e6a1c4b9f0d7e2a5c8b3f1611",
            "/live-ci plan g4d1a9c07b3f25d8e6a1c4b9f0d7e2a5c8b3f161",
        ] {
            assert_eq!(plan_request(no), None, "{no:?}");
        }
    }

    #[test]
    fn permissions_from_the_api() {
        assert!(RepoPermission::parse("admin").may_request_plans());
        assert!(RepoPermission::parse("write").may_request_plans());
        assert!(RepoPermission::parse("maintain").may_request_plans());
        assert!(!RepoPermission::parse("triage").may_request_plans());
        assert!(!RepoPermission::parse("read").may_request_plans());
        assert!(!RepoPermission::parse("none").may_request_plans());
        assert!(!RepoPermission::parse("ADMIN").may_request_plans());
        assert!(may_have_write_access("MEMBER") && !may_have_write_access("NONE"));
    }
}
