//! The account configuration: which AWS account each unit deploys to (by path
//! prefix), who approves it, and which accounts must be deployed first.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::{CoreError, Result};
use crate::path::RepoPath;

/// One account entry, field for field the Terraform module's `account_parent_cfg`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Account {
    /// The account's unique name (what executions and dependencies refer to).
    pub name: String,
    /// The directory (repository-relative) holding this account's units.
    pub path: String,
    /// Names of the accounts whose units must all be deployed before this one's.
    #[serde(default)]
    pub dependencies: Vec<String>,
    /// E-mail addresses mailed for approval; the thresholds count these.
    pub voters: Vec<String>,
    /// GitHub logins and `org/team-slug` teams who may also vote by commenting
    /// `/live-ci approve|reject <unit>` on the merged pull request (issue 29).
    /// E-mail stays the default: the thresholds are checked against `voters`
    /// alone, so the mailed voters can always decide without GitHub.
    #[serde(default)]
    pub github_voters: Vec<String>,
    /// Approvals that approve a unit's deployment (1 to the number of `voters`).
    pub min_approval_count: u32,
    /// Rejections that reject it (1 to the number of `voters`).
    pub min_rejection_count: u32,
    /// The IAM role plans in this account run as.
    pub plan_role_arn: String,
    /// The IAM role applies in this account run as.
    pub apply_role_arn: String,
    /// How many of this account's units run at once (null: the run's cap).
    #[serde(default)]
    pub max_parallel: Option<u32>,
}

/// A validated account list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accounts {
    accounts: Vec<Account>,
    paths: Vec<RepoPath>,
    by_name: BTreeMap<String, usize>,
}

impl Accounts {
    /// Parses a JSON list of accounts; `file` names the source in errors.
    pub fn from_json(file: &str, text: &str) -> Result<Self> {
        let accounts: Vec<Account> =
            serde_json::from_str(text).map_err(|e| CoreError::AccountConfig {
                file: file.to_string(),
                line: e.line(),
                message: e.to_string(),
            })?;
        Self::new(file, accounts)
    }

    /// Validates names, paths, dependencies (known, acyclic) and vote thresholds.
    pub fn new(file: &str, accounts: Vec<Account>) -> Result<Self> {
        let bad = |account: &str, field: &str, message: String| CoreError::AccountInvalid {
            file: file.to_string(),
            account: account.to_string(),
            field: field.to_string(),
            message,
        };
        let mut by_name = BTreeMap::new();
        let mut paths = Vec::with_capacity(accounts.len());
        let mut seen_paths = BTreeMap::new();
        for (i, a) in accounts.iter().enumerate() {
            if a.name.trim().is_empty() {
                return Err(bad(&a.name, "name", "is empty".into()));
            }
            if by_name.insert(a.name.clone(), i).is_some() {
                return Err(bad(
                    &a.name,
                    "name",
                    format!("{:?} is defined twice", a.name),
                ));
            }
            let path = RepoPath::new(a.path.trim_start_matches('/'))
                .map_err(|e| bad(&a.name, "path", e.to_string()))?;
            if let Some(other) = seen_paths.insert(path.clone(), a.name.clone()) {
                return Err(bad(
                    &a.name,
                    "path",
                    format!("{:?} is also the path of account {other:?}", a.path),
                ));
            }
            paths.push(path);
            check_votes_and_pacing(a).map_err(|(field, message)| bad(&a.name, field, message))?;
        }
        for a in &accounts {
            for d in &a.dependencies {
                if !by_name.contains_key(d) {
                    return Err(bad(
                        &a.name,
                        "dependencies",
                        format!("{d:?} is not a defined account"),
                    ));
                }
            }
        }
        let out = Accounts {
            accounts,
            paths,
            by_name,
        };
        if let Some(cycle) = out.dependency_cycle() {
            return Err(bad(
                &cycle[0],
                "dependencies",
                format!("account dependency cycle: {}", cycle.join(" -> ")),
            ));
        }
        Ok(out)
    }

    /// Every account, in the file's order.
    pub fn all(&self) -> &[Account] {
        &self.accounts
    }

