//! The one error type of the core crate.

use crate::path::RepoPath;

/// Everything that can go wrong in the domain. Messages are lowercase and quote
/// the offending value; file positions are `file:line:col`.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum CoreError {
    #[error("{file}:{line}:{col}: syntax error: {message}")]
    Syntax {
        file: RepoPath,
        line: usize,
        col: usize,
        message: String,
    },
    #[error("{file}: {message}")]
    Config { file: RepoPath, message: String },
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
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath { path: String, reason: String },
    #[error("cannot read {path:?}: {message}")]
    Io { path: String, message: String },
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
    #[error("{file}:{line}: {message}")]
    AccountConfig {
        file: String,
        line: usize,
        message: String,
    },
    #[error("{file}: account {account:?}, field {field}: {message}")]
    AccountInvalid {
        file: String,
        account: String,
        field: String,
        message: String,
    },
    #[error("{unit}: {message}")]
    Plan { unit: RepoPath, message: String },
    #[error("run: {field}: {message}")]
    InvalidRun { field: String, message: String },
    #[error("execution {execution:?}: {field}: {message}")]
    InvalidExecution {
        execution: String,
        field: String,
        message: String,
    },
    #[error("scheduler: {0}")]
    Scheduler(String),
    #[error("git: {0}")]
    Vcs(String),
    /// A problem of one unit's configuration, naming the unit.
    #[error("unit {unit}: {error}")]
    Unit {
        unit: RepoPath,
        error: Box<CoreError>,
    },
}

fn format_cycle(cycle: &[RepoPath]) -> String {
    cycle
        .iter()
        .map(|p| p.as_str())
        .collect::<Vec<_>>()
        .join(" -> ")
}

pub type Result<T, E = CoreError> = std::result::Result<T, E>;
