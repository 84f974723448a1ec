//! The plan task that waits for its approved apply: real SQS queues in
//! LocalStack (the test sends the `ApplyJob` as the state machine's
//! `sqs:sendMessage.waitForTaskToken` does), real terraform, git and
//! PostgreSQL, and a recording task-token port. A test whose task offers to
//! wait runs alone in its own process (`support::alone_in_process`): the
//! task's guard kills every child of its process once the plan is done.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use live_ci_aws::{S3ArtifactStore, SqsApplyQueue};
use live_ci_core::deploy::{Outcome, Vote};
use live_ci_core::port::{ApprovalStore, ExecutionStore};
use live_ci_core::status::{NoGitHost, Statuses};
use live_ci_task::apply_handoff::{Handoff, terra_run_handing_off};
use live_ci_task::checkout::Repo;
use live_ci_task::config::ApplyWait;
use live_ci_task::leftovers::Subreaper;
use live_ci_task::terra_run::TerraRunPorts;
use live_ci_task::{TaskError, TerraRunConfig};
use live_ci_workflow::{ApplyJob, ApplyResult, HANDOFF_REFUSED, PlanResult};

use crate::support::alone_in_process;
use crate::support::fakes::{RecordingTokens, Sent};
use crate::support::{new_bucket, s3_client};
use crate::terra_run::{Setup, env, setup};

const ID: &str = "run-7-x-dev-app-001";

fn sqs() -> aws_sdk_sqs::Client {
    aws_sdk_sqs::Client::new(&live_ci_testkit::aws::sdk_config())
}

fn wait(seconds: u64) -> ApplyWait {
    ApplyWait {
        queue_prefix: live_ci_testkit::unique("live-ci-apply-"),
        seconds,
        poll_seconds: 1,
    }
}

