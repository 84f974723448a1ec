//! The task's stdout, written here and nowhere else. It is the product, not a
//! log: what a run did ("live-ci: plan saved to …", the drift report,
//! `contract`'s JSON) in order with the commands' own output, streamed to the
//! CloudWatch log stream the commit status and the run page link to, and read
//! back by the task's tests. It stays a raw stream because tracing would
//! change those bytes (a timestamp, a level and a target on every line, on
//! stderr) and would drop them under a stricter `RUST_LOG`. Everything else
//! the task has to say is a log line: `tracing`, to stderr
//! (`live_ci_boot::log::task`). `lib.rs` and `main.rs` deny `print!`/`println!`
//! so a new line comes through here.

use std::fmt;
use std::io::Write;

/// Writes `text` as is, no newline added (the binary's reports, already in
/// lines); a closed stdout is ignored.
pub fn text(text: &str) {
    let mut out = std::io::stdout().lock();
    // stdout gone (a closed pipe): nothing left to tell.
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// Writes one line, `args` and a newline (what [`say!`] expands to), as
/// `println!` does.
// `println!` rather than a write to `stdout()`: the test harness captures what
// it prints (a test's commands stream megabytes), as it did the `println!`s
// this replaces.
#[allow(clippy::print_stdout)]
pub fn line(args: fmt::Arguments<'_>) {
    println!("{args}");
}

/// `println!` for the task's stdout: one line through [`line`].
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::output::line(format_args!($($arg)*))
    };
}
pub(crate) use say;
