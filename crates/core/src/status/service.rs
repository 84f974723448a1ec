//! Commit statuses as one service: which checks are switched on, where each
//! status links, and the rule that a status is advisory — a git host that
//! refuses or fails a status is logged and reported as a warning, never an
//! error of the step that posts it (the metadb, the task token and the merge
//! lock parameter carry the truth; GitHub only shows it).
//!
//! One exception, posted through [`required`]: the receiver's `Merge Lock`
//! status on a pull request's head. There the status is the protection itself
//! (branch protection requires it), not a picture of a truth kept elsewhere,
//! so its failure fails the webhook answer and GitHub's redelivery posts it.

use std::convert::Infallible;

use super::{CommitStatus, CommitStatusConfig, PullRequest};
use crate::port::GitHost;

/// Which switch of the module's `commit_status_config` governs a status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// A pull request's plan (`live-ci: plan`, `live-ci: plan <unit>`).
    PrPlan,
    /// A merge commit's `live-ci: create-deploy-stack`.
    CreateDeployStack,
    /// One unit's plan in a deployment (`live-ci: plan <unit>` on the merge).
    Plan,
    /// One unit's apply, deploy or rollback on the merge commit.
    Apply,
    /// Always posted: a run's result (`live-ci: deploy`), the units a merge
    /// does not destroy (`live-ci: destroy`), the merge lock.
    Always,
}

impl CommitStatusConfig {
    /// Whether statuses of `check` are posted.
    pub fn allows(&self, check: Check) -> bool {
        match check {
            Check::PrPlan => self.pr_plan,
            Check::CreateDeployStack => self.create_deploy_stack,
            Check::Plan => self.plan,
            Check::Apply => self.apply,
            Check::Always => true,
        }
    }
}

/// The commit-status service: the git host, the switches, and the advisory
/// rule. Without a GitHub token the host is [`NoGitHost`].
#[derive(Debug, Clone)]
pub struct Statuses<G> {
    host: G,
    switches: CommitStatusConfig,
}

impl<G: GitHost> Statuses<G> {
    /// Statuses posted through `host` as `switches` allow.
    pub fn new(host: G, switches: CommitStatusConfig) -> Self {
        Statuses { host, switches }
    }

    /// The host, for what is not a status (the pull-request comment).
    pub fn host(&self) -> &G {
        &self.host
    }

    /// Whether statuses of `check` are posted.
    pub fn allows(&self, check: Check) -> bool {
        self.switches.allows(check)
    }

    /// Posts `status` when `check` is switched on. A failure is logged and
    /// returned as a warning naming the context; it never fails the caller.
    pub async fn post(&self, check: Check, status: &CommitStatus) -> Option<String> {
        if !self.allows(check) {
            return None;
        }
        advisory(&self.host, status).await
    }
}

/// Posts one status under the advisory rule: `None` when posted, else the
/// warning (already logged). For callers that switch statuses themselves.
pub async fn advisory<G: GitHost>(host: &G, status: &CommitStatus) -> Option<String> {
    match host.set_status(status).await {
        Ok(()) => None,
        Err(e) => {
            tracing::warn!(context = %status.context, error = %e, "posting a commit status");
            Some(format!("status {:?}: {e}", status.context))
        }
    }
}

/// Posts a status that is itself a protection, not advisory: the receiver's
/// `Merge Lock` status on a pull request's head, the required check that keeps
/// it unmergeable while a deploy runs. Its failure is the caller's error, so
/// the webhook answer fails and GitHub's redelivery posts the status; the
/// lock's refreshes by the tasks stay advisory (the parameter carries the
/// truth there, and the next pull-request event posts it again).
pub async fn required<G: GitHost>(host: &G, status: &CommitStatus) -> Result<(), G::Error> {
    host.set_status(status).await
}

/// The git host of a deployment without a GitHub token: posts nothing, sees no
/// pull request and no file, so no caller needs an `Option` of a host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoGitHost;

impl GitHost for NoGitHost {
    type Error = Infallible;

    async fn set_status(&self, _status: &CommitStatus) -> Result<(), Infallible> {
        Ok(())
    }

    async fn pull_request_files(&self, _number: u64) -> Result<Vec<String>, Infallible> {
        Ok(Vec::new())
    }

    async fn open_pull_requests(&self, _base: &str) -> Result<Vec<PullRequest>, Infallible> {
        Ok(Vec::new())
    }

    async fn upsert_comment(
        &self,
        _number: u64,
        _marker: &str,
        _body: &str,
    ) -> Result<(), Infallible> {
        Ok(())
    }

    async fn bot_comment(&self, _number: u64, _marker: &str) -> Result<Option<String>, Infallible> {
        Ok(None)
    }
}

/// A borrowed host is a host (handlers borrow the one `main` built).
impl<T: GitHost> GitHost for &T {
    type Error = T::Error;

    async fn set_status(&self, status: &CommitStatus) -> Result<(), T::Error> {
        (**self).set_status(status).await
    }

    async fn pull_request_files(&self, number: u64) -> Result<Vec<String>, T::Error> {
        (**self).pull_request_files(number).await
    }

    async fn open_pull_requests(&self, base: &str) -> Result<Vec<PullRequest>, T::Error> {
        (**self).open_pull_requests(base).await
    }

    async fn upsert_comment(&self, number: u64, marker: &str, body: &str) -> Result<(), T::Error> {
        (**self).upsert_comment(number, marker, body).await
    }

    async fn bot_comment(&self, number: u64, marker: &str) -> Result<Option<String>, T::Error> {
        (**self).bot_comment(number, marker).await
    }

    fn shows_status_text(&self) -> bool {
        (**self).shows_status_text()
    }
}