/// The plan's answer, once the task has sent it (it then waits on).
async fn plan_answer(tokens: &RecordingTokens) -> PlanResult {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(Sent::Success { token, output }) = tokens.sent.lock().unwrap().first() {
            assert_eq!(token, "token-1");
            return serde_json::from_str(output).unwrap();
        }
        assert!(Instant::now() < deadline, "no plan answer");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn queue_exists(url: &str) -> bool {
    sqs()
        .get_queue_attributes()
        .queue_url(url)
        .send()
        .await
        .is_ok()
}

fn job(execution_id: &str, plan: &PlanResult) -> String {
    job_with_token(execution_id, "apply-token", plan)
}

fn job_with_token(execution_id: &str, token: &str, plan: &PlanResult) -> String {
    serde_json::to_string(&ApplyJob {
        task_token: token.into(),
        execution_id: execution_id.into(),
        sfn_execution_arn: format!("arn:aws:states:us-east-1:000000000000:execution:m:{ID}"),
        plan_artifact: plan.plan_artifact.clone(),
    })
    .unwrap()
}

struct Task {
    s: Setup,
    store: S3ArtifactStore,
    tokens: RecordingTokens,
    queue: SqsApplyQueue,
    sts: live_ci_aws::StsRoleAssumer,
}

async fn task() -> Task {
    let client = s3_client();
    let bucket = new_bucket(&client, "plans").await;
    Task {
        s: setup().await,
        store: S3ArtifactStore::new(client, &bucket),
        tokens: RecordingTokens::default(),
        queue: SqsApplyQueue::new(sqs()),
        sts: crate::support::sts(),
    }
}

impl Task {
    fn config(&self) -> TerraRunConfig {
        env(ID, "plan", None, &self.s.clone_url)
    }

    /// terra-run's plan as `main` runs it: with the hand-off when `wait` is given.
    async fn run(
        &self,
        config: &TerraRunConfig,
        wait: Option<&ApplyWait>,
    ) -> Result<(), TaskError> {
        let ports = TerraRunPorts {
            metadb: &self.s.metadb,
            artifacts: &self.store,
            tokens: &self.tokens,
            roles: &self.sts,
            statuses: Statuses::new(&NoGitHost, Default::default()),
        };
        let repo = Repo {
            clone_url: self.s.clone_url.clone(),
            token: None,
        };
        // Before any command runs, as `main` does.
        let leftovers = wait.map(|_| Subreaper::adopt());
        let handoff = wait.zip(leftovers.as_ref()).map(|(wait, leftovers)| {
            assert_eq!(leftovers.refused(), None);
            Handoff {
                queue: &self.queue,
                wait,
                leftovers,
            }
        });
        terra_run_handing_off(config, &repo, None, &ports, None, handoff).await
    }

    /// The voters approve the execution, as approval-response records it.
    async fn approve(&self) {
        for voter in ["a@example.com", "b@example.com"] {
            self.s
                .metadb
                .cast_vote(ID, voter, Vote::Approve)
                .await
                .unwrap();
        }
        assert_eq!(self.s.metadb.decide(ID).await.unwrap(), Some(Vote::Approve));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_task_applies_the_approved_plan_sent_to_its_queue() {
    if !alone_in_process("apply_handoff::the_plan_task_applies_the_approved_plan_sent_to_its_queue")
    {
        return;
    }
    let t = task().await;
    let config = t.config();
    let wait = wait(120);
    let started = Instant::now();
    let (done, plan) = tokio::join!(t.run(&config, Some(&wait)), async {
        let plan = plan_answer(&t.tokens).await;
        let url = plan
            .apply_queue_url
            .clone()
            .expect("the plan names its queue");
        assert!(
            !t.s.tf.state_file("dev/app").exists(),
            "nothing is applied before the job"
        );
        t.approve().await;
        sqs()
            .send_message()
            .queue_url(&url)
            .message_body(job(ID, &plan))
            .send()
            .await
            .unwrap();
        plan
    });
    done.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "it did not wait out its 120 s"
    );
    let sent = t.tokens.take();
    assert_eq!(sent.len(), 2, "{sent:?}");
    let Sent::Success { token, output } = &sent[1] else {
        panic!("the apply failed: {sent:?}")
    };
    assert_eq!(token, "apply-token", "the apply answers the job's token");
    let applied: ApplyResult = serde_json::from_str(output).unwrap();
    assert_eq!((applied.execution_id.as_str(), applied.added), (ID, 1));
    assert!(
        t.s.tf.state_file("dev/app").exists(),
        "the plan was applied"
    );
    let record = t.s.metadb.execution(ID).await.unwrap().unwrap();
    assert_eq!(record.new_resources, ["terraform_data.this"]);
    let url = plan.apply_queue_url.unwrap();
    assert!(!queue_exists(&url).await, "the task deletes its queue");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_task_stops_waiting_when_its_execution_ends_without_an_apply() {
    if !alone_in_process(
        "apply_handoff::the_plan_task_stops_waiting_when_its_execution_ends_without_an_apply",
    ) {
        return;
    }
    let t = task().await;
    let config = t.config();
    let wait = wait(120);
    let started = Instant::now();
    let (done, url) = tokio::join!(t.run(&config, Some(&wait)), async {
        let plan = plan_answer(&t.tokens).await;
        // The voters rejected it: trigger_sf records the execution's end.
        t.s.metadb
            .record_finished(ID, Outcome::Failed, Some("rejected by its voters"))
            .await
            .unwrap();
        plan.apply_queue_url.unwrap()
    });
    done.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "it did not wait out its 120 s"
    );
    assert_eq!(t.tokens.take().len(), 1, "only the plan was answered");
    assert!(!t.s.tf.state_file("dev/app").exists());
    assert!(!queue_exists(&url).await, "the task deletes its queue");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_task_gives_up_after_its_wait_and_deletes_its_queue() {
    if !alone_in_process(
        "apply_handoff::the_plan_task_gives_up_after_its_wait_and_deletes_its_queue",
    ) {
        return;
    }
    let t = task().await;
    let config = t.config();
    let wait = wait(3);
    t.run(&config, Some(&wait)).await.unwrap();
    let sent = t.tokens.take();
    assert_eq!(sent.len(), 1, "{sent:?}");
    let Sent::Success { output, .. } = &sent[0] else {
        panic!("{sent:?}")
    };
    let plan: PlanResult = serde_json::from_str(output).unwrap();
    let url = plan.apply_queue_url.clone().unwrap();
    // A send now fails (the state machine then starts a new apply task).
    assert!(!queue_exists(&url).await);
    assert!(
        sqs()
            .send_message()
            .queue_url(&url)
            .message_body(job(ID, &plan))
            .send()
            .await
            .is_err()
    );
    assert!(!t.s.tf.state_file("dev/app").exists());
}

/// The failures the task has sent so far, once there are `n`.
async fn failures(tokens: &RecordingTokens, n: usize) -> Vec<(String, String, String)> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let failed: Vec<_> = tokens
            .sent
            .lock()
            .unwrap()
            .iter()
            .filter_map(|s| match s {
                Sent::Failure {
                    token,
                    error,
                    cause,
                } => Some((token.clone(), error.clone(), cause.clone())),
                Sent::Success { .. } => None,
            })
            .collect();
        if failed.len() >= n {
            return failed;
        }
        assert!(
            Instant::now() < deadline,
            "{n} failures not sent: {failed:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whoever can send to the queue is not trusted: a body that is no job, a job
/// of another execution and this execution's job before its voters approved
/// it apply nothing and do not end the wait; each job is answered at once
/// with `LiveCi.HandoffRefused` (its state then goes to a new task instead of
/// waiting out its heartbeat). The approved job that follows is applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_task_refuses_jobs_it_must_not_apply_answers_them_and_waits_on() {
    if !alone_in_process(
        "apply_handoff::the_plan_task_refuses_jobs_it_must_not_apply_answers_them_and_waits_on",
    ) {
        return;
    }
    let t = task().await;
    let config = t.config();
    let wait = wait(120);
    let (done, ()) = tokio::join!(t.run(&config, Some(&wait)), async {
        let plan = plan_answer(&t.tokens).await;
        let url = plan.apply_queue_url.clone().unwrap();
        for body in [
            "{\"not\": \"a job\"}".to_string(),
            job_with_token("run-7-y-dev-app-002", "foreign-token", &plan),
            job_with_token(ID, "early-token", &plan),
        ] {
            sqs()
                .send_message()
                .queue_url(&url)
                .message_body(body)
                .send()
                .await
                .unwrap();
        }
        let failed = failures(&t.tokens, 2).await;
        assert_eq!(failed.len(), 2, "{failed:?}");
        let (tokens, errors): (Vec<_>, Vec<_>) = failed
            .iter()
            .map(|(token, error, _)| (token.as_str(), error.as_str()))
            .unzip();
        assert_eq!(tokens, ["foreign-token", "early-token"]);
        assert_eq!(errors, [HANDOFF_REFUSED, HANDOFF_REFUSED]);
        assert!(
            failed[0].2.contains("run-7-y-dev-app-002"),
            "the cause names the other execution: {}",
            failed[0].2
        );
        assert!(
            failed[1].2.contains("not approved"),
            "the cause says why: {}",
            failed[1].2
        );
        assert!(
            !t.s.tf.state_file("dev/app").exists(),
            "nothing was applied"
        );
        assert!(queue_exists(&url).await, "the task still waits");
        t.approve().await;
        sqs()
            .send_message()
            .queue_url(&url)
            .message_body(job(ID, &plan))
            .send()
            .await
            .unwrap();
    });
    done.unwrap();
    let sent = t.tokens.take();
    assert_eq!(sent.len(), 4, "{sent:?}");
    let Sent::Success { token, .. } = &sent[3] else {
        panic!("the approved apply failed: {sent:?}")
    };
    assert_eq!(token, "apply-token");
    assert!(
        t.s.tf.state_file("dev/app").exists(),
        "the approved job applied"
    );
}

/// The guard: a plan that leaves a process behind (detached with `setsid`,
/// its output closed, as a `data "external"` program could) gets no hand-off:
/// the leftover is killed, the plan's answer names no queue (a new task
/// applies, in a container the leftover never shared) and the task does not
/// wait. The clean plan of the test above it does name one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_that_leaves_a_process_behind_gets_no_hand_off_and_the_process_is_killed() {
    if !alone_in_process(
        "apply_handoff::a_plan_that_leaves_a_process_behind_gets_no_hand_off_and_the_process_is_killed",
    ) {
        return;
    }
    let t = task().await;
    let scratch = tempfile::tempdir().unwrap();
    let pid_file = scratch.path().join("leftover.pid");
    let mut config = t.config();
    config.command = Some(format!(
        "setsid sh -c 'echo $$ > {}; exec sleep 300' </dev/null >/dev/null 2>&1 & {}",
        pid_file.display(),
        t.s.tf.plan
    ));
    let wait = wait(30);
    let started = Instant::now();
    t.run(&config, Some(&wait)).await.unwrap();
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_string();
    let alive = std::path::Path::new(&format!("/proc/{pid}")).exists();
    if alive {
        // Not left to outlive a failing test.
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid])
            .status();
    }
    assert!(!alive, "the leftover (pid {pid}) still runs");
    let sent = t.tokens.take();
    assert_eq!(sent.len(), 1, "{sent:?}");
    let Sent::Success { output, .. } = &sent[0] else {
        panic!("the plan failed: {sent:?}")
    };
    let plan: serde_json::Value = serde_json::from_str(output).unwrap();
    assert!(plan.get("apply_queue_url").is_none(), "{plan}");
    assert_eq!(plan["to_add"], 1, "{plan}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the task did not wait for an apply"
    );
    assert_eq!(
        queues(&wait).await,
        Vec::<String>::new(),
        "the queue created while planning is deleted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_task_without_a_hand_off_names_no_queue() {
    let t = task().await;
    let config = t.config();
    t.run(&config, None).await.unwrap();
    let Sent::Success { output, .. } = &t.tokens.take()[0] else {
        panic!("the plan failed")
    };
    let plan: serde_json::Value = serde_json::from_str(output).unwrap();
    assert!(plan.get("apply_queue_url").is_none(), "{plan}");
}

/// ECS stops a task with SIGTERM: the plan task waiting for its apply
/// deletes its queue and ends, so no queue of a stopped task is left for
/// SQS's 30-day clean-up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_task_stopped_with_sigterm_while_waiting_deletes_its_queue() {
    if !alone_in_process(
        "apply_handoff::a_plan_task_stopped_with_sigterm_while_waiting_deletes_its_queue",
    ) {
        return;
    }
    let t = task().await;
    let config = t.config();
    let wait = wait(120);
    let started = Instant::now();
    let (done, url) = tokio::join!(t.run(&config, Some(&wait)), async {
        let url = plan_answer(&t.tokens).await.apply_queue_url.unwrap();
        assert!(queue_exists(&url).await, "the task waits on its queue");
        // This process is the task: ECS's StopTask, sent to it.
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &std::process::id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        url
    });
    let err = done.unwrap_err();
    assert!(matches!(err, TaskError::Terminated), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "it did not wait out its 120 s"
    );
    assert!(
        !queue_exists(&url).await,
        "the stopped task deletes its queue"
    );
    assert_eq!(queues(&wait).await, Vec::<String>::new());
    assert_eq!(t.tokens.take().len(), 1, "only the plan was answered");
}

