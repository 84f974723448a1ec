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
//! The pieces: a lexer (words and punctuation with columns), a recursive-descent
//! parser to the [`Query`] tree, and an evaluator ([`Filters::select`]) over the
//! [`Graph`](crate::Graph).

mod ast;
mod eval;
mod lexer;
mod parser;

pub use ast::{Direction, GraphExpr, Kind, Query, Reach, Target, Term};
pub use eval::{Components, Filter, Filters, GitRanges, RangeChanges, Selection};
pub use parser::parse_query;

#[cfg(test)]
mod tests;