/// Where statuses link: built here only.
pub mod target {
    /// The Step Functions console page of an execution (the deploy statuses
    /// of its unit), from its ARN
    /// (`arn:aws:states:<region>:<account>:execution:<machine>:<name>`).
    pub fn execution(execution_arn: &str) -> Option<String> {
        let region = region_of(execution_arn, "states")?;
        Some(format!(
            "https://{region}.console.aws.amazon.com/states/home?region={region}#/v2/executions/details/{execution_arn}"
        ))
    }

    /// The ECS console page of a task (a task whose logs do not exist yet:
    /// it has not started), from its ARN
    /// (`arn:aws:ecs:<region>:<account>:task/<cluster>/<id>`).
    pub fn ecs_task(task_arn: &str) -> Option<String> {
        let region = region_of(task_arn, "ecs")?;
        let resource = task_arn.splitn(6, ':').nth(5)?;
        let mut parts = resource.split('/');
        let (Some("task"), Some(cluster), Some(id), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        Some(format!(
            "https://{region}.console.aws.amazon.com/ecs/v2/clusters/{cluster}/tasks/{id}?region={region}"
        ))
    }

    /// The ECS console page of a cluster's tasks (where a task that could not
    /// be started is looked for), from its ARN
    /// (`arn:aws:ecs:<region>:<account>:cluster/<name>`).
    pub fn ecs_cluster(cluster_arn: &str) -> Option<String> {
        let region = region_of(cluster_arn, "ecs")?;
        let name = cluster_arn
            .splitn(6, ':')
            .nth(5)?
            .strip_prefix("cluster/")?;
        if name.is_empty() || name.contains('/') {
            return None;
        }
        Some(format!(
            "https://{region}.console.aws.amazon.com/ecs/v2/clusters/{name}/tasks?region={region}"
        ))
    }

    fn region_of<'a>(arn: &'a str, service: &str) -> Option<&'a str> {
        let mut parts = arn.splitn(6, ':');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some("arn"), Some(_partition), Some(s), Some(region))
                if s == service && !region.is_empty() =>
            {
                Some(region)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::status::{StatusState, context};
    use std::sync::Mutex;

    /// A host whose every status call fails, and that counts the calls.
    #[derive(Debug, Default)]
    struct Refusing {
        calls: Mutex<u32>,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("github is down")]
    struct Down;

    impl crate::port::Classify for Down {
        fn kind(&self) -> crate::port::ErrorKind {
            crate::port::ErrorKind::Retryable
        }
    }

    impl GitHost for Refusing {
        type Error = Down;
        async fn set_status(&self, _: &CommitStatus) -> Result<(), Down> {
            *self.calls.lock().unwrap() += 1;
            Err(Down)
        }
        async fn pull_request_files(&self, _: u64) -> Result<Vec<String>, Down> {
            Err(Down)
        }
        async fn open_pull_requests(&self, _: &str) -> Result<Vec<PullRequest>, Down> {
            Err(Down)
        }
        async fn upsert_comment(&self, _: u64, _: &str, _: &str) -> Result<(), Down> {
            Err(Down)
        }
        async fn bot_comment(&self, _: u64, _: &str) -> Result<Option<String>, Down> {
            Err(Down)
        }
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn a_failed_status_is_a_warning_and_a_switched_off_one_is_not_sent() {
        let host = Refusing::default();
        let statuses = Statuses::new(
            &host,
            CommitStatusConfig {
                plan: false,
                ..Default::default()
            },
        );
        let status = CommitStatus::new("abc", StatusState::Success, context::DEPLOY, "done");
        let warning = block_on(statuses.post(Check::Apply, &status));
        assert_eq!(
            warning.as_deref(),
            Some("status \"live-ci: deploy\": github is down")
        );
        assert_eq!(block_on(statuses.post(Check::Plan, &status)), None);
        assert_eq!(*host.calls.lock().unwrap(), 1, "plan statuses are off");
        let none = Statuses::new(NoGitHost, CommitStatusConfig::default());
        assert_eq!(block_on(none.post(Check::Always, &status)), None);
    }

    #[test]
    fn targets_link_the_console_of_the_execution_or_the_task() {
        assert_eq!(
            target::execution("arn:aws:states:eu-west-1:111111111111:execution:live-ci:run-7-x")
                .unwrap(),
            "https://eu-west-1.console.aws.amazon.com/states/home?region=eu-west-1#/v2/executions/details/arn:aws:states:eu-west-1:111111111111:execution:live-ci:run-7-x"
        );
        assert_eq!(
            target::ecs_task("arn:aws:ecs:us-east-2:111111111111:task/live-ci/abc123").unwrap(),
            "https://us-east-2.console.aws.amazon.com/ecs/v2/clusters/live-ci/tasks/abc123?region=us-east-2"
        );
        for bad in [
            "",
            "run-7-x",
            "arn:aws:ecs:us-east-2:1:task/live-ci/abc123",
            "arn:aws:states::1:execution:m:n",
        ] {
            assert_eq!(target::execution(bad), None, "{bad}");
        }
        assert_eq!(
            target::ecs_task("arn:aws:ecs:us-east-2:1:task/abc123"),
            None,
            "an old-format task ARN names no cluster"
        );
        assert_eq!(
            target::ecs_cluster("arn:aws:ecs:us-east-2:111111111111:cluster/live-ci").unwrap(),
            "https://us-east-2.console.aws.amazon.com/ecs/v2/clusters/live-ci/tasks?region=us-east-2"
        );
        assert_eq!(
            target::ecs_cluster("arn:aws:ecs:us-east-2:1:task/live-ci/x"),
            None
        );
        assert_eq!(target::ecs_cluster("live-ci"), None);
    }
}
