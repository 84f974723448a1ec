//! The one error type of the task library.

use live_ci_core::deploy::RunId;
use live_ci_core::port::PortError;
use live_ci_core::settings::ConfigError;

/// What can stop a task. Messages are lowercase and quote the offending value.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Core(#[from] live_ci_core::CoreError),
    #[error(transparent)]
    Engine(#[from] live_ci_terragrunt::EngineError),
    #[error(transparent)]
    Git(#[from] live_ci_git::GitError),
    /// A port failed; a retryable one is named so the state machine retries.
    #[error(transparent)]
    Port(#[from] PortError),
    #[error("{}: migrating at start: {}", .0.port(), .0.adapter_error())]
    Migrate(#[source] PortError),
    /// terra-run's start found the schema not current (it does not migrate).
    #[error("{}: checking the schema at start: {}", .0.port(), .0.adapter_error())]
    Schema(#[source] PortError),
    /// A parameter's value that does not parse.
    #[error("parameter store: {0}")]
    Params(String),
    #[error("task tokens: {0}")]
    Tokens(String),
    #[error(
        "invoking {function:?}: {source} (run #{run_id} is written; the next trigger_sf invocation starts it)"
    )]
    Invoke {
        function: String,
        run_id: RunId,
        #[source]
        source: PortError,
    },
    #[error("cannot run {command:?}: {message}")]
    Spawn { command: String, message: String },
    /// A machine-readable answer (`run::capture`) past its cap: the command
    /// was stopped there rather than holding it all in memory.
    #[error(
        "{what} of {command:?} in {dir:?} is larger than the {cap}-byte cap (at least {seen} bytes were written; the command was stopped)"
    )]
    OutputTooLarge {
        what: &'static str,
        command: String,
        dir: String,
        cap: usize,
        seen: u64,
    },
    #[error("{command:?} in {dir:?} exited with {code}: {tail}")]
    CommandFailed {
        command: String,
        dir: String,
        code: String,
        tail: String,
    },
    #[error(
        "the saved plan is stale: the state changed after it was planned and approved; re-run the deployment to plan anew (plan {artifact:?})"
    )]
    StalePlan { artifact: String },
    #[error("plan artifact {artifact:?}: {message}")]
    PlanArtifact { artifact: String, message: String },
    /// The run's packed checkout cannot be used as recorded (its digest, an
    /// entry that escapes, another commit): the task runs nothing.
    #[error("packed checkout {key:?}: {message}")]
    CachedCheckout { key: String, message: String },
    #[error("assuming role {role_arn:?}: {message}")]
    AssumeRole { role_arn: String, message: String },
    /// An apply the metadb does not authorise (not approved at its
    /// threshold, rejected, aborted, superseded), or a state machine input
    /// asking for another command than the record's: nothing was run.
    #[error("refusing to {phase} execution {execution_id:?}: {reason}; nothing was run")]
    Refused {
        phase: &'static str,
        execution_id: String,
        reason: String,
    },
    /// SIGTERM (ECS's StopTask, a Spot reclaim) reached the task while its
    /// command ran; the command was interrupted and stopped by itself.
    #[error("{command:?} was interrupted: the task was stopped (SIGTERM) while it ran{}", code.map_or_else(String::new, |c| format!("; it exited with code {c}")))]
    Interrupted { command: String, code: Option<i32> },
    #[error("execution {0:?} is not in the metadb")]
    UnknownExecution(String),
    #[error("{unit}: {message}")]
    Unit { unit: String, message: String },
    /// The trunk's policies denied a unit's plan, or could not judge it
    /// (`crate::policy`): the plan fails, nothing goes to the vote.
    #[error("{subject}: {message}")]
    Policy { subject: String, message: String },
    #[error("{0}")]
    Io(String),
    /// A local file or directory the task needs; `action` is "creating" or
    /// "writing".
    #[error("{action} {path:?}: {source}")]
    File {
        action: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl TaskError {
    pub fn file(action: &'static str, path: &std::path::Path, source: std::io::Error) -> Self {
        TaskError::File {
            action,
            path: path.display().to_string(),
            source,
        }
    }

    /// The error name sent with SendTaskFailure (matched by the state
    /// machine's Catch, shown as `$.error.Error`).
    pub fn name(&self) -> &'static str {
        match self {
            TaskError::Port(e)
            | TaskError::Migrate(e)
            | TaskError::Schema(e)
            | TaskError::Invoke { source: e, .. } => e.kind().name(),
            TaskError::StalePlan { .. } => "StalePlan",
            TaskError::CommandFailed { .. }
            | TaskError::Spawn { .. }
            | TaskError::OutputTooLarge { .. } => "CommandFailed",
            TaskError::PlanArtifact { .. } => "PlanArtifact",
            TaskError::CachedCheckout { .. } => "CheckoutArchive",
            TaskError::Config(_) => "Config",
            TaskError::Interrupted { .. } => "Interrupted",
            TaskError::Refused { .. } => "Refused",
            TaskError::Policy { .. } => "PolicyDenied",
            _ => "TaskFailed",
        }
    }
}

pub type Result<T, E = TaskError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use live_ci_metadb::MetadbError;

    use super::*;

    fn metadb(code: &str) -> TaskError {
        TaskError::Port(PortError::new(
            "metadb",
            MetadbError::Postgres {
                message: "the server said no".into(),
                code: Some(code.into()),
                source: None,
            },
        ))
    }

    /// The SQLSTATE a retry helps with (a serialization failure) reaches
    /// SendTaskFailure as the name the state machine retries, its cause
    /// still the adapter's error; a refusal (insufficient privilege) as the
    /// permanent name, which only the Catch matches.
    #[test]
    fn a_port_failure_is_sent_under_its_kinds_name() {
        use live_ci_core::port::{PERMANENT_ERROR, RETRYABLE_ERROR};
        let retryable = metadb("40001");
        assert_eq!(retryable.name(), RETRYABLE_ERROR);
        let source = std::error::Error::source(&retryable).expect("a source");
        assert!(
            matches!(
                source.downcast_ref::<MetadbError>(),
                Some(MetadbError::Postgres { code: Some(c), .. }) if c == "40001"
            ),
            "{source:?}"
        );
        assert_eq!(
            retryable.to_string(),
            "metadb: postgres: the server said no"
        );
        assert_eq!(metadb("42501").name(), PERMANENT_ERROR);
    }
}
