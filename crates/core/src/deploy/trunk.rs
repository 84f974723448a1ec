//! Where a merge commit stands on the trunk relative to the runs already
//! recorded: covered by one of them (superseded, never applied), after the
//! newest started run it descends from (the run deploys that range), or the
//! first run. Ancestry is asked of git through a callback, so the rule stays
//! pure and the order is the trunk's history, not the order tasks finished in.

use serde::{Deserialize, Serialize};

use super::{ExecutionStatus, RunId, RunRecord, RunStatus};
use crate::path::RepoPath;

/// Where a merge commit goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrunkPlace {
    /// A run for this very commit exists (a redelivered merge): redo its range.
    Existing {
        /// The run already recorded for the commit.
        run_id: RunId,
        /// The commit its range starts from.
        base: String,
    },
    /// The commit is an ancestor of (or equal to the range of) a run that is
    /// queued or already started: that run deploys its changes.
    Superseded {
        /// The run that covers the commit.
        by: RunId,
        /// That run's commit.
        commit: String,
    },
    /// Deploy from this started run's commit to the merge commit.
    After {
        /// The newest started run the merge commit descends from.
        run_id: RunId,
        /// That run's commit: the start of the new run's range.
        commit: String,
    },
    /// No recorded run is an ancestor: deploy the merge's own change.
    First,
}

/// A unit whose latest deployment in a finished run did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingUnit {
    /// The unit's directory in the repository.
    pub cfg_path: RepoPath,
    /// The status of its latest execution in a finished run.
    pub last_status: ExecutionStatus,
    /// The last trunk commit applied successfully to it, if any.
    pub applied_commit: Option<String>,
}

/// Places `commit` among `runs` (newest on the trunk first, superseded runs
/// left out). `is_ancestor(a, b)`: is `a` an ancestor of `b` (strictly)?
/// A queued run is never a base: it has not deployed anything yet, and the
/// new run's range covers it (the older queued run is coalesced at start).
pub fn place_on_trunk<E>(
    commit: &str,
    runs: &[RunRecord],
    mut is_ancestor: impl FnMut(&str, &str) -> Result<bool, E>,
) -> Result<TrunkPlace, E> {
    if let Some(r) = runs.iter().find(|r| r.commit_id == commit) {
        return Ok(TrunkPlace::Existing {
            run_id: r.run_id,
            base: r.base_sha.clone(),
        });
    }
    for r in runs {
        if is_ancestor(commit, &r.commit_id)? {
            return Ok(TrunkPlace::Superseded {
                by: r.run_id,
                commit: r.commit_id.clone(),
            });
        }
    }
    for r in runs.iter().filter(|r| r.status != RunStatus::Queued) {
        if is_ancestor(&r.commit_id, commit)? {
            return Ok(TrunkPlace::After {
                run_id: r.run_id,
                commit: r.commit_id.clone(),
            });
        }
    }
    Ok(TrunkPlace::First)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: RunId, commit: &str, status: RunStatus) -> RunRecord {
        RunRecord {
            run_id: id,
            pr_id: 1,
            commit_id: commit.into(),
            base_ref: "main".into(),
            head_ref: "f".into(),
            base_sha: format!("base-of-{commit}"),
            head_sha: commit.into(),
            status,
            max_parallel: 1,
            fail_fast: false,
            trunk_seq: 0,
            superseded_by: None,
            checkout: None,
            created_at: 0,
            started_at: None,
            finished_at: None,
        }
    }

    /// A linear trunk c1 → c2 → c3 → c4: ancestry by position.
    fn linear(a: &str, b: &str) -> Result<bool, ()> {
        Ok(a[1..] < b[1..])
    }

    #[test]
    fn a_merge_older_than_a_recorded_run_is_superseded() {
        let runs = [
            run(3, "c3", RunStatus::Queued),
            run(1, "c1", RunStatus::Succeeded),
        ];
        assert_eq!(
            place_on_trunk("c2", &runs, linear),
            Ok(TrunkPlace::Superseded {
                by: 3,
                commit: "c3".into()
            })
        );
    }

    #[test]
    fn a_newer_merge_deploys_from_the_newest_started_run_not_a_queued_one() {
        let runs = [
            run(3, "c3", RunStatus::Queued),
            run(2, "c2", RunStatus::Running),
            run(1, "c1", RunStatus::Succeeded),
        ];
        assert_eq!(
            place_on_trunk("c4", &runs, linear),
            Ok(TrunkPlace::After {
                run_id: 2,
                commit: "c2".into()
            })
        );
    }

    #[test]
    fn a_redelivered_merge_keeps_its_range_and_the_first_has_none() {
        let runs = [run(2, "c2", RunStatus::Running)];
        assert_eq!(
            place_on_trunk("c2", &runs, linear),
            Ok(TrunkPlace::Existing {
                run_id: 2,
                base: "base-of-c2".into()
            })
        );
        assert_eq!(place_on_trunk("c1", &[], linear), Ok(TrunkPlace::First));
        // A run on another line of history is neither base nor cover.
        let unrelated = |_: &str, _: &str| Ok::<_, ()>(false);
        assert_eq!(
            place_on_trunk("c9", &runs, unrelated),
            Ok(TrunkPlace::First)
        );
    }
}
