//! `make bench-pipeline`: what the pipeline itself costs per unit. A generated live
//! repository (`live_ci_synth::pipeline`) is deployed through the local cloud with
//! every unit approved through its mail as soon as it arrives; the figures come
//! from the metadb, Step Functions and CloudWatch Logs (the tasks' "terraform
//! command finished" lines and the Lambdas' REPORT lines). Keep the printed format
//! stable: runs are compared across changes.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use live_ci_synth::pipeline::{PipelineShape, critical_path_len, generate_pipeline_repo};
use live_ci_testkit::github::{FakeGitHub, FakePullRequest};

use crate::observe::{Metadb, drive_polling};
use crate::repo::SampleRepo;
use crate::timeline::{PhaseSteps, TaskTimeline, task_timelines};
use crate::vote::Vote;
use crate::{Cloud, Deployment, E2eError, REPO_FULL_NAME, Result, send_merge_webhook, work_dir};

/// How often the benchmark's voter looks for new approval mails: an approval
/// should wait on the pipeline, not on the voter (the e2e's 500 ms added
/// about 0.25 s per unit on average).
const MAIL_POLL: Duration = Duration::from_millis(100);

/// One benchmark case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    /// Units in the generated repository.
    pub units: usize,
    /// The deployment's `max_parallel` (units deployed at once).
    pub max_parallel: u32,
    /// Accounts the units are spread over.
    pub accounts: usize,
    /// Dependency layers: the longest chain's length in units.
    pub layers: usize,
    /// Seeds the generated dependencies.
    pub seed: u64,
}

/// One unit's execution as measured.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecTiming {
    /// The execution's metadb id.
    pub execution_id: String,
    /// The unit's directory, repository-relative.
    pub cfg_path: String,
    /// The execution's final status, as stored.
    pub status: String,
    /// When the metadb recorded it finished. Epoch milliseconds.
    pub finished_ms: Option<f64>,
    /// When Step Functions started the execution (epoch ms).
    pub sfn_start_ms: Option<f64>,
    /// When Step Functions ended the execution (epoch ms).
    pub sfn_stop_ms: Option<f64>,
    /// Plan + apply command time, from the task logs.
    pub terraform_ms: f64,
    /// The execution ids it waited for.
    pub depends_on: Vec<String>,
}

/// The figures of one case.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// The case measured.
    pub case: Case,
    /// The run's final status.
    pub run_status: String,
    /// From sending the merge webhook to the last execution recorded finished (ms).
    pub makespan_ms: f64,
    /// Every unit's terraform time added up (ms).
    pub terraform_sum_ms: f64,
    /// The longest chain of terraform time through the dependencies (ms).
    pub critical_path_ms: f64,
    /// Units on that chain.
    pub critical_path_units: usize,
    /// Units whose terraform time was found in the logs (of all units).
    pub timed_units: usize,
    /// Per execution: from ready (run created, dependencies finished) to
    /// Step Functions starting it (ms).
    pub start_latency_ms: Vec<f64>,
    /// Step Functions ended an execution → the metadb recorded it finished.
    pub finish_latency_ms: Vec<f64>,
    /// Lambda function → REPORT durations (ms).
    pub lambda_ms: BTreeMap<String, Vec<f64>>,
    /// Task state of the deployment state machine → its times in every execution.
    pub states: BTreeMap<String, StateSamples>,
    /// terra-run phase → its steps, from the tasks' timelines.
    pub tasks: BTreeMap<String, PhaseSteps>,
    /// Each execution's time split by who spends it.
    pub splits: Vec<UnitSplit>,
}

/// Where one execution's time (Step Functions start → end) goes (ms). The
/// parts add up to the whole, so their means over the units do too.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UnitSplit {
    /// The whole: Step Functions start to end.
    pub total: f64,
    /// The unit's plan and apply commands (the `terraform command finished` lines).
    pub terraform: f64,
    /// live-ci's own code in the tasks: process start → token answered, less terraform.
    pub task_code: f64,
    /// Getting a task running and its answer back: state entered → process
    /// started, token answered → state exited (the local cloud's ECS, or the
    /// apply job's trip through the plan task's queue).
    pub task_dispatch: f64,
    /// Request Approval, entered → exited: the SNS publish, approval-request and
    /// its mail, the voter (who here clicks at once), approval-response twice
    /// (the confirmation page and the vote).
    pub approval: f64,
    /// The rest: the state machine between its task states.
    pub transitions: f64,
}

/// Splits one execution: its Step Functions time, its task states, the
/// timelines of its tasks by phase, its terraform time.
pub fn split_execution(
    total_ms: f64,
    terraform_ms: f64,
    states: &[StateTime],
    timeline: impl Fn(&str) -> Option<TaskTimeline>,
) -> UnitSplit {
    let mut split = UnitSplit {
        total: total_ms,
        terraform: terraform_ms,
        ..UnitSplit::default()
    };
    let mut task_spans = 0.0;
    for st in states {
        if st.state == live_ci_stepfunctions::outcome::state::REQUEST_APPROVAL {
            split.approval += st.total_ms;
            continue;
        }
        let Some(phase) = task_phase(&st.state) else {
            continue;
        };
        let span = timeline(phase)
            .and_then(|t| Some(t.at("answered")? - t.started_ms))
            .filter(|span| *span <= st.total_ms)
            .unwrap_or(0.0);
        task_spans += span;
        split.task_dispatch += st.total_ms - span;
    }
    split.task_code = task_spans - terraform_ms;
    split.transitions = total_ms - task_spans - split.task_dispatch - split.approval;
    split
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 { 0.0 } else { sum / n as f64 }
}

