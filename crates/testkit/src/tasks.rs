//! A task launcher fake (the ECS RunTask port) that records every task spec.

use std::sync::Mutex;

use live_ci_core::task::{StartedTask, TaskSpec};

use live_ci_core::port::TaskLauncher;

use crate::params::{FakeError, lock};

/// The service page [`RecordingLauncher`] names (`TaskLauncher::service_url`).
pub const SERVICE_URL: &str = "https://console.example.com/ecs/live-ci";

/// Records every start; the n-th task is `…:task/live-ci/t<n>`, with a logs
/// URL `https://logs.example.com/t<n>` when made [`with_logs`](Self::with_logs).
#[derive(Debug, Default)]
pub struct RecordingLauncher {
    started: Mutex<Vec<TaskSpec>>,
    logs: bool,
    refusal: Option<String>,
}

impl RecordingLauncher {
    /// A launcher whose tasks have a logs URL (status target URLs link it).
    pub fn with_logs() -> Self {
        RecordingLauncher {
            logs: true,
            ..RecordingLauncher::default()
        }
    }

    /// A launcher whose every start fails with `message` (as `RunTask` does
    /// with no capacity or a missing task definition); its service page is
    /// [`SERVICE_URL`].
    pub fn refusing(message: &str) -> Self {
        RecordingLauncher {
            refusal: Some(message.to_string()),
            ..RecordingLauncher::default()
        }
    }

    /// The task ARN of the n-th start (from 1).
    pub fn task_arn(n: usize) -> String {
        format!("arn:aws:ecs:eu-west-1:123456789012:task/live-ci/t{n}")
    }

    /// Every task spec started, in order.
    pub fn started(&self) -> Vec<TaskSpec> {
        lock(&self.started).clone()
    }
}

impl TaskLauncher for RecordingLauncher {
    type Error = FakeError;

    async fn start(&self, spec: &TaskSpec) -> Result<StartedTask, FakeError> {
        if let Some(message) = &self.refusal {
            return Err(FakeError(message.clone()));
        }
        let mut started = lock(&self.started);
        started.push(spec.clone());
        let n = started.len();
        Ok(StartedTask {
            task_arn: Self::task_arn(n),
            logs_url: self.logs.then(|| format!("https://logs.example.com/t{n}")),
        })
    }

    fn service_url(&self) -> Option<String> {
        Some(SERVICE_URL.to_string())
    }
}
