//! Change detection: which units a set of changed files affects, why, and what to
//! do with each (apply, or destroy for units the change removed).

mod affected;

pub use affected::{Action, Affected, AffectedUnit, Reason, Skipped, affected_units};