/// One task state's times over the executions of a run (ms).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StateSamples {
    /// State entered → state exited.
    pub total: Vec<f64>,
    /// State entered → the task submitted (the state machine's own integration).
    pub to_submitted: Vec<f64>,
}

/// A task state's times in one execution, from its history (ms).
#[derive(Debug, Clone, PartialEq)]
pub struct StateTime {
    /// The state's name.
    pub state: String,
    /// From entering the state to exiting it.
    pub total_ms: f64,
    /// From entering the state to the task being submitted, when it was.
    pub to_submitted_ms: Option<f64>,
    /// When the task was submitted and when the state exited (epoch ms).
    pub submitted_at_ms: Option<f64>,
    /// When the state exited (epoch ms).
    pub exited_at_ms: f64,
}

/// One event of an execution's history: its type, the state it enters (for
/// `*StateEntered`), and when (epoch ms).
pub type HistoryEvent = (String, Option<String>, f64);

/// The task states' times of one execution history: entered → exited, and
/// entered → submitted where the integration reports it.
pub fn state_times(history: &[HistoryEvent]) -> Vec<StateTime> {
    let mut out = Vec::new();
    let mut open: Option<(String, f64, Option<f64>)> = None;
    for (kind, name, at) in history {
        match kind.as_str() {
            "TaskStateEntered" => {
                open = name.clone().map(|n| (n, *at, None));
            }
            "TaskSubmitted" => {
                if let Some((_, _, submitted)) = open.as_mut() {
                    submitted.get_or_insert(*at);
                }
            }
            "TaskStateExited" => {
                if let Some((state, entered, submitted)) = open.take() {
                    out.push(StateTime {
                        state,
                        total_ms: at - entered,
                        to_submitted_ms: submitted.map(|s| s - entered),
                        submitted_at_ms: submitted,
                        exited_at_ms: *at,
                    });
                }
            }
            _ => {}
        }
    }
    out
}

/// The terra-run phase a task state runs (each phase is a task of its own).
pub fn task_phase(state: &str) -> Option<&'static str> {
    use live_ci_stepfunctions::outcome::state::{APPLY, PLAN};
    match state {
        PLAN => Some("plan"),
        APPLY => Some("apply"),
        _ => None,
    }
}

impl Figures {
    /// (makespan − critical path of terraform time) / units on that path.
    pub fn overhead_per_unit_ms(&self) -> f64 {
        (self.makespan_ms - self.critical_path_ms) / self.critical_path_units.max(1) as f64
    }

    /// The stable report block of this case.
    pub fn render(&self) -> String {
        let c = &self.case;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "bench-pipeline: {} units, {} accounts, max_parallel {}, run {}",
            c.units, c.accounts, c.max_parallel, self.run_status
        );
        let _ = writeln!(
            out,
            "  makespan                     {:>9.1} s",
            self.makespan_ms / 1e3
        );
        let _ = writeln!(
            out,
            "  terraform time               sum {:.1} s, critical path {:.1} s ({} units; {} of {} units timed)",
            self.terraform_sum_ms / 1e3,
            self.critical_path_ms / 1e3,
            self.critical_path_units,
            self.timed_units,
            c.units
        );
        let _ = writeln!(
            out,
            "  pipeline overhead per unit   {:>9.2} s   (makespan - critical path terraform) / units on it",
            self.overhead_per_unit_ms() / 1e3
        );
        let (p50, p95) = (
            percentile(&self.start_latency_ms, 50.0),
            percentile(&self.start_latency_ms, 95.0),
        );
        let _ = writeln!(
            out,
            "  start latency                p50 {:.2} s  p95 {:.2} s   (dependencies done -> execution start, n={})",
            p50 / 1e3,
            p95 / 1e3,
            self.start_latency_ms.len()
        );
        let _ = writeln!(
            out,
            "  finish latency               p50 {:.2} s  p95 {:.2} s   (execution ended -> recorded finished, n={})",
            percentile(&self.finish_latency_ms, 50.0) / 1e3,
            percentile(&self.finish_latency_ms, 95.0) / 1e3,
            self.finish_latency_ms.len()
        );
        let part = |f: fn(&UnitSplit) -> f64| mean(self.splits.iter().map(f)) / 1e3;
        let _ = writeln!(
            out,
            "  per unit mean                {:>9.2} s = terraform {:.2} + task code {:.2} + task dispatch {:.2} + approval {:.2} + transitions {:.2}   (execution start -> end, n={})",
            part(|u| u.total),
            part(|u| u.terraform),
            part(|u| u.task_code),
            part(|u| u.task_dispatch),
            part(|u| u.approval),
            part(|u| u.transitions),
            self.splits.len()
        );
        for (state, samples) in &self.states {
            let _ = writeln!(
                out,
                "  state {:<22} p50 {:.2} s  p95 {:.2} s   (entered -> task submitted p50 {:.2} s, n={})",
                state,
                percentile(&samples.total, 50.0) / 1e3,
                percentile(&samples.total, 95.0) / 1e3,
                percentile(&samples.to_submitted, 50.0) / 1e3,
                samples.total.len()
            );
        }
        for (phase, steps) in &self.tasks {
            let _ = writeln!(
                out,
                "  task {:<23} p50 ms: {}   (n={})",
                phase,
                steps.render(),
                steps.tasks()
            );
        }
        for (function, durations) in &self.lambda_ms {
            let _ = writeln!(
                out,
                "  lambda {:<21} p50 {:.0} ms  p95 {:.0} ms   (n={})",
                function,
                percentile(durations, 50.0),
                percentile(durations, 95.0),
                durations.len()
            );
        }
        out
    }
}