    /// The account named `name`, if any.
    pub fn get(&self, name: &str) -> Option<&Account> {
        self.by_name.get(name).map(|&i| &self.accounts[i])
    }

    /// The account whose path is the longest prefix of `unit`.
    pub fn account_of(&self, unit: &RepoPath) -> Option<&Account> {
        self.paths
            .iter()
            .enumerate()
            .filter(|(_, p)| unit.starts_with(p))
            .max_by_key(|(_, p)| p.as_str().len())
            .map(|(i, _)| &self.accounts[i])
    }

    /// Every account `name` depends on, directly or through others.
    pub fn transitive_dependencies(&self, name: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let mut stack: Vec<&str> = vec![name];
        while let Some(n) = stack.pop() {
            if let Some(a) = self.get(n) {
                for d in &a.dependencies {
                    if out.insert(d.clone()) {
                        stack.push(d);
                    }
                }
            }
        }
        out
    }

    fn dependency_cycle(&self) -> Option<Vec<String>> {
        // Depth-first with an explicit path; account lists are small.
        fn visit<'a>(
            accts: &'a Accounts,
            name: &'a str,
            path: &mut Vec<&'a str>,
            done: &mut BTreeSet<&'a str>,
        ) -> Option<Vec<String>> {
            if let Some(pos) = path.iter().position(|n| *n == name) {
                let mut cycle: Vec<String> = path[pos..].iter().map(|s| s.to_string()).collect();
                cycle.push(name.to_string());
                return Some(cycle);
            }
            if done.contains(name) {
                return None;
            }
            path.push(name);
            if let Some(a) = accts.get(name) {
                for d in &a.dependencies {
                    if let Some(c) = visit(accts, d, path, done) {
                        return Some(c);
                    }
                }
            }
            path.pop();
            done.insert(name);
            None
        }
        let mut done = BTreeSet::new();
        for a in &self.accounts {
            if let Some(c) = visit(self, &a.name, &mut Vec::new(), &mut done) {
                return Some(c);
            }
        }
        None
    }
}

/// One entry of an account's `github_voters`: a login, or every active member
/// of an organization's team. GitHub compares logins and slugs without case,
/// so both are kept lowercase.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GitHubVoter {
    /// A user's login (lowercase).
    Login(String),
    /// The active members of a team.
    Team {
        /// The organization's login (lowercase).
        org: String,
        /// The team's slug (lowercase).
        slug: String,
    },
}

impl GitHubVoter {
    /// Parses `login` or `org/team-slug`; the error quotes the entry. Logins
    /// and organizations are GitHub's: letters, digits and single inner
    /// hyphens, at most 39 characters; a team slug is letters, digits, `-`
    /// and `_`. Nothing else may reach the membership URL the entry builds.
    pub fn parse(entry: &str) -> std::result::Result<Self, String> {
        let shape = "is neither a GitHub login nor an \"org/team-slug\"";
        let login_ok = is_github_login;
        match entry.split_once('/') {
            None if login_ok(entry) => Ok(GitHubVoter::Login(entry.to_ascii_lowercase())),
            Some((org, slug))
                if login_ok(org)
                    && !slug.is_empty()
                    && slug.len() <= 100
                    && slug
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') =>
            {
                Ok(GitHubVoter::Team {
                    org: org.to_ascii_lowercase(),
                    slug: slug.to_ascii_lowercase(),
                })
            }
            _ => Err(format!("{entry:?} {shape}")),
        }
    }

    /// The entry as configured (lowercase).
    pub fn as_entry(&self) -> String {
        match self {
            GitHubVoter::Login(login) => login.clone(),
            GitHubVoter::Team { org, slug } => format!("{org}/{slug}"),
        }
    }
}

impl Account {
    /// The account's GitHub voters, parsed ([`Accounts::new`] refused any
    /// entry that does not parse, so none is dropped for a validated list).
    pub fn github_voters(&self) -> Vec<GitHubVoter> {
        self.github_voters
            .iter()
            .filter_map(|v| GitHubVoter::parse(v).ok())
            .collect()
    }
}

