//! The task launcher port (ECS Fargate in AWS): starts a `live-ci-task`
//! subcommand with its environment.

use std::future::Future;

use crate::task::{StartedTask, TaskSpec};

/// Starts tasks. Implemented by the ECS adapter (`live-ci-aws`) and by recording
/// fakes in tests.
pub trait TaskLauncher: Send + Sync {
    type Error: super::Classify;

    fn start(
        &self,
        spec: &TaskSpec,
    ) -> impl Future<Output = Result<StartedTask, Self::Error>> + Send;
}
