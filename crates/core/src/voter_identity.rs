//! One person, one vote across mail and GitHub (issue 29 item 6): the
//! operator's map from a voter's e-mail address to their GitHub login, the
//! Terraform module's `voter_github_logins = { "alice@example.com" = "alice" }`.
//!
//! Without it a person listed as a mail voter (`alice@example.com`) and as a
//! GitHub voter (login `alice`, or a member of a listed team) is two voters
//! (`alice@example.com` and `github:alice`) and could meet a 2-vote threshold
//! alone. With it, a GitHub vote by a mapped login is that person's vote: it
//! is recorded under the e-mail address (channel `github`), in the same row
//! as their mailed vote, so voting both ways changes one vote.
//!
//! Who the map admits (decided here, once): a mapped login whose address is
//! one of the account's mail `voters` (as the execution recorded them when
//! its run was created) may vote from GitHub even when neither
//! the login nor one of its teams is in the account's `github_voters`. The
//! map is the operator saying that login *is* that mail voter, and the mail
//! voter may vote anyway; the comment only changes the channel. A mapped
//! login whose address is not a mail voter of the account is admitted (or
//! not) by `github_voters` exactly as an unmapped one, under `github:<login>`.
//!
//! The map comes from configuration only (an environment variable the module
//! sets), never from a comment or an invoke payload: nothing a commenter
//! writes can choose the address a vote is recorded under.

use std::collections::BTreeMap;

use serde::de::{Deserializer, MapAccess, Visitor};

use crate::account::{Accounts, is_github_login, is_plausible_email};
use crate::error::{CoreError, Result};
use crate::port::github_voter_id;

/// A validated `voter_github_logins`: one person per entry, no address and no
/// login twice (GitHub logins compare without case; addresses are compared
/// without ASCII case too, so `Alice@…` and `alice@…` cannot name two people).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VoterLogins {
    /// Lowercase login -> the address as configured.
    by_login: BTreeMap<String, String>,
}

/// Whose vote a GitHub comment is, for one account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitHubIdentity {
    /// The map ties the login to this mail voter of the account (spelled as
    /// the account's `voters` spell it): the vote is recorded under the
    /// address and needs no `github_voters` entry.
    MailVoter(String),
    /// Anyone else: `github:<login>`, admitted only by `github_voters`.
    Login(String),
}

impl GitHubIdentity {
    /// The voter id the vote is recorded under.
    pub fn voter_id(&self) -> &str {
        match self {
            GitHubIdentity::MailVoter(email) => email,
            GitHubIdentity::Login(id) => id,
        }
    }
}

/// The JSON object's entries in order, duplicates kept (a map would keep only
/// the last one and hide the mistake).
struct Entries(Vec<(String, String)>);

impl<'de> serde::Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Entries;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of e-mail address = GitHub login")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut m: A,
            ) -> std::result::Result<Entries, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = m.next_entry::<String, String>()? {
                    out.push(entry);
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(V)
    }
}

