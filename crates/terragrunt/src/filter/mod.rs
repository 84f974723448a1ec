//! The `--filter` query language: which units a run touches, by name, path,
//! attribute, dependency-graph position or git change.
//!
//! The syntax follows terragrunt's implementation of its filter-flag RFC
//! (terragrunt issue #4060), with depth-limited graph operators added:
//!
//! ```text
//! query   = term { "|" term }                      intersection, left to right
//! term    = "!" term | graph                       negation binds tighter than "|"
//! graph   = [ [ DEPTH ] "..." ] [ "^" ] target [ "..." [ DEPTH ] ]
//! target  = NAME                                   glob over the directory name
//!         | PATH                                   starts with "./" or "/"
//!         | "{" TEXT "}"                           any path, even with specials
//!         | ( "name" | "type" | "reading" ) "=" VALUE
//!         | "[" REF [ "..." REF ] "]"              git range
//! ```
//!
//! As in terragrunt, a git range selects the units whose files changed in it
//! (and lists the ones it removed), never their dependents; `reading=/x` is a
//! filesystem path; `type=stack` selects stack directories.
//!
//! The pieces: a lexer (words and punctuation with columns), a recursive-descent
//! parser to the [`Query`] tree, and an evaluator ([`Filters::select`],
//! [`Filters::select_components`]) over the [`Graph`](crate::Graph), the stacks
//! and the units git ranges removed.

mod ast;
mod eval;
mod lexer;
mod parser;
mod run;

pub use ast::{Direction, GraphExpr, Kind, Query, Reach, Target, Term};
pub use eval::{Components, Filter, Filters, GitRanges, RangeChanges, Selection};
pub use parser::parse_query;
pub use run::{DEPLOY_FILTERS, Excluded, FILTERS_FILE, FilterSet, Narrowed, RunFilters, narrow};

#[cfg(test)]
mod tests;
