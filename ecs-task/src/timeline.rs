//! Where a task's time goes: named marks since the process started, logged as
//! one "task timeline" line per terra-run phase, which `make bench-pipeline` reads to split a task
//! state's time into launch, start-up, git, terraform and reporting
//! (create-deploy-stack logs a line of its own).

use std::sync::{Mutex, OnceLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

struct Clock {
    started: Instant,
    started_epoch_ms: u128,
    marks: Vec<(&'static str, u128)>,
}

impl Clock {
    fn now() -> Clock {
        Clock {
            started: Instant::now(),
            started_epoch_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis()),
            marks: Vec::new(),
        }
    }
}

// A process-wide clock rather than a parameter: the marks come from main, the
// handlers and their helpers, and threading one value through every port
// signature for a diagnostic line would cost more than it tells.
static TIMELINE: OnceLock<Mutex<Clock>> = OnceLock::new();

fn timeline() -> &'static Mutex<Clock> {
    TIMELINE.get_or_init(|| Mutex::new(Clock::now()))
}

/// Starts the clock (the first call wins; call it first thing in `main`).
pub fn start() {
    timeline();
}

/// Records that the step `name` ended now.
pub fn mark(name: &'static str) {
    if let Ok(mut clock) = timeline().lock() {
        let at = clock.started.elapsed().as_millis();
        clock.marks.push((name, at));
    }
}

/// The marks so far as `name:ms,…` (milliseconds since the start, in order).
pub fn render() -> String {
    timeline()
        .lock()
        .map(|clock| {
            clock
                .marks
                .iter()
                .map(|(name, at)| format!("{name}:{at}"))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

fn started_epoch_ms() -> u64 {
    timeline()
        .lock()
        .map(|clock| u64::try_from(clock.started_epoch_ms).unwrap_or(u64::MAX))
        .unwrap_or_default()
}

/// Logs the timeline of a terra-run (keep the message and field names stable:
/// the benchmark parses them).
pub fn log(execution_id: &str, phase: &str) {
    tracing::info!(
        execution_id = %execution_id,
        phase = %phase,
        started_epoch_ms = started_epoch_ms(),
        marks = %render(),
        "task timeline"
    );
}

/// Logs create-deploy-stack's timeline (its checkout, pack and upload) under
/// a message of its own, so the benchmark's terra-run parser passes it by.
pub(crate) fn log_create_deploy_stack(commit: &str) {
    tracing::info!(
        commit = %commit,
        started_epoch_ms = started_epoch_ms(),
        marks = %render(),
        "create-deploy-stack timeline"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test for the process-wide clock: a second one would add its marks.
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