/// ECS stops a plan task while it runs the handed-off apply: the apply is not
/// dropped (that SIGKILLs its shell and orphans terraform) but interrupted
/// with SIGINT and let stop by itself; the apply's token says so. The
/// terraform-like apply traps the interrupt and writes its "state".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_task_stopped_while_it_applies_lets_the_apply_stop_cleanly() {
    if !alone_in_process(
        "apply_handoff::a_plan_task_stopped_while_it_applies_lets_the_apply_stop_cleanly",
    ) {
        return;
    }
    let t = task().await;
    let marks = tempfile::tempdir().unwrap();
    let started = marks.path().join("started");
    let cleaned = marks.path().join("cleaned");
    let slow = format!(
        "trap 'echo state-saved > {cleaned:?}; exit 130' INT; touch {started:?}; \
         while :; do sleep 0.1; done; "
    );
    live_ci_metadb::connect(&t.s.db.url)
        .await
        .unwrap()
        .execute(
            "UPDATE executions SET apply_command = $1 || apply_command WHERE execution_id = $2",
            &[&slow, &ID],
        )
        .await
        .unwrap();
    let config = t.config();
    let wait = wait(120);
    let (done, url) = tokio::join!(
        tokio::time::timeout(Duration::from_secs(60), t.run(&config, Some(&wait))),
        async {
            let plan = plan_answer(&t.tokens).await;
            let url = plan.apply_queue_url.clone().unwrap();
            t.approve().await;
            sqs()
                .send_message()
                .queue_url(&url)
                .message_body(job(ID, &plan))
                .send()
                .await
                .unwrap();
            crate::support::stop_this_task_once_started(&started).await;
            url
        }
    );
    let err = done
        .expect("the apply stopped by itself, long before a SIGKILL would come")
        .unwrap_err();
    assert!(matches!(err, TaskError::Interrupted { .. }), "{err}");
    assert_eq!(
        std::fs::read_to_string(&cleaned).unwrap().trim(),
        "state-saved",
        "the apply's own clean-up ran"
    );
    let sent = t.tokens.take();
    assert_eq!(sent.len(), 2, "{sent:?}");
    let Sent::Failure { token, error, .. } = &sent[1] else {
        panic!("the apply was not reported failed: {sent:?}")
    };
    assert_eq!(
        (token.as_str(), error.as_str()),
        ("apply-token", "Interrupted")
    );
    assert!(
        !queue_exists(&url).await,
        "the stopped task deletes its queue"
    );
}

/// The queues whose names start with the wait's prefix.
async fn queues(wait: &ApplyWait) -> Vec<String> {
    sqs()
        .list_queues()
        .queue_name_prefix(&wait.queue_prefix)
        .send()
        .await
        .unwrap()
        .queue_urls()
        .to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_plan_deletes_the_queue_it_created_while_planning() {
    if !alone_in_process("apply_handoff::a_failed_plan_deletes_the_queue_it_created_while_planning")
    {
        return;
    }
    let t = task().await;
    let mut config = t.config();
    config.command = Some("echo 'the plan broke' >&2; exit 3".into());
    let wait = wait(120);
    let started = Instant::now();
    let err = t.run(&config, Some(&wait)).await.unwrap_err();
    assert!(err.to_string().contains("exit"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "a failed plan does not wait for an apply"
    );
    let Sent::Failure { token, .. } = &t.tokens.take()[0] else {
        panic!("the plan was answered as a success")
    };
    assert_eq!(token, "token-1");
    assert_eq!(queues(&wait).await, Vec::<String>::new());
}
