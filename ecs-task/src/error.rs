//! The one error type of the task library.

use live_ci_core::deploy::RunId;
use live_ci_core::port::PortError;
use live_ci_core::settings::ConfigError;

/// What can stop a task. Messages are lowercase and quote the offending value.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// The environment the task was started with.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The core's rules refused the input (a bad accounts JSON, a cycle).
    #[error(transparent)]
    Core(#[from] live_ci_core::CoreError),
    /// Reading the units (a broken `terragrunt.hcl`, a filter).
    #[error(transparent)]
    Engine(#[from] live_ci_terragrunt::EngineError),
    /// A git command on the checkout.
    #[error(transparent)]
    Git(#[from] live_ci_git::GitError),
    /// A port failed; a retryable one is named so the state machine retries.
    #[error(transparent)]
    Port(#[from] PortError),
    /// create-deploy-stack's migration of the metadb at start.
    #[error("{}: migrating at start: {}", .0.port(), .0.adapter_error())]
    Migrate(#[source] PortError),
    /// terra-run's start found the schema not current (it does not migrate).
    #[error("{}: checking the schema at start: {}", .0.port(), .0.adapter_error())]
    Schema(#[source] PortError),
    /// A parameter's value that does not parse.
    #[error("parameter store: {0}")]
    Params(String),
    /// Answering or heartbeating the state machine's task token.
    #[error("task tokens: {0}")]
    Tokens(String),
    #[error(
        "invoking {function:?}: {source} (run #{run_id} is written; the next trigger_sf invocation starts it)"
    )]
    /// Handing the written run to trigger_sf.
    Invoke {
        /// The Lambda invoked.
        function: String,
        /// The run written, which the next invocation starts.
        run_id: RunId,
        /// Why the invocation failed.
        #[source]
        source: PortError,
    },
    /// A command that could not be started.
    #[error("cannot run {command:?}: {message}")]
    Spawn {
        /// The command line.
        command: String,
        /// Where, and the operating system's error.
        message: String,
    },
    /// A machine-readable answer (`run::capture`) past its cap: the command
    /// was stopped there rather than holding it all in memory.
    #[error(
        "{what} of {command:?} in {dir:?} is larger than the {cap}-byte cap (at least {seen} bytes were written; the command was stopped)"
    )]
    OutputTooLarge {
        /// What the output is ("plan JSON").
        what: &'static str,
        /// The command line.
        command: String,
        /// Where it ran.
        dir: String,
        /// The most kept, in bytes.
        cap: usize,
        /// The bytes written before the command was stopped (at least).
        seen: u64,
    },
    /// A command that ended with an error.
    #[error("{command:?} in {dir:?} exited with {code}: {tail}")]
    CommandFailed {
        /// The command line.
        command: String,
        /// Where it ran.
        dir: String,
        /// Its exit code, or the signal that ended it.
        code: String,
        /// The end of its output, where the error is.
        tail: String,
    },
    #[error(
        "the saved plan is stale: the state changed after it was planned and approved; re-run the deployment to plan anew (plan {artifact:?})"
    )]
    /// An apply whose saved plan no longer matches the state.
    StalePlan {
        /// The saved plan.
        artifact: String,
    },
    /// A saved plan (or its JSON) that cannot be stored, read or trusted.
    #[error("plan artifact {artifact:?}: {message}")]
    PlanArtifact {
        /// The saved plan's address.
        artifact: String,
        /// What went wrong.
        message: String,
    },
    /// The run's packed checkout cannot be used as recorded (its digest, an
    /// entry that escapes, another commit): the task runs nothing.
    #[error("packed checkout {key:?}: {message}")]
    CachedCheckout {
        /// The archive's key in the plan bucket.
        key: String,
        /// What is wrong with it.
        message: String,
    },
    /// The unit's account role could not be assumed.
    #[error("assuming role {role_arn:?}: {message}")]
    AssumeRole {
        /// The role.
        role_arn: String,
        /// STS's error.
        message: String,
    },
    /// An apply the metadb does not authorise (not approved at its
    /// threshold, rejected, aborted, superseded), or a state machine input
    /// asking for another command than the record's: nothing was run.
    #[error("refusing to {phase} execution {execution_id:?}: {reason}; nothing was run")]
    Refused {
        /// "plan" or "apply".
        phase: &'static str,
        /// The execution refused.
        execution_id: String,
        /// Why, as the metadb or the record says.
        reason: String,
    },
    /// SIGTERM (ECS's StopTask, a Spot reclaim) reached the task while its
    /// command ran; the command was interrupted and stopped by itself.
    #[error("{command:?} was interrupted: the task was stopped (SIGTERM) while it ran{}", code.map_or_else(String::new, |c| format!("; it exited with code {c}")))]
    Interrupted {
        /// The command line.
        command: String,
        /// Its exit code, when it exited by itself.
        code: Option<i32>,
    },
    /// terra-run's execution has no record.
    #[error("execution {0:?} is not in the metadb")]
    UnknownExecution(String),
    /// One unit's problem (its plan, its providers, its account).
    #[error("{unit}: {message}")]
    Unit {
        /// The unit's path.
        unit: String,
        /// What went wrong.
        message: String,
    },
    /// The trunk's policies denied a unit's plan, or could not judge it
    /// (`crate::policy`): the plan fails, nothing goes to the vote.
    #[error("{subject}: {message}")]
    Policy {
        /// The unit, or the policy file that does not load.
        subject: String,
        /// The denials, or why the policies could not judge.
        message: String,
    },
    /// A local operation (a thread, an archive) that failed, said in full.
    #[error("{0}")]
    Io(String),
    /// A local file or directory the task needs; `action` is "creating" or
    /// "writing".
    #[error("{action} {path:?}: {source}")]
    File {
        /// What was being done ("creating", "writing").
        action: &'static str,
        /// The file or directory.
        path: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

impl TaskError {
    /// A file operation (`action`, e.g. "reading") on `path` that failed.
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

/// The library's result: a [`TaskError`] unless said otherwise.
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
