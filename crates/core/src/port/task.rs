//! The task launcher port (ECS Fargate in AWS): starts a `live-ci-task`
//! subcommand with its environment.

use std::future::Future;

use crate::task::{StartedTask, TaskSpec};

/// Starts tasks. Implemented by the ECS adapter (`live-ci-aws`) and by recording
/// fakes in tests.
pub trait TaskLauncher: Send + Sync {
    /// The adapter's error, classified retryable or permanent.
    type Error: super::Classify;

    /// Starts one task as `spec` describes it: its ARN and log link once started.
    fn start(
        &self,
        spec: &TaskSpec,
    ) -> impl Future<Output = Result<StartedTask, Self::Error>> + Send;

    /// The page of the service that runs the tasks (the ECS cluster's console
    /// page): where a status links when a task could not be started at all,
    /// since there is no task of its own to link.
    fn service_url(&self) -> Option<String> {
        None
    }
}
