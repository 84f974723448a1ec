//! Change detection: which units a set of changed files affects, why, and what to
//! do with each (apply, or destroy for units the change removed).

mod affected;
mod detect;

pub use affected::{Affected, AffectedUnit, Reason, Skipped, affected_units};
pub use detect::{
    Detection, VcsRanges, detect, detect_with, graph_at, range_changes, refuse_changed_stacks,
    refuse_changed_stacks_between,
};
