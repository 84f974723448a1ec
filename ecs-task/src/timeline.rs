//! Where a task's time goes: named marks since the process started, logged as
//! one "task timeline" line at the end of a terra-run, which `make
//! bench-pipeline` reads to split a task state's time into launch, start-up,
//! git, terraform and reporting (create-deploy-stack logs its own line).

use std::sync::{Mutex, OnceLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

struct Timeline {
    started: Instant,
    started_epoch_ms: u128,
    marks: Mutex<Vec<(&'static str, u128)>>,
}

// A process-wide clock rather than a parameter: the marks come from main, the
// handlers and their helpers, and threading one value through every port
// signature for a diagnostic line would cost more than it tells.
static TIMELINE: OnceLock<Timeline> = OnceLock::new();

fn timeline() -> &'static Timeline {
    TIMELINE.get_or_init(|| Timeline {
        started: Instant::now(),
        started_epoch_ms: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis()),
        marks: Mutex::new(Vec::new()),
    })
}

/// Starts the clock (the first call wins; call it first thing in `main`).
pub fn start() {
    timeline();
}

/// Records that the step `name` ended now.
pub fn mark(name: &'static str) {
    let t = timeline();
    let at = t.started.elapsed().as_millis();
    if let Ok(mut marks) = t.marks.lock() {
        marks.push((name, at));
    }
}

/// The marks so far as `name:ms,…` (milliseconds since the start, in order).
pub fn render() -> String {
    let t = timeline();
    t.marks
        .lock()
        .map(|marks| {
            marks
                .iter()
                .map(|(name, at)| format!("{name}:{at}"))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

/// Logs the timeline of a terra-run (keep the message and field names stable:
/// the benchmark parses them).
pub fn log(execution_id: &str, phase: &str) {
    tracing::info!(
        execution_id = %execution_id,
        phase = %phase,
        started_epoch_ms = u64::try_from(timeline().started_epoch_ms).unwrap_or(u64::MAX),
        marks = %render(),
        "task timeline"
    );
}

/// Logs create-deploy-stack's timeline (its checkout, pack and upload) under
/// a message of its own, so the benchmark's terra-run parser passes it by.
pub fn log_create_deploy_stack(commit: &str) {
    tracing::info!(
        commit = %commit,
        started_epoch_ms = u64::try_from(timeline().started_epoch_ms).unwrap_or(u64::MAX),
        marks = %render(),
        "create-deploy-stack timeline"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_rendered_in_order_with_growing_times() {
        start();
        mark("first");
        std::thread::sleep(std::time::Duration::from_millis(5));
        mark("second");
        let rendered = render();
        let parsed: Vec<(&str, u128)> = rendered
            .split(',')
            .filter_map(|m| m.split_once(':'))
            .map(|(n, at)| (n, at.parse().expect("ms")))
            .collect();
        let first = parsed.iter().find(|(n, _)| *n == "first").expect("first");
        let second = parsed.iter().find(|(n, _)| *n == "second").expect("second");
        assert!(second.1 >= first.1 + 5, "{rendered}");
    }
}
