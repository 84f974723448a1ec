//! The one error type of the engine crate: what discovery, filters and plans
//! report about a live repo; a file tree's or version control's own error
//! arrives as [`EngineError::Core`].

use live_ci_core::error::CoreError;
use live_ci_core::path::RepoPath;

/// Everything the engine reports. Messages are lowercase and quote the
/// offending value; file positions are `file:line:col`.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum EngineError {
    /// A file is not valid HCL.
    #[error("{file}:{line}:{col}: syntax error: {message}")]
    Syntax {
        /// The file.
        file: RepoPath,
        /// The line, from 1.
        line: usize,
        /// The column, from 1.
        col: usize,
        /// The parser's message.
        message: String,
    },
    /// A file's configuration cannot be evaluated (a function's bad argument,
    /// an unknown reference).
    #[error("{file}: {message}")]
    Config {
        /// The file.
        file: RepoPath,
        /// What is wrong, quoting the value.
        message: String,
    },
    /// An expression whose value (or the file's values together) exceeds the
    /// evaluation bounds (`discovery::bounds`).
    #[error("{file}:{line}: {message}")]
    TooLarge {
        /// The file.
        file: RepoPath,
        /// The expression's line, from 1.
        line: usize,
        /// Which bound was exceeded.
        message: String,
    },
    /// A file included or read by another does not exist.
    #[error("{file}: {function}: no such file {missing:?}")]
    MissingFile {
        /// The file that includes or reads it.
        file: RepoPath,
        /// The Terragrunt function that names it (`read_terragrunt_config`, `file`...).
        function: String,
        /// The missing file, repository-relative.
        missing: RepoPath,
    },
    #[error(
        "{unit}: dependency {dependency:?} is not a unit (no terragrunt.hcl in {dependency:?})"
    )]
    /// A unit's dependency names a directory that is not a unit.
    NotAUnit {
        /// The unit declaring the dependency.
        unit: RepoPath,
        /// The dependency's path, as resolved.
        dependency: String,
    },
    /// The units' dependencies form a cycle: the units on it, in order.
    #[error("dependency cycle: {}", format_cycle(.0))]
    Cycle(Vec<RepoPath>),
    /// A filter query does not parse.
    #[error("filter {query:?}, column {column}: {message}")]
    FilterSyntax {
        /// The query, as given.
        query: String,
        /// The character column of the problem, from 1.
        column: usize,
        /// What the parser expected.
        message: String,
    },
    /// A malformed line of a filters file; `column` counts characters in the line.
    #[error("{file}:{line}:{column}: filter {query:?}: {message}")]
    FilterFileSyntax {
        /// The filters file.
        file: String,
        /// The line, from 1.
        line: usize,
        /// The character column, from 1.
        column: usize,
        /// The line's query.
        query: String,
        /// What the parser expected.
        message: String,
    },
    /// A filter cannot be evaluated (e.g. a git range without a repository).
    #[error("{0}")]
    Filter(String),
    /// A filter left out a unit that a unit it keeps needs first in the run
    /// (an apply's dependency, a destroy's dependent).
    #[error(
        "unit \"{unit}\" needs unit \"{needed}\" to {} first in this run, and the filters leave it out ({by}): select both units or neither",
        needed_verb(*.action)
    )]
    FilterExcludesNeeded {
        /// The unit the filters keep.
        unit: RepoPath,
        /// The unit it needs that the filters leave out.
        needed: RepoPath,
        /// What the needed unit would have done first.
        action: live_ci_core::deploy::Action,
        /// Which filter left it out.
        by: String,
    },
    /// A unit cannot be placed in the deployment (e.g. it matches no account).
    #[error("{unit}: {message}")]
    Plan {
        /// The unit.
        unit: RepoPath,
        /// Why.
        message: String,
    },
    /// A construct of a `terragrunt.stack.hcl` that live-ci cannot generate
    /// as `terragrunt stack generate` would; `block` is e.g. `unit "vpc"`.
    #[error("{file}: {block}: {message}")]
    Stack {
        /// The stack file.
        file: RepoPath,
        /// The block at fault.
        block: String,
        /// What live-ci cannot generate.
        message: String,
    },
    /// A change touches a stack live-ci cannot generate: the run stops
    /// rather than deploy without the units it would generate.
    #[error(
        "stack {stack:?} is changed by {changed:?} and live-ci cannot generate it, so the run stops before anything is written: {error}"
    )]
    StackChanged {
        /// The stack's `terragrunt.stack.hcl`.
        stack: RepoPath,
        /// The changed file that touches it.
        changed: RepoPath,
        /// Why the stack cannot be generated.
        error: Box<EngineError>,
    },
    /// A problem of one unit's configuration, naming the unit.
    #[error("unit {unit}: {error}")]
    Unit {
        /// The unit's directory.
        unit: RepoPath,
        /// The problem.
        error: Box<EngineError>,
    },
    /// A file tree's or version control's own error.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// The runner-pool scheduler refused its input (a cycle, an unknown task).
    #[error("scheduler: {0}")]
    Scheduler(String),
}

fn format_cycle(cycle: &[RepoPath]) -> String {
    cycle
        .iter()
        .map(|p| p.as_str())
        .collect::<Vec<_>>()
        .join(" -> ")
}

/// The result of every engine operation.
pub type Result<T, E = EngineError> = std::result::Result<T, E>;

/// What a unit a filter left out would have done first: applied (a
/// dependency) or been destroyed (a dependent).
fn needed_verb(action: live_ci_core::deploy::Action) -> &'static str {
    match action {
        live_ci_core::deploy::Action::Apply => "apply",
        live_ci_core::deploy::Action::Destroy => "be destroyed",
    }
}
