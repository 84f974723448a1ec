//! Execution ids in the seed's format, `run-{pr_id}-{commit[..4]}-{account}-{leaf}-{nnn}`,
//! kept within Step Functions' execution-name rules so the id can be the name
//! (which makes `StartExecution` idempotent).

use crate::path::RepoPath;

/// Step Functions' limit on execution names.
pub const MAX_EXECUTION_NAME_LEN: usize = 80;

/// The execution id of a unit. `nonce` supplies the three random digits (taken
/// modulo 1000) so that this stays a pure function; callers draw it and retry on
/// a collision. The account and leaf directory are sanitized to `[A-Za-z0-9_-]`
/// and shortened (the longer first) so the whole id fits in 80 characters.
pub fn execution_id(
    pr_id: u64,
    commit_id: &str,
    account_name: &str,
    cfg_path: &RepoPath,
    nonce: u16,
) -> String {
    let commit: String = sanitize(commit_id).chars().take(4).collect();
    let leaf = cfg_path.as_str().rsplit('/').next().unwrap_or("");
    let mut leaf = sanitize(if leaf.is_empty() { "root" } else { leaf });
    let mut account = sanitize(account_name);
    let fixed = format!("run-{pr_id}-{commit}--") + &format!("-{:03}", nonce % 1000);
    let budget = MAX_EXECUTION_NAME_LEN.saturating_sub(fixed.len());
    // Shorten the longer of the two until both fit, so a long leaf keeps at least
    // as much of itself as a short account needs.
    while account.len() + leaf.len() > budget {
        if leaf.len() >= account.len() {
            leaf.pop();
        } else {
            account.pop();
        }
    }
    format!("run-{pr_id}-{commit}-{account}-{leaf}-{:03}", nonce % 1000)
}

/// Whether `name` is a valid Step Functions execution name: 1 to 80 characters,
/// no whitespace, no control characters and none of ``<>{}[]?*"#%\^|~`$&,;:/``.
pub fn is_valid_execution_name(name: &str) -> bool {
    let len = name.chars().count();
    (1..=MAX_EXECUTION_NAME_LEN).contains(&len)
        && name.chars().all(|c| {
            !c.is_whitespace() && !c.is_control() && !"<>{}[]?*\"#%\\^|~`$&,;:/".contains(c)
        })
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> RepoPath {
        RepoPath::new(s).unwrap()
    }

    #[test]
    fn seed_format() {
        let id = execution_id(
            1,
            "c8c5f6afc7345bd21cd79acaf740dc18b60755e3",
            "dev",
            &p("directory_dependency/dev-account/us-west-2/env-one/baz"),
            729,
        );
        assert_eq!(id, "run-1-c8c5-dev-baz-729");
        assert_eq!(
            execution_id(12, "ab", "dev", &p("x/y"), 7),
            "run-12-ab-dev-y-007"
        );
        assert_eq!(
            execution_id(1, "abcd", "a", &p(""), 1000),
            "run-1-abcd-a-root-000"
        );
    }

    #[test]
    fn sanitized_for_step_functions() {
        let id = execution_id(3, "ab:d", "my account", &p("dev/app.v2"), 5);
        assert_eq!(id, "run-3-ab-d-my-account-app-v2-005");
        assert!(is_valid_execution_name(&id));
    }

    #[test]
    fn long_names_are_shortened_to_80() {
        let account = "a".repeat(60);
        let leaf = format!("dev/{}", "l".repeat(90));
        let id = execution_id(u64::MAX, "c8c5f6af", &account, &p(&leaf), 42);
        assert_eq!(id.len(), MAX_EXECUTION_NAME_LEN, "{id}");
        assert!(is_valid_execution_name(&id));
        assert!(id.starts_with("run-18446744073709551615-c8c5-aaaa"), "{id}");
        assert!(id.ends_with("llll-042"), "{id}");
        // The longer part gives way first: a short account stays whole.
        let id = execution_id(1, "c8c5", "dev", &p(&leaf), 42);
        assert_eq!(id.len(), MAX_EXECUTION_NAME_LEN);
        assert!(id.starts_with("run-1-c8c5-dev-llll"), "{id}");
    }

    #[test]
    fn every_generated_id_is_a_valid_name() {
        for pr in [0u64, 7, 123_456, u64::MAX] {
            for len in [0usize, 1, 10, 40, 79, 80, 200] {
                let name = "x%y".repeat(len);
                let path = if len == 0 {
                    p("")
                } else {
                    p(&format!("acct/{name}"))
                };
                let id = execution_id(pr, "deadbeef", &name, &path, 999);
                assert!(is_valid_execution_name(&id), "{id}");
            }
        }
    }

    #[test]
    fn name_rules() {
        assert!(is_valid_execution_name("run-1-c8c5-dev-baz-729"));
        assert!(!is_valid_execution_name(""));
        assert!(!is_valid_execution_name(&"a".repeat(81)));
        assert!(!is_valid_execution_name("a b"));
        assert!(!is_valid_execution_name("a/b"));
        assert!(!is_valid_execution_name("a:b"));
    }
}
