//! The merge lock: while a run deploys, open pull requests into the trunk show a
//! pending "Merge Lock" status so they cannot be merged (with branch protection).
//! The metadb row ([`MergeLockRow`]) is the truth; the parameter store mirrors
//! it for the receiver.
//!
//! This module owns the lock's whole life; every caller makes one call of
//! [`mirror`]: the receiver reads the parameter confirmed against the row
//! ([`read_confirmed`]), trigger-sf, create-deploy-stack and the operator's
//! controls publish it ([`Publisher`]: the parameter write is required, the
//! open pull requests' statuses advisory), and trigger-sf's sweep reconciles
//! a parameter out of step with the row ([`Publisher::reconcile`]).
//!
//! Its scope ([`Scope`]): `repo` locks every infrastructure pull request while
//! a run holds the lock; `units` locks only a pull request whose units, closed
//! over their dependencies and dependents ([`closure`]), share one with the
//! running and queued runs ([`Scope::status_for`]). Either way runs deploy one
//! at a time in trunk order: `units` lets a disjoint pull request merge (and
//! queue) without waiting, it never deploys two runs at once.

mod mirror;
mod units;

pub use mirror::{
    Advisory, LockError, LockTruth, MetadbLock, NoLockCheck, Published, Publisher, Reconciled,
    Unreadable, confirm, publish_statuses, read_confirmed, refresh_statuses,
};
pub use units::{PLAN_COMMENT_MARKER, PullRequestUnits, closure};

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::status::{CommitStatus, StatusState};

/// The commit-status context GitHub branch protection requires (the status
/// module names every context; the lock's is the same string).
pub const CONTEXT: &str = crate::status::context::MERGE_LOCK;

/// The parameter's value when no run holds the lock (as the seed design stores it).
pub const FREE: &str = "none";

/// The metadb's merge lock row: which run holds it. `run_id` is a
/// `deploy::RunId` and `locked_at` a `deploy::UnixMillis` (both `i64`),
/// spelled out so the row does not import `deploy`, which embeds the row in
/// its `RunEnd` (no circle of files).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeLockRow {
    /// The run holding the lock; `None` when free.
    pub run_id: Option<i64>,
    /// That run's pull request (0 for the sweep's run of an unannounced trunk head).
    pub pr_id: Option<u64>,
    /// That run's merge commit.
    pub commit_id: Option<String>,
    /// When the run took the lock.
    pub locked_at: Option<i64>,
}

impl MergeLockRow {
    /// The lock as the parameter store mirrors it (the row is the truth).
    pub fn lock(&self) -> MergeLock {
        match (self.run_id, self.pr_id) {
            (Some(_), Some(pr)) => MergeLock::Held { pr },
            _ => MergeLock::Free,
        }
    }
}

/// The merge lock as the parameter store and the commit statuses show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeLock {
    /// No run holds it: pull requests may merge.
    Free,
    /// Held by the run deploying this pull request.
    Held {
        /// The pull request's number (0 for the sweep's run of a trunk head).
        pr: u64,
    },
}

impl MergeLock {
    /// Reads the parameter store's value: `none` or a pull-request number.
    pub fn parse(value: &str) -> Result<Self, String> {
        let v = value.trim();
        if v.eq_ignore_ascii_case(FREE) || v.is_empty() {
            return Ok(MergeLock::Free);
        }
        v.trim_start_matches('#')
            .parse::<u64>()
            .map(|pr| MergeLock::Held { pr })
            .map_err(|_| {
                format!("merge lock value {value:?} is neither \"none\" nor a pull request number")
            })
    }

    /// The status every open pull request's head should show.
    pub fn status_for(&self, sha: &str) -> CommitStatus {
        match self {
            MergeLock::Free => CommitStatus::new(
                sha,
                StatusState::Success,
                CONTEXT,
                "unlocked: free to merge",
            ),
            // PR 0: the sweep's run of a trunk head whose webhook was lost.
            MergeLock::Held { pr: 0 } => CommitStatus::new(
                sha,
                StatusState::Pending,
                CONTEXT,
                "locked while the trunk deploys; merge after it finishes",
            ),
            MergeLock::Held { pr } => CommitStatus::new(
                sha,
                StatusState::Pending,
                CONTEXT,
                &format!("locked by PR #{pr} while it deploys; merge after it finishes"),
            ),
        }
    }
}

/// The status of a pull request that changes no infrastructure file: such a
/// pull request never deploys, so the lock does not apply to it, and a
/// success lets "Merge Lock" be a required check without blocking it forever.
pub fn not_applicable(sha: &str) -> CommitStatus {
    CommitStatus::new(
        sha,
        StatusState::Success,
        CONTEXT,
        "no infrastructure file changed: not locked",
    )
}

