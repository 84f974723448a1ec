//! Where every binary's log lines go. A Lambda writes one JSON object per
//! line to stdout (the module sets `log_format = "JSON"`); the task writes
//! text lines to stderr, its stdout being the user-facing output (the drift
//! report, `contract`'s JSON, terraform's output). Both are filtered by
//! `RUST_LOG` (`info` otherwise).

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

fn filter() -> EnvFilter {
    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"))
}

/// The subscriber every Lambda logs through: one JSON object per line with
/// `level` and `message` at the top (the keys of Lambda's own JSON log
/// format), no timestamp (CloudWatch adds its own).
pub fn subscriber<W>(writer: W) -> impl tracing::Subscriber + Send + Sync
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_env_filter(filter())
        .without_time()
        .with_writer(writer)
        .finish()
}

/// Turns a Lambda's logging on (stdout, which Lambda sends to CloudWatch).
pub fn lambda() {
    // A second start in one process keeps the first subscriber.
    let _ = tracing::subscriber::set_global_default(subscriber(std::io::stdout));
}

/// Turns the task's logging on (stderr; ECS sends both streams to
/// CloudWatch), with the `log` records of its dependencies forwarded.
pub fn task() {
    // A second start in one process keeps the first subscriber.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter())
        .with_writer(std::io::stderr)
        .try_init();
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A writer into shared memory, so the test reads what was logged.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'w> MakeWriter<'w> for Buffer {
        type Writer = Buffer;
        fn make_writer(&'w self) -> Buffer {
            self.clone()
        }
    }

    #[test]
    fn every_log_line_is_one_json_object_with_level_and_message() {
        let buffer = Buffer::default();
        tracing::subscriber::with_default(subscriber(buffer.clone()), || {
            tracing::info!(run_id = 7, "started\nwith a second line");
            tracing::warn!(error = "boom", "posting a status");
            tracing::debug!("filtered out at the default level");
        });
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0]["level"], "INFO");
        assert_eq!(lines[0]["message"], "started\nwith a second line");
        assert_eq!(lines[0]["run_id"], 7);
        assert_eq!(lines[1]["level"], "WARN");
        assert_eq!(lines[1]["message"], "posting a status");
        assert_eq!(lines[1]["error"], "boom");
        assert!(lines.iter().all(|l| l.get("timestamp").is_none()));
    }
}