/// Whether `s` has the shape of a GitHub login (or organization): letters,
/// digits and single inner hyphens, at most 39 characters. One rule for
/// `github_voters` and `voter_github_logins`.
pub(crate) fn is_github_login(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 39
        && !s.starts_with('-')
        && !s.ends_with('-')
        && !s.contains("--")
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// A cheap shape check (one `@`, something on each side, a dot in the domain);
/// the mailer does the real validation when it sends.
pub(crate) fn is_plausible_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !s.chars().any(|c| c.is_whitespace() || c == '<' || c == '>')
}

/// An account's voters (e-mail addresses; GitHub logins and teams, each
/// once), its thresholds (between 1 and the number of mail voters, so mail
/// can always decide) and its pacing cap; the field and why, when refused.
fn check_votes_and_pacing(a: &Account) -> std::result::Result<(), (&'static str, String)> {
    if a.voters.is_empty() {
        return Err(("voters", "is empty: nobody could approve".into()));
    }
    if let Some(v) = a.voters.iter().find(|v| !is_plausible_email(v)) {
        return Err(("voters", format!("{v:?} is not an e-mail address")));
    }
    let mut seen_github = BTreeSet::new();
    for v in &a.github_voters {
        let voter = GitHubVoter::parse(v).map_err(|e| ("github_voters", e))?;
        if !seen_github.insert(voter) {
            return Err(("github_voters", format!("{v:?} is listed twice")));
        }
    }
    let n = a.voters.len() as u32;
    for (field, value) in [
        ("min_approval_count", a.min_approval_count),
        ("min_rejection_count", a.min_rejection_count),
    ] {
        if value == 0 || value > n {
            return Err((
                field,
                format!("is {value}; it must be between 1 and the {n} voter(s)"),
            ));
        }
    }
    if a.max_parallel == Some(0) {
        return Err((
            "max_parallel",
            "is 0; it must be at least 1 (or null: the run's cap)".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = r#"[
      {"name": "shared", "path": "shared", "voters": ["ops@example.com"],
       "min_approval_count": 1, "min_rejection_count": 1,
       "plan_role_arn": "arn:aws:iam::111111111111:role/plan", "apply_role_arn": "arn:aws:iam::111111111111:role/apply"},
      {"name": "dev", "path": "dev", "dependencies": ["shared"], "voters": ["a@example.com", "b@example.com"],
       "min_approval_count": 2, "min_rejection_count": 1,
       "plan_role_arn": "arn:aws:iam::222222222222:role/plan", "apply_role_arn": "arn:aws:iam::222222222222:role/apply"},
      {"name": "dev-eu", "path": "dev/eu-west-1", "dependencies": ["dev"], "voters": ["a@example.com"],
       "min_approval_count": 1, "min_rejection_count": 1,
       "plan_role_arn": "arn:aws:iam::333333333333:role/plan", "apply_role_arn": "arn:aws:iam::333333333333:role/apply"}
    ]"#;

    #[test]
    fn longest_prefix_wins_and_dependencies_are_transitive() {
        let a = Accounts::from_json("accounts.json", OK).unwrap();
        let of = |p: &str| {
            a.account_of(&RepoPath::new(p).unwrap())
                .map(|a| a.name.as_str())
        };
        assert_eq!(of("dev/eu-west-1/app"), Some("dev-eu"));
        assert_eq!(of("dev/us-east-1/app"), Some("dev"));
        assert_eq!(of("develop/app"), None);
        assert_eq!(
            a.transitive_dependencies("dev-eu")
                .into_iter()
                .collect::<Vec<_>>(),
            ["dev", "shared"]
        );
    }

    #[test]
    fn json_errors_name_the_line() {
        let err = Accounts::from_json("accounts.json", "[\n{\"name\": 1}\n]").unwrap_err();
        assert!(err.to_string().starts_with("accounts.json:2: "), "{err}");
        let err = Accounts::from_json("a.json", "[{\"nme\": \"x\"}]").unwrap_err();
        assert!(err.to_string().contains("unknown field `nme`"), "{err}");
    }

    #[test]
    fn invalid_entries_name_account_and_field() {
        let base: Vec<Account> = serde_json::from_str(OK).unwrap();
        let check = |f: &dyn Fn(&mut Vec<Account>), expect: &str| {
            let mut accts = base.clone();
            f(&mut accts);
            let err = Accounts::new("accounts.json", accts)
                .unwrap_err()
                .to_string();
            assert_eq!(err, expect);
        };
        check(
            &|a| a[1].dependencies = vec!["prod".into()],
            "accounts.json: account \"dev\", field dependencies: \"prod\" is not a defined account",
        );
        check(
            &|a| a[0].dependencies = vec!["dev-eu".into()],
            "accounts.json: account \"shared\", field dependencies: account dependency cycle: shared -> dev-eu -> dev -> shared",
        );
        check(
            &|a| a[1].min_approval_count = 3,
            "accounts.json: account \"dev\", field min_approval_count: is 3; it must be between 1 and the 2 voter(s)",
        );
        check(
            &|a| a[0].voters = vec!["not-an-address".into()],
            "accounts.json: account \"shared\", field voters: \"not-an-address\" is not an e-mail address",
        );
        check(
            &|a| a[0].github_voters = vec!["alice".into(), "acme/ops team".into()],
            "accounts.json: account \"shared\", field github_voters: \"acme/ops team\" is neither a GitHub login nor an \"org/team-slug\"",
        );
        check(
            &|a| a[0].github_voters = vec!["-alice".into()],
            "accounts.json: account \"shared\", field github_voters: \"-alice\" is neither a GitHub login nor an \"org/team-slug\"",
        );
        check(
            &|a| a[0].github_voters = vec!["acme/../admin".into()],
            "accounts.json: account \"shared\", field github_voters: \"acme/../admin\" is neither a GitHub login nor an \"org/team-slug\"",
        );
        check(
            &|a| a[0].github_voters = vec!["Alice".into(), "alice".into()],
            "accounts.json: account \"shared\", field github_voters: \"alice\" is listed twice",
        );
        check(
            &|a| a[2].name = "dev".into(),
            "accounts.json: account \"dev\", field name: \"dev\" is defined twice",
        );
        check(
            &|a| a[2].path = "./dev/".into(),
            "accounts.json: account \"dev-eu\", field path: \"./dev/\" is also the path of account \"dev\"",
        );
        check(
            &|a| a[2].max_parallel = Some(0),
            "accounts.json: account \"dev-eu\", field max_parallel: is 0; it must be at least 1 (or null: the run's cap)",
        );
    }

    #[test]
    fn github_voters_are_optional_logins_and_teams() {
        let a = Accounts::from_json("accounts.json", OK).unwrap();
        assert!(a.get("shared").unwrap().github_voters().is_empty());
        let a = Accounts::from_json(
            "accounts.json",
            &OK.replacen(
                r#""voters": ["ops@example.com"],"#,
                r#""voters": ["ops@example.com"], "github_voters": ["Alice", "acme/Platform_ops"],"#,
                1,
            ),
        )
        .unwrap();
        assert_eq!(
            a.get("shared").unwrap().github_voters(),
            vec![
                GitHubVoter::Login("alice".into()),
                GitHubVoter::Team {
                    org: "acme".into(),
                    slug: "platform_ops".into()
                }
            ]
        );
    }

    #[test]
    fn max_parallel_is_optional_and_may_be_null() {
        // jsonencode of the module's optional(number) writes null when unset.
        let a = Accounts::from_json(
            "accounts.json",
            &OK.replacen(
                "\"name\": \"shared\",",
                "\"name\": \"shared\", \"max_parallel\": null,",
                1,
            )
            .replacen(
                "\"name\": \"dev\",",
                "\"name\": \"dev\", \"max_parallel\": 2,",
                1,
            ),
        )
        .unwrap();
        let caps: Vec<Option<u32>> = a.all().iter().map(|a| a.max_parallel).collect();
        assert_eq!(caps, [None, Some(2), None]);
    }
}
