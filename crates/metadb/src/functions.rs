//! The metadb's SQL functions (`live_ci_*`), one file each in
//! `crates/metadb/functions/<name>.sql`: each file holds the one current
//! definition (`CREATE OR REPLACE FUNCTION`) a reader reads, whatever the
//! versioned migrations defined on the way. The migrator applies them after
//! the migrations, in the same transaction and under the same advisory lock
//! (`migrate`), and records the set in `schema_functions` (migration 0022).
//!
//! Which set a database has is a revision number with the hash of the files:
//! [`FUNCTION_REVISIONS`] lists the hash of every revision, newest last, and a
//! test fails when the files' hash is not the last entry, so every change of a
//! function appends a revision. Revisions order what hashes cannot: a start
//! whose revision is the database's (same hash) applies nothing after one
//! read, one with an older revision never replaces newer bodies (a newer
//! binary applied them: they pass, as a newer schema does), and the same
//! revision with another hash (two builds claiming one revision) is refused,
//! naming both hashes. terra-run and drift, which do not migrate, check the
//! same through `check_schema`.
//!
//! Rules for a change:
//! * Change a body in its file and append the new hash to
//!   [`FUNCTION_REVISIONS`] (the failing test prints it). No migration.
//! * A new function gets a file and a place in [`FUNCTIONS`], after the
//!   functions it calls: a `LANGUAGE sql` body is checked when it is created.
//! * A function whose argument list or result type changes needs a migration
//!   that drops the old signature (`DROP FUNCTION name(old types)`):
//!   `CREATE OR REPLACE` cannot change either and would otherwise leave the
//!   old signature beside the new one as an overload. Migrations run first,
//!   so the file then creates the new signature. A function dropped for good
//!   is dropped by a migration and its file removed.
//! * A migration must not rely on a function's body being current: the
//!   files are applied after every migration.
//!
//! Grants: every function runs as its caller (none is `SECURITY DEFINER`)
//! and keeps PostgreSQL's default `EXECUTE` for everyone, so there are no
//! grants on functions; what a restricted role (migrations 0015, 0020) may
//! do is decided by its table grants, which stay in the migrations with the
//! tables they name.

/// One function's file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Function {
    /// The function's name, also its file's (`functions/<name>.sql`).
    pub name: &'static str,
    /// The file: comments and one `CREATE OR REPLACE FUNCTION` statement.
    pub sql: &'static str,
}

macro_rules! function {
    ($name:literal) => {
        Function {
            name: $name,
            sql: include_str!(concat!("../functions/", $name, ".sql")),
        }
    };
}

/// Every function, each after the functions it calls.
pub const FUNCTIONS: &[Function] = &[
    function!("live_ci_ms"),
    function!("live_ci_checkout_json"),
    function!("live_ci_run_json"),
    function!("live_ci_execution_json"),
    function!("live_ci_approval_json"),
    function!("live_ci_progress"),
    function!("live_ci_merge_lock_json"),
    function!("live_ci_abort_dependents"),
    function!("live_ci_finish"),
    function!("live_ci_claim"),
    function!("live_ci_start_next_run"),
    function!("live_ci_finish_run"),
    function!("live_ci_settle"),
    function!("live_ci_tally_json"),
    function!("live_ci_vote_view"),
    function!("live_ci_decide"),
    function!("live_ci_claim_delivery"),
    function!("live_ci_vote"),
    function!("live_ci_awaiting_vote"),
    function!("live_ci_policy_denials"),
    function!("live_ci_vote_reasoned"),
];

/// The hash ([`FunctionSet::hash`]) of every revision of [`FUNCTIONS`],
/// oldest first: revision `n` is entry `n - 1`. Append only.
pub const FUNCTION_REVISIONS: &[&str] = &[
    // 1: the definitions as migrations 0001..0021 left them.
    "83a7c46ffe0d84b727ebf47b74fa35c4bf7cbc819a558cc53fc1243106d0b896",
];

/// A set of function files at a revision: the binary's own
/// ([`FunctionSet::current`]), or another one in tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FunctionSet {
    /// The set's revision: its 1-based index in [`FUNCTION_REVISIONS`].
    pub revision: u32,
    /// The function files, in the order they are applied.
    pub functions: &'static [Function],
}

impl FunctionSet {
    /// This binary's functions, at the last revision of [`FUNCTION_REVISIONS`].
    pub fn current() -> FunctionSet {
        FunctionSet {
            revision: u32::try_from(FUNCTION_REVISIONS.len()).unwrap_or(u32::MAX),
            functions: FUNCTIONS,
        }
    }

    /// SHA-256 (hex) of every name and file in order, each NUL-terminated: it
    /// tells sets apart, and is stable across Rust releases (unlike `std`'s
    /// hasher).
    pub fn hash(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for f in self.functions {
            h.update(f.name.as_bytes());
            h.update([0]);
            h.update(f.sql.as_bytes());
            h.update([0]);
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// How the database's recorded set compares with this one.
    pub(crate) fn against(&self, applied: Option<&AppliedFunctions>) -> Verdict {
        match applied {
            None => Verdict::Behind,
            Some(a) if a.revision < self.revision => Verdict::Behind,
            Some(a) if a.revision > self.revision => Verdict::Newer,
            Some(a) if a.hash == self.hash() => Verdict::Current,
            Some(_) => Verdict::Conflict,
        }
    }

    /// `revision N (hash "…")`, as errors name a set.
    pub(crate) fn describe(&self) -> String {
        format!("revision {} (hash {:?})", self.revision, self.hash())
    }
}

/// The newest set recorded in `schema_functions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AppliedFunctions {
    pub revision: u32,
    pub hash: String,
}

impl AppliedFunctions {
    /// Parses `<revision> <hash>`, the statements' one text column.
    pub(crate) fn parse(row: &str) -> Option<AppliedFunctions> {
        let (revision, hash) = row.split_once(' ')?;
        Some(AppliedFunctions {
            revision: revision.parse().ok()?,
            hash: hash.to_string(),
        })
    }

