//! The one error type of the engine crate: what discovery, filters and plans
//! report about a live repo; a file tree's or version control's own error
//! arrives as [`EngineError::Core`].

use live_ci_core::error::CoreError;
use live_ci_core::path::RepoPath;

/// Everything the engine reports. Messages are lowercase and quote the
/// offending value; file positions are `file:line:col`.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum EngineError {
    #[error("{file}:{line}:{col}: syntax error: {message}")]
    Syntax {
        file: RepoPath,
        line: usize,
        col: usize,
        message: String,
    },
    #[error("{file}: {message}")]
    Config { file: RepoPath, message: String },
    /// An expression whose value (or the file's values together) exceeds the
    /// evaluation bounds (`discovery::bounds`).
    #[error("{file}:{line}: {message}")]
    TooLarge {
        file: RepoPath,
        line: usize,
        message: String,
    },
    /// A file included or read by another does not exist.
    #[error("{file}: {function}: no such file {missing:?}")]
    MissingFile {
        file: RepoPath,
        function: String,
        missing: RepoPath,
    },
    #[error(
        "{unit}: dependency {dependency:?} is not a unit (no terragrunt.hcl in {dependency:?})"
    )]
    NotAUnit { unit: RepoPath, dependency: String },
    #[error("dependency cycle: {}", format_cycle(.0))]
    Cycle(Vec<RepoPath>),
    #[error("filter {query:?}, column {column}: {message}")]
    FilterSyntax {
        query: String,
        column: usize,
        message: String,
    },
    /// A malformed line of a filters file; `column` counts characters in the line.
    #[error("{file}:{line}:{column}: filter {query:?}: {message}")]
    FilterFileSyntax {
        file: String,
        line: usize,
        column: usize,
        query: String,
        message: String,
    },
    #[error("{0}")]
    Filter(String),
    /// A filter left out a unit that a unit it keeps needs first in the run
    /// (an apply's dependency, a destroy's dependent).
    #[error(
        "unit \"{unit}\" needs unit \"{needed}\" to {} first in this run, and the filters leave it out ({by}): select both units or neither",
        needed_verb(*.action)
    )]
    FilterExcludesNeeded {
        unit: RepoPath,
        needed: RepoPath,
        action: live_ci_core::deploy::Action,
        by: String,
    },
    #[error("{unit}: {message}")]
    Plan { unit: RepoPath, message: String },
    /// A construct of a `terragrunt.stack.hcl` that live-ci cannot generate
    /// as `terragrunt stack generate` would; `block` is e.g. `unit "vpc"`.
    #[error("{file}: {block}: {message}")]
    Stack {
        file: RepoPath,
        block: String,
        message: String,
    },
    /// A change touches a stack live-ci cannot generate: the run stops
    /// rather than deploy without the units it would generate.
    #[error(
        "stack {stack:?} is changed by {changed:?} and live-ci cannot generate it, so the run stops before anything is written: {error}"
    )]
    StackChanged {
        stack: RepoPath,
        changed: RepoPath,
        error: Box<EngineError>,
    },
    /// A problem of one unit's configuration, naming the unit.
    #[error("unit {unit}: {error}")]
    Unit {
        unit: RepoPath,
        error: Box<EngineError>,
    },
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

pub type Result<T, E = EngineError> = std::result::Result<T, E>;

/// What a unit a filter left out would have done first: applied (a
/// dependency) or been destroyed (a dependent).
fn needed_verb(action: live_ci_core::deploy::Action) -> &'static str {
    match action {
        live_ci_core::deploy::Action::Apply => "apply",
        live_ci_core::deploy::Action::Destroy => "be destroyed",
    }
}