/// The `p`th percentile (nearest rank) of `values`; 0 for none.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The longest path of terraform time through the dependencies: (ms, units on it).
pub fn critical_path(execs: &[ExecTiming]) -> (f64, usize) {
    let by_id: HashMap<&str, &ExecTiming> =
        execs.iter().map(|e| (e.execution_id.as_str(), e)).collect();
    let mut memo: HashMap<&str, (f64, usize)> = HashMap::new();
    // Iterative deepening over a DAG: resolve a node once all its dependencies are.
    let mut pending: Vec<&str> = execs.iter().map(|e| e.execution_id.as_str()).collect();
    while !pending.is_empty() {
        let before = pending.len();
        pending.retain(|id| {
            let e = by_id[id];
            let deps: Vec<&str> = e
                .depends_on
                .iter()
                .map(String::as_str)
                .filter(|d| by_id.contains_key(d))
                .collect();
            if deps.iter().any(|d| !memo.contains_key(d)) {
                return true;
            }
            let best = deps
                .iter()
                .map(|d| memo[d])
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .unwrap_or((0.0, 0));
            memo.insert(id, (best.0 + e.terraform_ms, best.1 + 1));
            false
        });
        if pending.len() == before {
            break; // a cycle cannot be in a run; stop rather than loop
        }
    }
    memo.into_values()
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .unwrap_or((0.0, 0))
}

/// From a dependency finishing (or the run's creation, for a unit without one)
/// to its Step Functions execution starting.
pub fn start_latencies(execs: &[ExecTiming], run_created_ms: f64) -> Vec<f64> {
    let finished: HashMap<&str, Option<f64>> = execs
        .iter()
        .map(|e| (e.execution_id.as_str(), e.finished_ms))
        .collect();
    execs
        .iter()
        .filter_map(|e| {
            let start = e.sfn_start_ms?;
            let ready = e
                .depends_on
                .iter()
                .filter_map(|d| finished.get(d.as_str()).copied().flatten())
                .fold(run_created_ms, f64::max);
            Some((start - ready).max(0.0))
        })
        .collect()
}

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

fn sfn_client(endpoint: &str) -> aws_sdk_sfn::Client {
    aws_sdk_sfn::Client::from_conf(
        aws_sdk_sfn::Config::builder()
            .behavior_version(aws_sdk_sfn::config::BehaviorVersion::latest())
            .endpoint_url(endpoint)
            .region(aws_sdk_sfn::config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_sfn::config::Credentials::new(
                "test", "test", None, None, "bench",
            ))
            .build(),
    )
}

fn iam_client(endpoint: &str) -> aws_sdk_iam::Client {
    aws_sdk_iam::Client::from_conf(
        aws_sdk_iam::Config::builder()
            .behavior_version(aws_sdk_iam::config::BehaviorVersion::latest())
            .endpoint_url(endpoint)
            .region(aws_sdk_iam::config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_iam::config::Credentials::new(
                "test", "test", None, None, "bench",
            ))
            .build(),
    )
}

/// The floor machine's execution role: the local cloud enforces IAM as AWS
/// does, so the machine may send to its own queue and nothing else. An
/// existing role (an earlier run) is kept and its policy rewritten.
async fn floor_role(endpoint: &str, name: &str, queue_arn: &str) -> Result<String> {
    let iam = iam_client(endpoint);
    let trust = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"states.amazonaws.com"},"Action":"sts:AssumeRole"}]}"#;
    let arn = match iam
        .create_role()
        .role_name(name)
        .assume_role_policy_document(trust)
        .send()
        .await
    {
        Ok(out) => out.role().map(|r| r.arn().to_string()).unwrap_or_default(),
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_entity_already_exists_exception()) =>
        {
            format!("arn:aws:iam::000000000000:role/{name}")
        }
        Err(e) => return Err(aws_err("iam CreateRole", e)),
    };
    let policy = serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": queue_arn}],
    });
    iam.put_role_policy()
        .role_name(name)
        .policy_name("floor-queue")
        .policy_document(policy.to_string())
        .send()
        .await
        .map_err(|e| aws_err("iam PutRolePolicy", e))?;
    Ok(arn)
}

fn sqs_client(endpoint: &str) -> aws_sdk_sqs::Client {
    aws_sdk_sqs::Client::from_conf(
        aws_sdk_sqs::Config::builder()
            .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
            .endpoint_url(endpoint)
            .region(aws_sdk_sqs::config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_sqs::config::Credentials::new(
                "test", "test", None, None, "bench",
            ))
            .build(),
    )
}

fn logs_client(endpoint: &str) -> aws_sdk_cloudwatchlogs::Client {
    aws_sdk_cloudwatchlogs::Client::from_conf(
        aws_sdk_cloudwatchlogs::Config::builder()
            .behavior_version(aws_sdk_cloudwatchlogs::config::BehaviorVersion::latest())
            .endpoint_url(endpoint)
            .region(aws_sdk_cloudwatchlogs::config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_cloudwatchlogs::config::Credentials::new(
                "test", "test", None, None, "bench",
            ))
            .build(),
    )
}