impl fmt::Display for MergeLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MergeLock::Free => f.write_str(FREE),
            MergeLock::Held { pr } => write!(f, "{pr}"),
        }
    }
}

/// How much of the repository the merge lock holds (module variable
/// `merge_lock_scope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    /// Every infrastructure pull request waits while a run holds the lock.
    #[default]
    Repo,
    /// Only pull requests whose unit closure meets the running and queued
    /// runs' units wait.
    Units,
}

impl Scope {
    /// The module variable's spelling: `repo` or `units`.
    pub fn parse(value: &str) -> Result<Self, String> {
        match value.trim() {
            "repo" => Ok(Scope::Repo),
            "units" => Ok(Scope::Units),
            _ => Err(format!(
                "merge lock scope {value:?} is neither \"repo\" nor \"units\""
            )),
        }
    }

    /// The `Merge Lock` status of a pull request whose head is `sha`.
    /// `busy`: the units of the running and queued runs; `units`: what the
    /// pull request's plan recorded (its affected units closed over
    /// dependencies and dependents), if anything. With `repo`, or while the
    /// pull request's units are unknown (not planned yet, or planned at
    /// another head), the lock holds as a whole: unknown is never free.
    pub fn status_for(
        self,
        lock: MergeLock,
        busy: &BTreeSet<String>,
        units: Option<&PullRequestUnits>,
        sha: &str,
    ) -> CommitStatus {
        let known = units.filter(|u| u.head_sha.eq_ignore_ascii_case(sha));
        match (self, lock, known) {
            (Scope::Units, MergeLock::Held { .. }, Some(units)) => {
                match units.units.intersection(busy).next() {
                    Some(unit) => CommitStatus::new(
                        sha,
                        StatusState::Pending,
                        CONTEXT,
                        &format!(
                            "locked: unit {} is in a running or queued run; merge after it deploys",
                            crate::escape::text::visible(unit)
                        ),
                    ),
                    None => CommitStatus::new(
                        sha,
                        StatusState::Success,
                        CONTEXT,
                        "no unit in common with the running and queued runs: free to merge (it deploys after them)",
                    ),
                }
            }
            _ => lock.status_for(sha),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn parses_the_parameter() {
        assert_eq!(MergeLock::parse("none"), Ok(MergeLock::Free));
        assert_eq!(MergeLock::parse(" 42\n"), Ok(MergeLock::Held { pr: 42 }));
        assert!(MergeLock::parse("maybe").unwrap_err().contains("\"maybe\""));
        assert_eq!(MergeLock::Held { pr: 7 }.to_string(), "7");
        let s = MergeLock::Held { pr: 7 }.status_for("abc");
        assert_eq!(s.state, StatusState::Pending);
        assert!(s.description.contains("PR #7"));
        let sweep = MergeLock::Held { pr: 0 }.status_for("abc");
        assert_eq!(sweep.state, StatusState::Pending);
        assert!(!sweep.description.contains("#0"), "{}", sweep.description);
    }

    #[test]
    fn parses_the_scope() {
        assert_eq!(Scope::parse("repo"), Ok(Scope::Repo));
        assert_eq!(Scope::parse(" units\n"), Ok(Scope::Units));
        assert_eq!(Scope::default(), Scope::Repo);
        let e = Scope::parse("unit").unwrap_err();
        assert!(e.contains("\"unit\""), "{e}");
    }

    fn set(units: &[&str]) -> BTreeSet<String> {
        units.iter().map(|s| s.to_string()).collect()
    }

    fn graph(edges: &[(&str, &[&str])]) -> BTreeMap<String, BTreeSet<String>> {
        edges
            .iter()
            .map(|(u, deps)| (u.to_string(), set(deps)))
            .collect()
    }

    #[test]
    fn the_closure_goes_up_and_down_but_not_sideways() {
        // vpc <- app <- dns ; vpc <- db (db shares vpc with app, no deploy).
        let g = graph(&[("app", &["vpc"]), ("dns", &["app"]), ("db", &["vpc"])]);
        assert_eq!(closure(["app"], &g), set(&["app", "dns", "vpc"]));
        assert_eq!(closure(["vpc"], &g), set(&["app", "db", "dns", "vpc"]));
        assert_eq!(closure(["dns"], &g), set(&["app", "dns", "vpc"]));
        assert_eq!(closure(["other"], &g), set(&["other"]));
    }

    #[test]
    fn units_scope_frees_a_disjoint_pull_request_and_names_an_overlapping_unit() {
        let held = MergeLock::Held { pr: 3 };
        let busy = set(&["prod/vpc"]);
        let disjoint = PullRequestUnits {
            head_sha: "abc".into(),
            units: set(&["dev/app"]),
        };
        let s = Scope::Units.status_for(held, &busy, Some(&disjoint), "abc");
        assert_eq!(s.state, StatusState::Success, "{}", s.description);
        let overlapping = PullRequestUnits {
            head_sha: "abc".into(),
            units: set(&["dev/app", "prod/vpc"]),
        };
        let s = Scope::Units.status_for(held, &busy, Some(&overlapping), "abc");
        assert_eq!(s.state, StatusState::Pending);
        assert!(s.description.contains("prod/vpc"), "{}", s.description);
        // Unknown units (not planned, or planned at another head) hold.
        for units in [None, Some(&disjoint)] {
            let s = Scope::Units.status_for(held, &busy, units, "def");
            assert_eq!(s, held.status_for("def"));
        }
        // The default scope is today's lock, whatever the units.
        let s = Scope::Repo.status_for(held, &busy, Some(&disjoint), "abc");
        assert_eq!(s, held.status_for("abc"));
        let free = Scope::Units.status_for(MergeLock::Free, &busy, None, "abc");
        assert_eq!(free, MergeLock::Free.status_for("abc"));
    }

    #[test]
    fn the_units_record_survives_the_comment_and_nothing_else_reads_as_one() {
        let record = PullRequestUnits {
            head_sha: "abc".into(),
            units: set(&["a --> b", "c`d"]),
        };
        let body = format!("### plan\n\n{}\nmore", record.to_comment_line());
        // The path's own "-->" cannot end the HTML comment early.
        assert_eq!(record.to_comment_line().matches("-->").count(), 1);
        assert_eq!(PullRequestUnits::from_comment(&body), Some(record));
        assert_eq!(PullRequestUnits::from_comment("### plan"), None);
        assert_eq!(
            PullRequestUnits::from_comment("<!-- live-ci:lock-units !!! -->"),
            None
        );
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        fn unit() -> impl Strategy<Value = String> {
            (0u8..12).prop_map(|i| format!("u{i}"))
        }

        proptest! {
            /// Disjoint closure ⇒ success; any overlap ⇒ pending naming a
            /// unit in both sets.
            #[test]
            fn success_exactly_when_disjoint(
                pr in proptest::collection::btree_set(unit(), 0..6),
                busy in proptest::collection::btree_set(unit(), 0..6),
                holder in 1u64..50,
            ) {
                let record = PullRequestUnits { head_sha: "h".into(), units: pr.clone() };
                let s = Scope::Units.status_for(MergeLock::Held { pr: holder }, &busy, Some(&record), "h");
                let common: Vec<&String> = pr.intersection(&busy).collect();
                if common.is_empty() {
                    prop_assert_eq!(s.state, StatusState::Success);
                } else {
                    prop_assert_eq!(s.state, StatusState::Pending);
                    prop_assert!(common.iter().any(|u| s.description.contains(&format!("unit {u} "))), "{}", s.description);
                }
            }

            /// The closure holds the seeds, is closed both ways, and adds
            /// only units linked to a seed by a dependency path.
            #[test]
            fn the_closure_is_closed(
                edges in proptest::collection::vec((unit(), unit()), 0..20),
                seeds in proptest::collection::btree_set(unit(), 0..4),
            ) {
                let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
                for (a, b) in &edges {
                    g.entry(a.clone()).or_default().insert(b.clone());
                }
                let c = closure(seeds.iter().map(String::as_str), &g);
                prop_assert!(seeds.is_subset(&c));
                // Upward from every ancestor-side member and downward from
                // every dependent-side member the closure is closed.
                let up = closure_dir(&seeds, &g, true);
                let down = closure_dir(&seeds, &g, false);
                let both: BTreeSet<String> = up.union(&down).cloned().collect();
                prop_assert_eq!(c, both);
            }
        }

        /// Reachability one way, by fixpoint (a second, naive reading).
        fn closure_dir(
            seeds: &BTreeSet<String>,
            g: &BTreeMap<String, BTreeSet<String>>,
            up: bool,
        ) -> BTreeSet<String> {
            let mut out = seeds.clone();
            loop {
                let before = out.len();
                for (a, deps) in g {
                    for b in deps {
                        let (from, to) = if up { (a, b) } else { (b, a) };
                        if out.contains(from) {
                            out.insert(to.clone());
                        }
                    }
                }
                if out.len() == before {
                    return out;
                }
            }
        }
    }
}