    /// `revision N (hash "…")`, or revision 0 for a database without a record.
    pub(crate) fn describe(applied: Option<&AppliedFunctions>) -> String {
        applied.map_or_else(
            || "revision 0 (none recorded)".to_string(),
            |a| format!("revision {} (hash {:?})", a.revision, a.hash),
        )
    }
}

/// A database's function set against a binary's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The same revision and hash: nothing to apply.
    Current,
    /// A newer revision, applied by a newer binary: left alone, and it passes.
    Newer,
    /// An older revision, or none: the migrator applies this set.
    Behind,
    /// The same revision with another hash: refused.
    Conflict,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::text::split_statements;

    /// The first statement of a file without its leading comments.
    fn code(statement: &str) -> String {
        statement
            .lines()
            .skip_while(|l| l.trim_start().starts_with("--") || l.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_files_hash_is_the_last_revision() {
        let set = FunctionSet::current();
        assert_eq!(
            FUNCTION_REVISIONS.last().copied(),
            Some(set.hash().as_str()),
            "the function files changed: append {:?} to FUNCTION_REVISIONS (revision {})",
            set.hash(),
            FUNCTION_REVISIONS.len() + 1
        );
        assert_eq!(set.revision as usize, FUNCTION_REVISIONS.len());
    }

    #[test]
    fn each_file_defines_exactly_its_own_function_after_those_it_calls() {
        let mut seen: Vec<&str> = Vec::new();
        for f in FUNCTIONS {
            let statements = split_statements(f.sql);
            assert_eq!(statements.len(), 1, "{}: one statement per file", f.name);
            let code = code(&statements[0]);
            assert!(
                code.starts_with(&format!("CREATE OR REPLACE FUNCTION {}(", f.name)),
                "{}: the file must start with CREATE OR REPLACE FUNCTION {}(…",
                f.name,
                f.name
            );
            // No parameter-like text: the statement is sent as it is.
            assert!(
                crate::sql::text::parameter_names(&statements[0]).is_empty(),
                "{}",
                f.name
            );
            for other in FUNCTIONS.iter().filter(|o| o.name != f.name) {
                if code.contains(&format!("{}(", other.name)) {
                    assert!(
                        seen.contains(&other.name),
                        "{} calls {}, which comes after it in FUNCTIONS",
                        f.name,
                        other.name
                    );
                }
            }
            assert!(!seen.contains(&f.name), "{} listed twice", f.name);
            seen.push(f.name);
        }
    }

    #[test]
    fn every_file_in_the_folder_is_listed() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("functions");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        files.sort();
        let mut listed: Vec<String> = FUNCTIONS
            .iter()
            .map(|f| format!("{}.sql", f.name))
            .collect();
        listed.sort();
        assert_eq!(files, listed);
    }

    #[test]
    fn revisions_order_sets_and_a_hash_settles_the_same_revision() {
        let set = FunctionSet {
            revision: 3,
            functions: FUNCTIONS,
        };
        let at = |revision, hash: &str| AppliedFunctions {
            revision,
            hash: hash.to_string(),
        };
        assert_eq!(set.against(None), Verdict::Behind);
        assert_eq!(set.against(Some(&at(2, &set.hash()))), Verdict::Behind);
        assert_eq!(set.against(Some(&at(3, &set.hash()))), Verdict::Current);
        assert_eq!(
            set.against(Some(&at(3, "0123456789abcdef"))),
            Verdict::Conflict
        );
        assert_eq!(
            set.against(Some(&at(4, "0123456789abcdef"))),
            Verdict::Newer
        );
        assert_eq!(
            AppliedFunctions::parse("12 00ff00ff00ff00ff"),
            Some(at(12, "00ff00ff00ff00ff"))
        );
        assert_eq!(AppliedFunctions::parse("x 00"), None);
    }

    #[test]
    fn the_hash_sees_a_body_a_name_and_the_order() {
        let one = FunctionSet::current();
        let h = one.hash();
        let mut changed = FUNCTIONS.to_vec();
        changed[0].sql =
            "CREATE OR REPLACE FUNCTION live_ci_ms() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$";
        let changed: &'static [Function] = Box::leak(changed.into_boxed_slice());
        assert_ne!(
            FunctionSet {
                functions: changed,
                ..one
            }
            .hash(),
            h
        );
        let mut swapped = FUNCTIONS.to_vec();
        swapped.swap(0, 1);
        let swapped: &'static [Function] = Box::leak(swapped.into_boxed_slice());
        assert_ne!(
            FunctionSet {
                functions: swapped,
                ..one
            }
            .hash(),
            h
        );
        assert_eq!(h.len(), 64);
    }
}