fn aws_err(what: &str, e: impl std::fmt::Debug) -> E2eError {
    E2eError::Sfn(format!("{what}: {e:?}"))
}

fn epoch_ms(t: &aws_sdk_sfn::primitives::DateTime) -> f64 {
    t.secs() as f64 * 1e3 + f64::from(t.subsec_nanos()) / 1e6
}

/// A floor machine: `tasks` `waitForTaskToken` tasks (SQS messages to
/// `queue_url`), each but the last followed by a Choice on its answer, as a
/// unit's Plan, Request Approval and Apply are.
pub fn floor_definition(queue_url: &str, tasks: usize) -> serde_json::Value {
    let mut states = serde_json::Map::new();
    for i in 0..tasks {
        let mut task = serde_json::json!({
            "Type": "Task",
            "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
            "Parameters": {"QueueUrl": queue_url, "MessageBody": {"token.$": "$$.Task.Token"}},
            "ResultPath": format!("$.task{i}"),
            "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Stop"}],
        });
        if i + 1 == tasks {
            task["End"] = true.into();
        } else {
            task["Next"] = format!("Choice {i}").into();
            states.insert(
                format!("Choice {i}"),
                serde_json::json!({
                    "Type": "Choice",
                    "Choices": [{
                        "Variable": format!("$.task{i}.go"),
                        "IsPresent": true,
                        "Next": format!("Task {}", i + 1),
                    }],
                    "Default": "Stop",
                }),
            );
        }
        states.insert(format!("Task {i}"), task);
    }
    states.insert("Stop".into(), serde_json::json!({"Type": "Fail"}));
    serde_json::json!({"StartAt": "Task 0", "States": states})
}

