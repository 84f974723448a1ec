//! The benchmark's split of a task state: the terra-run's "task timeline" log
//! line (marks since the process started) joined with the state's Step
//! Functions events, so a Plan or Apply state's time reads as launch (task
//! submitted → process started), each step of the task, and the state
//! machine's reaction (token answered → state exited).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::bench::{field, percentile};

/// One terra-run's timeline, as logged.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskTimeline {
    /// The execution the task ran for.
    pub execution_id: String,
    /// `plan` or `apply`.
    pub phase: String,
    /// When the process started (epoch ms).
    pub started_ms: f64,
    /// Step name → ms since the process started, in order.
    pub marks: Vec<(String, f64)>,
}

impl TaskTimeline {
    /// When the step ended (epoch ms).
    pub fn at(&self, step: &str) -> Option<f64> {
        self.marks
            .iter()
            .find(|(n, _)| n == step)
            .map(|(_, ms)| self.started_ms + ms)
    }
}

/// The "task timeline" lines of the task logs (text lines with `key=value`
/// fields, ANSI colours already stripped).
pub fn task_timelines(lines: &[String]) -> Vec<TaskTimeline> {
    lines
        .iter()
        .filter(|l| l.contains("task timeline"))
        .filter_map(|l| {
            let marks = field(l, "marks")?
                .split(',')
                .filter_map(|m| m.split_once(':'))
                .map(|(n, at)| Some((n.to_string(), at.parse::<f64>().ok()?)))
                .collect::<Option<Vec<_>>>()?;
            Some(TaskTimeline {
                execution_id: field(l, "execution_id")?.to_string(),
                phase: field(l, "phase")?.to_string(),
                started_ms: field(l, "started_epoch_ms")?.parse().ok()?,
                marks,
            })
        })
        .collect()
}

/// One phase's steps over the executions of a run (ms).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PhaseSteps {
    /// Step → its durations (from the previous step's end; the first from the
    /// process start), with "launch" (task submitted → process started) first
    /// and "exit" (token answered → state exited) last.
    pub steps: BTreeMap<String, Vec<f64>>,
    /// Step names in the order the longest timeline has them.
    pub order: Vec<String>,
}

impl PhaseSteps {
    /// Adds one task: its timeline, and where known when its task was
    /// submitted and when its state exited (epoch ms).
    pub fn add(&mut self, t: &TaskTimeline, submitted_ms: Option<f64>, exited_ms: Option<f64>) {
        let mut order = vec!["launch".to_string()];
        if let Some(submitted) = submitted_ms {
            self.push("launch", t.started_ms - submitted);
        }
        let mut previous = 0.0;
        for (name, at) in &t.marks {
            self.push(name, at - previous);
            previous = *at;
            order.push(name.clone());
        }
        if let (Some(answered), Some(exited)) = (t.at("answered"), exited_ms) {
            self.push("exit", exited - answered);
        }
        order.push("exit".to_string());
        if order.len() > self.order.len() {
            self.order = order;
        }
    }

    fn push(&mut self, step: &str, ms: f64) {
        self.steps.entry(step.to_string()).or_default().push(ms);
    }

    /// `step p50, …` in order (ms), and the number of tasks.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for step in &self.order {
            if let Some(samples) = self.steps.get(step) {
                if !out.is_empty() {
                    out.push_str(", ");
                }
                let _ = write!(out, "{step} {:.0}", percentile(samples, 50.0));
            }
        }
        out
    }

    /// Tasks measured (the process start is in every timeline).
    pub fn tasks(&self) -> usize {
        self.order
            .get(1)
            .and_then(|s| self.steps.get(s))
            .map_or(0, Vec::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeline_line_is_split_into_steps_with_launch_and_exit() {
        let lines = vec![
            "INFO live_ci_task::timeline: task timeline execution_id=x1 phase=plan started_epoch_ms=10000 marks=config:5,execution:40,terraform:540,answered:600".to_string(),
            "INFO live_ci_task::terra_run: terraform command finished execution_id=x1".to_string(),
        ];
        let timelines = task_timelines(&lines);
        assert_eq!(timelines.len(), 1);
        let t = &timelines[0];
        assert_eq!((t.execution_id.as_str(), t.phase.as_str()), ("x1", "plan"));
        assert_eq!(t.at("answered"), Some(10600.0));
        let mut steps = PhaseSteps::default();
        steps.add(t, Some(9700.0), Some(10650.0));
        assert_eq!(
            steps.render(),
            "launch 300, config 5, execution 35, terraform 500, answered 60, exit 50"
        );
        assert_eq!(steps.tasks(), 1);
    }

    #[test]
    fn a_malformed_timeline_is_skipped() {
        let lines = vec![
            "INFO task timeline execution_id=x1 phase=plan started_epoch_ms=1 marks=config:x"
                .to_string(),
            "INFO task timeline execution_id=x2 phase=plan marks=config:1".to_string(),
        ];
        assert!(task_timelines(&lines).is_empty());
    }
}
