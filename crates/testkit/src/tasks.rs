//! A task launcher fake (the ECS RunTask port) that records every task spec.

use std::sync::Mutex;

use live_ci_core::task::{StartedTask, TaskSpec};

use live_ci_core::port::TaskLauncher;

use crate::params::{FakeError, lock};

/// Records every start; the n-th task is `…:task/live-ci/t<n>`, with a logs
/// URL `https://logs.example.com/t<n>` when made [`with_logs`](Self::with_logs).
#[derive(Debug, Default)]
pub struct RecordingLauncher {
    started: Mutex<Vec<TaskSpec>>,
    logs: bool,
}

impl RecordingLauncher {
    /// A launcher whose tasks have a logs URL (status target URLs link it).
    pub fn with_logs() -> Self {
        RecordingLauncher {
            logs: true,
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
        let mut started = lock(&self.started);
        started.push(spec.clone());
        let n = started.len();
        Ok(StartedTask {
            task_arn: Self::task_arn(n),
            logs_url: self.logs.then(|| format!("https://logs.example.com/t{n}")),
        })
    }
}