impl VoterLogins {
    /// Parses `jsonencode(var.voter_github_logins)`; `file` names the source
    /// in errors. An empty text is an empty map (the variable unset).
    pub fn from_json(file: &str, text: &str) -> Result<Self> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let Entries(entries) =
            serde_json::from_str(text).map_err(|e| CoreError::AccountConfig {
                file: file.to_string(),
                line: e.line(),
                message: format!("voter_github_logins: {e}"),
            })?;
        Self::new(file, entries)
    }

    /// Validates `(e-mail, login)` entries: an address, a login of GitHub's
    /// shape, neither listed twice. The error names the entry.
    pub fn new(file: &str, entries: Vec<(String, String)>) -> Result<Self> {
        let bad = |entry: &str, message: String| CoreError::VoterLoginInvalid {
            file: file.to_string(),
            entry: entry.to_string(),
            message,
        };
        let mut by_login = BTreeMap::new();
        let mut emails: BTreeMap<String, String> = BTreeMap::new();
        for (email, login) in entries {
            if !is_plausible_email(&email) {
                return Err(bad(&email, format!("{email:?} is not an e-mail address")));
            }
            if !is_github_login(&login) {
                return Err(bad(&email, format!("{login:?} is not a GitHub login")));
            }
            if let Some(first) = emails.insert(email.to_ascii_lowercase(), email.clone()) {
                return Err(bad(
                    &email,
                    format!(
                        "the address is listed twice (also as {first:?}): one entry per person"
                    ),
                ));
            }
            let key = login.to_ascii_lowercase();
            if let Some(other) = by_login.get(&key) {
                return Err(bad(
                    &email,
                    format!("login {login:?} is also the login of {other:?}: one person per login"),
                ));
            }
            by_login.insert(key, email);
        }
        Ok(VoterLogins { by_login })
    }

    /// True when no e-mail address is tied to a login.
    pub fn is_empty(&self) -> bool {
        self.by_login.is_empty()
    }

    /// The address the map ties `login` to (any case).
    pub fn email_of(&self, login: &str) -> Option<&str> {
        self.by_login
            .get(&login.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// Whose vote a comment by `login` is on an execution whose mail voters
    /// are `mail_voters` (the execution's own copy of its account's `voters`,
    /// which the metadb checks the vote against; module docs).
    pub fn github_identity(&self, mail_voters: &[String], login: &str) -> GitHubIdentity {
        let voter = self
            .email_of(login)
            .and_then(|email| mail_voters.iter().find(|v| v.eq_ignore_ascii_case(email)));
        match voter {
            Some(v) => GitHubIdentity::MailVoter(v.clone()),
            None => GitHubIdentity::Login(github_voter_id(login)),
        }
    }

    /// Refuses an entry whose address is no account's mail voter: a typo
    /// there would silently leave the person two voters again.
    pub fn check_against(&self, file: &str, accounts: &Accounts) -> Result<()> {
        for (login, email) in &self.by_login {
            let known = accounts
                .all()
                .iter()
                .any(|a| a.voters.iter().any(|v| v.eq_ignore_ascii_case(email)));
            if !known {
                return Err(CoreError::VoterLoginInvalid {
                    file: file.to_string(),
                    entry: email.clone(),
                    message: format!(
                        "{email:?} (login {login:?}) is no account's voter in account_parent_cfg"
                    ),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn voters() -> Vec<String> {
        vec!["Alice@example.com".into(), "bob@example.com".into()]
    }

    #[test]
    fn a_mapped_login_of_a_mail_voter_is_that_voter_and_nobody_else_is() {
        let map = VoterLogins::from_json(
            "voter_github_logins",
            r#"{"alice@example.com": "Alice", "carol@example.com": "carol"}"#,
        )
        .unwrap();
        let a = voters();
        // Any case of the login; the address as the account spells it.
        assert_eq!(
            map.github_identity(&a, "ALICE"),
            GitHubIdentity::MailVoter("Alice@example.com".into())
        );
        // Mapped, but not a mail voter of this account: a login like any other.
        assert_eq!(
            map.github_identity(&a, "carol"),
            GitHubIdentity::Login("github:carol".into())
        );
        assert_eq!(
            map.github_identity(&a, "bob"),
            GitHubIdentity::Login("github:bob".into())
        );
        assert_eq!(
            VoterLogins::default().github_identity(&a, "alice"),
            GitHubIdentity::Login("github:alice".into())
        );
        assert!(VoterLogins::from_json("x", "").unwrap().is_empty());
        assert!(VoterLogins::from_json("x", "{}").unwrap().is_empty());
    }

    #[test]
    fn an_address_that_is_no_accounts_voter_is_refused() {
        let accounts = Accounts::from_json(
            "accounts.json",
            r#"[{"name": "dev", "path": "dev", "voters": ["alice@example.com"],
                 "min_approval_count": 1, "min_rejection_count": 1,
                 "plan_role_arn": "arn:aws:iam::111111111111:role/plan",
                 "apply_role_arn": "arn:aws:iam::111111111111:role/apply"}]"#,
        )
        .unwrap();
        let ok = VoterLogins::from_json("m", r#"{"ALICE@example.com": "alice"}"#).unwrap();
        assert_eq!(ok.check_against("m", &accounts), Ok(()));
        let typo = VoterLogins::from_json("m", r#"{"alice@exmaple.com": "alice"}"#).unwrap();
        assert_eq!(
            typo.check_against("m", &accounts).unwrap_err().to_string(),
            "m: voter_github_logins entry \"alice@exmaple.com\": \"alice@exmaple.com\" (login \"alice\") is no account's voter in account_parent_cfg"
        );
    }

    #[test]
    fn bad_entries_are_refused_naming_the_entry() {
        let err = |text: &str| {
            VoterLogins::from_json("VOTER_GITHUB_LOGINS", text)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(r#"{"alice": "alice"}"#),
            "VOTER_GITHUB_LOGINS: voter_github_logins entry \"alice\": \"alice\" is not an e-mail address"
        );
        assert_eq!(
            err(r#"{"alice@example.com": "acme/alice"}"#),
            "VOTER_GITHUB_LOGINS: voter_github_logins entry \"alice@example.com\": \"acme/alice\" is not a GitHub login"
        );
        assert_eq!(
            err(r#"{"alice@example.com": "-alice"}"#),
            "VOTER_GITHUB_LOGINS: voter_github_logins entry \"alice@example.com\": \"-alice\" is not a GitHub login"
        );
        assert_eq!(
            err(r#"{"alice@example.com": "alice", "ali@example.com": "ALICE"}"#),
            "VOTER_GITHUB_LOGINS: voter_github_logins entry \"ali@example.com\": login \"ALICE\" is also the login of \"alice@example.com\": one person per login"
        );
        assert_eq!(
            err(r#"{"alice@example.com": "alice", "Alice@example.com": "alice2"}"#),
            "VOTER_GITHUB_LOGINS: voter_github_logins entry \"Alice@example.com\": the address is listed twice (also as \"alice@example.com\"): one entry per person"
        );
        // A JSON object with one key twice: kept, and refused, not collapsed.
        assert_eq!(
            err(r#"{"alice@example.com": "alice", "alice@example.com": "mallory"}"#),
            "VOTER_GITHUB_LOGINS: voter_github_logins entry \"alice@example.com\": the address is listed twice (also as \"alice@example.com\"): one entry per person"
        );
        assert_eq!(
            err("{\n\"alice@example.com\": null}"),
            "VOTER_GITHUB_LOGINS:2: voter_github_logins: invalid type: null, expected a string at line 2 column 25"
        );
    }
}