/// The local cloud's floor: wall time of an execution of a [`floor_definition`]
/// machine whose tasks are each answered at once.
pub async fn floor(endpoint: &str, samples: usize, tasks: usize) -> Result<Vec<f64>> {
    let sqs = sqs_client(endpoint);
    let sfn = sfn_client(endpoint);
    let name = format!("live-ci-bench-floor-{tasks}-{}", std::process::id());
    let queue_url = sqs
        .create_queue()
        .queue_name(&name)
        .send()
        .await
        .map_err(|e| aws_err("sqs CreateQueue", e))?
        .queue_url()
        .unwrap_or_default()
        .to_string();
    let queue_arn = sqs
        .get_queue_attributes()
        .queue_url(&queue_url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|e| aws_err("sqs GetQueueAttributes", e))?
        .attributes()
        .and_then(|a| a.get(&aws_sdk_sqs::types::QueueAttributeName::QueueArn))
        .cloned()
        .unwrap_or_default();
    let role_arn = floor_role(endpoint, &name, &queue_arn).await?;
    let definition = floor_definition(&queue_url, tasks);
    let machine = sfn
        .create_state_machine()
        .name(&name)
        .definition(definition.to_string())
        .role_arn(role_arn)
        .send()
        .await
        .map_err(|e| aws_err("states CreateStateMachine", e))?
        .state_machine_arn()
        .to_string();
    let mut out = Vec::with_capacity(samples);
    for i in 0..samples {
        let t = Instant::now();
        let arn = sfn
            .start_execution()
            .state_machine_arn(&machine)
            .name(format!("floor-{i}"))
            .input("{}")
            .send()
            .await
            .map_err(|e| aws_err("states StartExecution", e))?
            .execution_arn()
            .to_string();
        for _ in 0..tasks {
            let token = loop {
                if t.elapsed() > Duration::from_secs(60) {
                    return Err(E2eError::Timeout {
                        what: "the floor execution's SQS message".into(),
                        secs: 60,
                    });
                }
                let got = sqs
                    .receive_message()
                    .queue_url(&queue_url)
                    .wait_time_seconds(1)
                    .send()
                    .await
                    .map_err(|e| aws_err("sqs ReceiveMessage", e))?;
                if let Some(m) = got.messages().first() {
                    let body: serde_json::Value =
                        serde_json::from_str(m.body().unwrap_or("{}")).unwrap_or_default();
                    if let Some(handle) = m.receipt_handle() {
                        let _ = sqs
                            .delete_message()
                            .queue_url(&queue_url)
                            .receipt_handle(handle)
                            .send()
                            .await;
                    }
                    if let Some(token) = body["token"].as_str() {
                        break token.to_string();
                    }
                }
            };
            sfn.send_task_success()
                .task_token(token)
                .output(r#"{"go": true}"#)
                .send()
                .await
                .map_err(|e| aws_err("states SendTaskSuccess", e))?;
        }
        loop {
            let d = sfn
                .describe_execution()
                .execution_arn(&arn)
                .send()
                .await
                .map_err(|e| aws_err("states DescribeExecution", e))?;
            if d.status().as_str() != "RUNNING" {
                break;
            }
            if t.elapsed() > Duration::from_secs(60) {
                return Err(E2eError::Timeout {
                    what: "the floor execution to end".into(),
                    secs: 60,
                });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        out.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let _ = sfn
        .delete_state_machine()
        .state_machine_arn(&machine)
        .send()
        .await;
    let _ = sqs.delete_queue().queue_url(&queue_url).send().await;
    Ok(out)
}

/// Every event of the log groups whose name contains `part`, since `since_ms`:
/// (group, message).
async fn log_events(
    logs: &aws_sdk_cloudwatchlogs::Client,
    part: &str,
    since_ms: i64,
) -> Result<Vec<(String, String)>> {
    let mut groups = Vec::new();
    let mut next: Option<String> = None;
    loop {
        let page = logs
            .describe_log_groups()
            .set_next_token(next.take())
            .send()
            .await
            .map_err(|e| aws_err("logs DescribeLogGroups", e))?;
        for g in page.log_groups() {
            if let Some(name) = g.log_group_name().filter(|n| n.contains(part)) {
                groups.push(name.to_string());
            }
        }
        match page.next_token() {
            Some(t) if !t.is_empty() => next = Some(t.to_string()),
            _ => break,
        }
    }
    let mut out = Vec::new();
    for group in groups {
        let mut next: Option<String> = None;
        loop {
            let page = logs
                .filter_log_events()
                .log_group_name(&group)
                .start_time(since_ms)
                .set_next_token(next.take())
                .send()
                .await
                .map_err(|e| aws_err("logs FilterLogEvents", e))?;
            for e in page.events() {
                out.push((group.clone(), e.message().unwrap_or_default().to_string()));
            }
            match page.next_token() {
                Some(t) if !t.is_empty() => next = Some(t.to_string()),
                _ => break,
            }
        }
    }
    Ok(out)
}

/// tracing's terminal colours, removed before reading `key=value` fields.
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            for n in chars.by_ref() {
                if n.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `key=value` of a log line (values end at whitespace).
pub fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let needle = format!("{key}=");
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(needle.as_str()))
}

/// A field of a JSON log record: tracing's JSON formatter nests the event's
/// fields under `fields` unless it flattens them.
fn json_field(record: &serde_json::Value, key: &str) -> Option<String> {
    let value = record
        .get("fields")
        .and_then(|f| f.get(key))
        .or_else(|| record.get(key))?;
    match value {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A log line as a JSON object, if it is one.
fn json_record(line: &str) -> Option<serde_json::Value> {
    let line = line.trim();
    if !line.starts_with('{') {
        return None;
    }
    serde_json::from_str::<serde_json::Value>(line)
        .ok()
        .filter(|v| v.is_object())
}

/// Execution id → plan + apply command milliseconds, from the task logs
/// (text lines with `key=value` fields, or tracing's JSON records).
pub fn terraform_times(messages: &[(String, String)]) -> HashMap<String, f64> {
    let mut out: HashMap<String, f64> = HashMap::new();
    for (_, m) in messages {
        let line = strip_ansi(m);
        if !line.contains("terraform command finished") {
            continue;
        }
        let (id, ms) = match json_record(&line) {
            Some(record) => (
                json_field(&record, "execution_id"),
                json_field(&record, "command_ms"),
            ),
            None => (
                field(&line, "execution_id").map(str::to_string),
                field(&line, "command_ms").map(str::to_string),
            ),
        };
        let (Some(id), Some(ms)) = (id, ms) else {
            continue;
        };
        if let Ok(ms) = ms.parse::<f64>() {
            *out.entry(id).or_default() += ms;
        }
    }
    out
}

/// Function → REPORT durations (ms), named by the log group's last segment:
/// the text `REPORT … Duration: 12.3 ms` line of the Text log format, or the
/// `platform.report` record of the JSON one.
pub fn lambda_durations(messages: &[(String, String)]) -> BTreeMap<String, Vec<f64>> {
    let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (group, m) in messages {
        let ms = match json_record(m) {
            Some(record) => record
                .get("type")
                .filter(|t| *t == "platform.report")
                .and_then(|_| record.pointer("/record/metrics/durationMs"))
                .and_then(serde_json::Value::as_f64),
            None => m
                .split("Duration: ")
                .nth(1)
                .filter(|_| m.starts_with("REPORT"))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|v| v.parse::<f64>().ok()),
        };
        let Some(ms) = ms else {
            continue;
        };
        let function = group.rsplit('/').next().unwrap_or(group).to_string();
        out.entry(function).or_default().push(ms);
    }
    out
}

/// Deploys the module for `case`, merges a pull request adding every unit,
/// approves each unit through its mail, and measures.
pub async fn run_case(cloud: &Cloud, case: Case, pr_number: u64) -> Result<Figures> {
    let shape = PipelineShape {
        units: case.units,
        accounts: case.accounts,
        layers: case.layers,
        seed: case.seed,
    };
    let generated = generate_pipeline_repo(shape);
    let dir = work_dir().join(format!("bench/repo-{}-{}", case.units, case.max_parallel));
    let (repo, merge) = SampleRepo::from_files(
        &dir,
        &generated.base_files,
        pr_number,
        &generated.unit_files,
    )
    .await?;
    let accounts_file = work_dir().join(format!("bench/accounts-{}.json", case.units));
    std::fs::write(&accounts_file, &generated.accounts_json).map_err(|source| E2eError::Io {
        path: accounts_file.display().to_string(),
        source,
    })?;
    let github = FakeGitHub::start(REPO_FULL_NAME).await;
    github.add_pull_request(FakePullRequest {
        number: merge.number,
        head_sha: merge.head_sha.clone(),
        base: "main".into(),
        files: repo.files(&merge).await?,
        open: false,
    });
    let metadb = cloud
        .fresh_database(&format!("bench_{}_{}", case.units, case.max_parallel))
        .await?;
    let deployment = Deployment::apply_with(
        cloud,
        &metadb,
        &github.url(),
        &repo.dir,
        false,
        false,
        &[
            ("LIVE_CI_MAX_PARALLEL", case.max_parallel.to_string()),
            ("LIVE_CI_ACCOUNTS_FILE", accounts_file.display().to_string()),
        ],
    )
    .await?;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| E2eError::Http {
            what: "client".into(),
            detail: e.to_string(),
        })?;
    cloud.clear_mailbox(&http).await?;
    // Measured as every run but the first after an upgrade runs: against a
    // migrated metadb. The first task after a module apply migrates it (0.7 s
    // here), a one-off cost that is not the pipeline's per unit.
    live_ci_metadb::PgMetadb::connect(&metadb, 1)?
        .migrate()
        .await?;
    let t0 = now_ms();
    let delivery = format!("bench-{}-{}", case.units, case.max_parallel);
    let (status, answer) =
        send_merge_webhook(&http, cloud.endpoint(), &deployment, &merge, &delivery).await?;
    if status != 200 {
        return Err(E2eError::Http {
            what: "the merge webhook".into(),
            detail: format!("{status}: {answer}"),
        });
    }
    let db = Metadb::connect(&metadb).await?;
    let outcome = drive_polling(
        &db,
        &http,
        cloud.endpoint(),
        &merge.merge_commit,
        Duration::from_secs(3 * 3600),
        MAIL_POLL,
        &|_| Vote::Approve,
        &|_, _| {},
    )
    .await?;
    // The last task's log lines reach CloudWatch within the plugin's flush period.
    tokio::time::sleep(Duration::from_secs(3)).await;

    let client = live_ci_metadb::connect(&metadb).await?;
    let run_id = outcome.run.run_id;
    let run_created_ms: f64 = client
        .query_one(
            "SELECT (extract(epoch FROM created_at) * 1000)::float8 FROM runs WHERE run_id = $1",
            &[&run_id],
        )
        .await?
        .get(0);
    let rows = client
        .query(
            "SELECT execution_id, cfg_path, status, sfn_execution_arn, \
             (extract(epoch FROM finished_at) * 1000)::float8 \
             FROM executions WHERE run_id = $1 AND NOT is_rollback",
            &[&run_id],
        )
        .await?;
    let deps = client
        .query(
            "SELECT e.execution_id, d.execution_id FROM execution_deps x \
             JOIN executions e ON e.id = x.execution JOIN executions d ON d.id = x.depends_on \
             WHERE e.run_id = $1",
            &[&run_id],
        )
        .await?;
    let mut depends: HashMap<String, Vec<String>> = HashMap::new();
    for r in deps {
        depends.entry(r.get(0)).or_default().push(r.get(1));
    }
    let logs = logs_client(cloud.endpoint());
    let since = t0 as i64 - 60_000;
    let task_logs = log_events(&logs, "/task/terra-run", since).await?;
    let tf = terraform_times(&task_logs);
    let timelines: HashMap<(String, String), TaskTimeline> = task_timelines(
        &task_logs
            .iter()
            .map(|(_, m)| strip_ansi(m))
            .collect::<Vec<_>>(),
    )
    .into_iter()
    .map(|t| ((t.execution_id.clone(), t.phase.clone()), t))
    .collect();
    let mut tasks: BTreeMap<String, PhaseSteps> = BTreeMap::new();
    let lambda_ms = lambda_durations(&log_events(&logs, "lambda", since).await?);
    let sfn = sfn_client(cloud.endpoint());
    let mut execs = Vec::with_capacity(rows.len());
    let mut states: BTreeMap<String, StateSamples> = BTreeMap::new();
    let mut splits = Vec::with_capacity(rows.len());
    for r in rows {
        let id: String = r.get(0);
        let arn: Option<String> = r.get(3);
        let mut exec_states = Vec::new();
        if let Some(arn) = &arn {
            exec_states = state_times(&execution_history(&sfn, arn).await?);
            for t in exec_states.clone() {
                let phase = task_phase(&t.state);
                if let Some(timeline) = phase.and_then(|p| timelines.get(&(id.clone(), p.into()))) {
                    tasks.entry(timeline.phase.clone()).or_default().add(
                        timeline,
                        t.submitted_at_ms,
                        Some(t.exited_at_ms),
                    );
                }
                let samples = states.entry(t.state).or_default();
                samples.total.push(t.total_ms);
                samples.to_submitted.extend(t.to_submitted_ms);
            }
        }
        let described = match &arn {
            Some(arn) => sfn
                .describe_execution()
                .execution_arn(arn)
                .send()
                .await
                .ok(),
            None => None,
        };
        let sfn_start_ms = described.as_ref().map(|d| epoch_ms(d.start_date()));
        let sfn_stop_ms = described.as_ref().and_then(|d| d.stop_date()).map(epoch_ms);
        if let (Some(start), Some(stop)) = (sfn_start_ms, sfn_stop_ms) {
            splits.push(split_execution(
                stop - start,
                tf.get(&id).copied().unwrap_or(0.0),
                &exec_states,
                |phase| timelines.get(&(id.clone(), phase.to_string())).cloned(),
            ));
        }
        execs.push(ExecTiming {
            terraform_ms: tf.get(&id).copied().unwrap_or(0.0),
            depends_on: depends.remove(&id).unwrap_or_default(),
            execution_id: id,
            cfg_path: r.get(1),
            status: r.get(2),
            finished_ms: r.get(4),
            sfn_start_ms,
            sfn_stop_ms,
        });
    }
    let makespan_ms = execs
        .iter()
        .filter_map(|e| e.finished_ms)
        .fold(t0, f64::max)
        - t0;
    let (critical_path_ms, critical_path_units) = critical_path(&execs);
    debug_assert!(critical_path_len(&generated.units) <= case.layers);
    Ok(Figures {
        case,
        run_status: outcome.run.status,
        makespan_ms,
        terraform_sum_ms: execs.iter().map(|e| e.terraform_ms).sum(),
        critical_path_ms,
        critical_path_units,
        timed_units: execs
            .iter()
            .filter(|e| tf.contains_key(&e.execution_id))
            .count(),
        start_latency_ms: start_latencies(&execs, run_created_ms),
        finish_latency_ms: execs
            .iter()
            .filter_map(|e| Some(e.finished_ms? - e.sfn_stop_ms?))
            .collect(),
        lambda_ms,
        states,
        tasks,
        splits,
    })
}

/// Every event of an execution's history, oldest first.
async fn execution_history(sfn: &aws_sdk_sfn::Client, arn: &str) -> Result<Vec<HistoryEvent>> {
    let mut out = Vec::new();
    let mut pages = sfn
        .get_execution_history()
        .execution_arn(arn)
        .max_results(1000)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| aws_err("states GetExecutionHistory", e))?;
        for e in page.events() {
            out.push((
                e.r#type().as_str().to_string(),
                e.state_entered_event_details()
                    .map(|d| d.name().to_string()),
                epoch_ms(e.timestamp()),
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec(id: &str, ms: f64, deps: &[&str], finished: f64, start: f64) -> ExecTiming {
        ExecTiming {
            execution_id: id.into(),
            cfg_path: id.into(),
            status: "succeeded".into(),
            finished_ms: Some(finished),
            sfn_start_ms: Some(start),
            sfn_stop_ms: None,
            terraform_ms: ms,
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
        }
    }

    #[test]
    fn the_critical_path_is_the_heaviest_chain_not_the_longest() {
        // a(5) -> b(1) -> c(1): 7 over 3 units; d(10) -> e(1): 11 over 2 units.
        let execs = vec![
            exec("a", 5.0, &[], 0.0, 0.0),
            exec("b", 1.0, &["a"], 0.0, 0.0),
            exec("c", 1.0, &["b"], 0.0, 0.0),
            exec("d", 10.0, &[], 0.0, 0.0),
            exec("e", 1.0, &["d"], 0.0, 0.0),
        ];
        assert_eq!(critical_path(&execs), (11.0, 2));
    }

    #[test]
    fn start_latency_counts_from_the_last_dependency_or_the_run() {
        let execs = vec![
            exec("a", 1.0, &[], 1_500.0, 1_200.0),
            exec("b", 1.0, &[], 2_000.0, 1_100.0),
            exec("c", 1.0, &["a", "b"], 5_000.0, 2_700.0),
        ];
        let l = start_latencies(&execs, 1_000.0);
        assert_eq!(l, vec![200.0, 100.0, 700.0]);
        assert_eq!(percentile(&l, 50.0), 200.0);
        assert_eq!(percentile(&l, 95.0), 700.0);
        assert_eq!(percentile(&[], 95.0), 0.0);
    }

    #[test]
    fn terraform_times_add_plan_and_apply_from_coloured_task_logs() {
        let logs = vec![
            (
                "/live-ci/task/terra-run".to_string(),
                "2026-11-24T06:00:00Z \u{1b}[32m INFO\u{1b}[0m live_ci_task::terra_run: terraform command finished \u{1b}[3mexecution_id\u{1b}[0m\u{1b}[2m=\u{1b}[0mx1 \u{1b}[3mphase\u{1b}[0m\u{1b}[2m=\u{1b}[0mplan \u{1b}[3mcommand_ms\u{1b}[0m\u{1b}[2m=\u{1b}[0m1200".to_string(),
            ),
            (
                "/live-ci/task/terra-run".to_string(),
                "INFO terraform command finished execution_id=x1 phase=apply command_ms=800".to_string(),
            ),
            ("/live-ci/task/terra-run".to_string(), "INFO something else execution_id=x2 command_ms=5".to_string()),
        ];
        let t = terraform_times(&logs);
        assert_eq!(t.get("x1"), Some(&2000.0));
        assert!(!t.contains_key("x2"));
    }

    #[test]
    fn lambda_durations_come_from_report_lines_by_function() {
        let logs = vec![
            (
                "/live-ci/lambda/trigger-sf".to_string(),
                "REPORT RequestId: 1\tDuration: 12.50 ms\tBilled Duration: 13 ms".to_string(),
            ),
            (
                "/live-ci/lambda/trigger-sf".to_string(),
                "START RequestId: 1".to_string(),
            ),
            (
                "/live-ci/lambda/receiver".to_string(),
                "REPORT RequestId: 2\tDuration: 40.00 ms".to_string(),
            ),
        ];
        let d = lambda_durations(&logs);
        assert_eq!(d["trigger-sf"], vec![12.5]);
        assert_eq!(d["receiver"], vec![40.0]);
    }
    #[test]
    fn json_log_records_count_like_text_lines() {
        let logs = vec![
            (
                "/live-ci/task/terra-run".to_string(),
                r#"{"timestamp":"2026-11-24T06:00:00Z","level":"INFO","fields":{"message":"terraform command finished","execution_id":"x1","phase":"plan","command_ms":1200},"target":"live_ci_task::terra_run"}"#.to_string(),
            ),
            (
                "/live-ci/task/terra-run".to_string(),
                r#"{"level":"INFO","message":"terraform command finished","execution_id":"x1","command_ms":"300"}"#.to_string(),
            ),
            (
                "/live-ci/lambda/trigger-sf".to_string(),
                r#"{"time":"2026-11-24T06:00:01Z","type":"platform.report","record":{"requestId":"1","metrics":{"durationMs":12.5,"billedDurationMs":13}}}"#.to_string(),
            ),
            (
                "/live-ci/lambda/trigger-sf".to_string(),
                r#"{"time":"2026-11-24T06:00:00Z","type":"platform.start","record":{"requestId":"1"}}"#.to_string(),
            ),
        ];
        assert_eq!(terraform_times(&logs).get("x1"), Some(&1500.0));
        assert_eq!(lambda_durations(&logs)["trigger-sf"], vec![12.5]);
    }

    #[test]
    fn the_unit_shaped_floor_chains_three_tasks_through_choices() {
        let doc = floor_definition("http://q", 3);
        let names = live_ci_stepfunctions::asl::check(&doc.to_string()).unwrap();
        assert_eq!(
            names.into_iter().collect::<Vec<_>>(),
            ["Choice 0", "Choice 1", "Stop", "Task 0", "Task 1", "Task 2"]
        );
        assert_eq!(doc["States"]["Task 0"]["Next"], "Choice 0");
        assert_eq!(doc["States"]["Choice 1"]["Choices"][0]["Next"], "Task 2");
        assert_eq!(doc["States"]["Task 2"]["End"], true);
        let one = floor_definition("http://q", 1);
        assert_eq!(one["States"]["Task 0"]["End"], true);
        assert_eq!(one["States"].as_object().unwrap().len(), 2);
    }

    #[test]
    fn an_executions_time_splits_into_parts_that_add_up() {
        let state = |name: &str, entered: f64, exited: f64| StateTime {
            state: name.into(),
            total_ms: exited - entered,
            to_submitted_ms: Some(100.0),
            submitted_at_ms: Some(entered + 100.0),
            exited_at_ms: exited,
        };
        let states = vec![
            state("Plan", 0.0, 1000.0),
            state("Request Approval", 1100.0, 2000.0),
            state("Apply", 2050.0, 2700.0),
        ];
        let timeline = |phase: &str| {
            let (started, answered) = match phase {
                "plan" => (300.0, 900.0),
                _ => (2100.0, 2600.0),
            };
            Some(TaskTimeline {
                execution_id: "x".into(),
                phase: phase.into(),
                started_ms: started,
                marks: vec![("answered".into(), answered - started)],
            })
        };
        let split = split_execution(2800.0, 400.0, &states, timeline);
        assert_eq!(split.total, 2800.0);
        assert_eq!(split.terraform, 400.0);
        // plan 600 + apply 500 in the tasks, less terraform's 400
        assert_eq!(split.task_code, 700.0);
        // plan 1000 - 600, apply 650 - 500
        assert_eq!(split.task_dispatch, 550.0);
        assert_eq!(split.approval, 900.0);
        assert_eq!(split.transitions, 250.0);
        assert_eq!(
            split.terraform
                + split.task_code
                + split.task_dispatch
                + split.approval
                + split.transitions,
            split.total
        );
        // A task without its timeline counts whole as dispatch.
        let untimed = split_execution(2800.0, 0.0, &states, |_| None);
        assert_eq!(untimed.task_dispatch, 1650.0);
        assert_eq!(untimed.task_code, 0.0);
    }

    #[test]
    fn each_task_state_is_timed_as_its_phase() {
        assert_eq!(task_phase("Plan"), Some("plan"));
        assert_eq!(task_phase("Apply"), Some("apply"));
        assert_eq!(task_phase("Request Approval"), None);
    }

    #[test]
    fn state_times_split_each_task_state_at_its_submission() {
        let ev = |k: &str, n: Option<&str>, at: f64| (k.to_string(), n.map(str::to_string), at);
        let history = vec![
            ev("ExecutionStarted", None, 0.0),
            ev("TaskStateEntered", Some("Plan"), 10.0),
            ev("TaskScheduled", None, 200.0),
            ev("TaskSubmitted", None, 400.0),
            ev("TaskSucceeded", None, 1600.0),
            ev("TaskStateExited", None, 1610.0),
            ev("ChoiceStateEntered", Some("Plan Changes"), 1610.0),
            ev("TaskStateEntered", Some("Request Approval"), 1700.0),
            ev("TaskStateExited", None, 2500.0),
        ];
        assert_eq!(
            state_times(&history),
            vec![
                StateTime {
                    state: "Plan".into(),
                    total_ms: 1600.0,
                    to_submitted_ms: Some(390.0),
                    submitted_at_ms: Some(400.0),
                    exited_at_ms: 1610.0,
                },
                StateTime {
                    state: "Request Approval".into(),
                    total_ms: 800.0,
                    to_submitted_ms: None,
                    submitted_at_ms: None,
                    exited_at_ms: 2500.0,
                },
            ]
        );
    }
}
