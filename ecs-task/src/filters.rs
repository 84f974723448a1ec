//! The run's filters in the pipeline: `.live-ci-filters` as committed at the
//! commit being planned or deployed, and the module's `deploy_filters`. They
//! are loaded before anything is written (a query that does not parse fails
//! the run, naming the file or variable, line and column); the narrowing is
//! the engine's (`live_ci_terragrunt::filter::narrow`), the one the CLI's
//! `affected` and `plan` use, so both agree on a commit.

use std::path::Path;

use live_ci_git::GitCli;
use live_ci_terragrunt::Graph;
use live_ci_terragrunt::change::{Affected, Detection, VcsRanges, detect};
use live_ci_terragrunt::filter::{Excluded, Narrowed, RunFilters, narrow};

use crate::error::Result;

/// The filters committed at `commit` and the module's `deploy_filters`.
pub fn load(git: &GitCli, commit: &str, deploy_filters: &[String]) -> Result<RunFilters> {
    Ok(RunFilters::load(git, commit, deploy_filters)?)
}

/// `affected` narrowed by `filters`; git ranges in a query are answered by the
/// checkout's history, `reading=/path` against the checkout at `root`.
pub(crate) fn narrow_affected(
    git: &GitCli,
    root: &Path,
    affected: Affected,
    head: &Graph,
    base: Option<&Graph>,
    filters: &RunFilters,
) -> Result<Narrowed> {
    let ranges = VcsRanges { vcs: git };
    let root = root.to_str();
    Ok(narrow(affected, head, base, filters, Some(&ranges), root)?)
}

/// What a run of `commit` against `base` selects: change detection (the graph
/// scan), then the filters. pr-plan plans exactly this; create-deploy-stack's
/// graph scan deploys it (plus the pending units the filters keep).
#[derive(Debug)]
pub struct Selection {
    /// The changed units and why each is affected.
    pub detection: Detection,
    /// The affected units the filters leave out, each with its expression.
    pub excluded: Vec<Excluded>,
}

/// The [`Selection`] of `commit` against `base` in the checkout at `root`
/// (`allow_destroy`: removed units are affected, to be destroyed).
pub fn select(
    git: &GitCli,
    root: &Path,
    base: &str,
    commit: &str,
    allow_destroy: bool,
    filters: &RunFilters,
) -> Result<Selection> {
    let mut detection = detect(git, base, Some(commit), allow_destroy)?;
    let narrowed = narrow_affected(
        git,
        root,
        std::mem::take(&mut detection.affected),
        &detection.head,
        detection.base.as_ref(),
        filters,
    )?;
    detection.affected = narrowed.affected;
    Ok(Selection {
        detection,
        excluded: narrowed.excluded,
    })
}
