//! Runs one plan or apply command through `sh -c` (templates are
//! configuration, and `terraform init && terraform plan` must be expressible),
//! streaming its output to our stdout ([`crate::output`]; CloudWatch in AWS) while keeping it for
//! the summary line, and calling back periodically while it runs (heartbeats).
//!
//! A task stopped by ECS (StopTask, a Fargate Spot reclaim) gets SIGTERM, then
//! SIGKILL after the container's stop timeout. A running command is asked to
//! stop as Ctrl-C would ask it: SIGINT to its process group, so terraform
//! finishes what is in flight, writes its state and releases its lock instead
//! of dying mid-apply; its end is reported as [`Finished::interrupted`].

use std::future::Future;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use std::collections::VecDeque;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};

use crate::error::{Result, TaskError};
use crate::output::say;

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// The exit code; `None` when a signal ended it (or we stopped it).
    pub code: Option<i32>,
    /// Stdout and stderr, interleaved as lines arrived.
    pub output: String,
    /// How long the command ran (the terraform time `make bench-pipeline` sums).
    pub elapsed: Duration,
    /// The task got SIGTERM while the command ran and passed it on as SIGINT.
    pub interrupted: bool,
}

/// The longest line kept whole: a longer one (no newline for megabytes) is
/// cut into lines of this size, so one line never takes unbounded memory.
pub(crate) const MAX_LINE_BYTES: usize = 64 * 1024;

/// How much output [`Finished::output`] keeps: the last lines up to this size
/// (the summary and the errors are at the end); the earlier ones are counted
/// and named in a first line, never kept, so a child printing without end
/// cannot exhaust the task's memory. Every line still streams to stdout.
pub(crate) const MAX_OUTPUT_BYTES: usize = 8 * 1024 * 1024;

/// Lines in flight between the pipes' readers and the collector: a child
/// faster than our stdout waits on its pipe instead of filling memory.
const LINES_IN_FLIGHT: usize = 256;

/// The last [`MAX_OUTPUT_BYTES`] of a command's output, and a count of the rest.
#[derive(Debug, Default)]
struct Tail {
    lines: VecDeque<String>,
    bytes: usize,
    dropped_lines: u64,
    dropped_bytes: u64,
}

impl Tail {
    fn push(&mut self, line: String) {
        self.bytes += line.len() + 1;
        self.lines.push_back(line);
        while self.bytes > MAX_OUTPUT_BYTES {
            let Some(old) = self.lines.pop_front() else {
                break;
            };
            self.bytes -= old.len() + 1;
            self.dropped_lines += 1;
            self.dropped_bytes += old.len() as u64 + 1;
        }
    }

    fn into_output(self) -> String {
        let mut out = String::with_capacity(self.bytes + 100);
        if self.dropped_lines > 0 {
            out.push_str(&format!(
                "[live-ci: {} earlier line(s), {} bytes, not kept; the task's log has them]\n",
                self.dropped_lines, self.dropped_bytes
            ));
        }
        for line in self.lines {
            out.push_str(&line);
            out.push('\n');
        }
        out
    }
}

impl Finished {
    /// The last lines of the output, for error messages.
    pub fn tail(&self, lines: usize) -> String {
        let all: Vec<&str> = self
            .output
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

/// What the periodic callback decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tick {
    /// Someone still waits for the result: let the command run.
    Continue,
    /// Nobody waits for the result any more: stop the command.
    Stop,
}

/// Runs `command` in `dir` with exactly the environment `env` (nothing of
/// ours is inherited: see [`crate::sandbox::env_for`]); `tick` is awaited
/// every `every` while it runs. Output lines go to stdout ([`crate::output`])
/// prefixed with `prefix`.
pub async fn run<F, Fut>(
    command: &str,
    dir: &Path,
    env: &[(String, String)],
    prefix: &str,
    every: Duration,
    mut tick: F,
) -> Result<Finished>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Tick>,
{
    let started = std::time::Instant::now();
    // Listened to before the spawn, so no SIGTERM falls between the two.
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .inspect_err(|e| {
            tracing::warn!(error = %e, "cannot listen for SIGTERM: a stopped task kills its command");
        })
        .ok();
    let mut child = spawn(command, dir, env)?;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<String>(LINES_IN_FLIGHT);
    let mut pumps = Vec::new();
    if let Some(out) = child.stdout.take() {
        pumps.push(pump(out, tx.clone()));
    }
    if let Some(err) = child.stderr.take() {
        pumps.push(pump(err, tx.clone()));
    }
    drop(tx);
    let mut output = Tail::default();
    let mut interval = tokio::time::interval(every);
    interval.tick().await;
    let mut stopped = false;
    let mut interrupted = false;
    loop {
        tokio::select! {
            line = rx.recv() => match line {
                Some(line) => {
                    say!("{prefix}{line}");
                    output.push(line);
                }
                None => break,
            },
            _ = interval.tick(), if !stopped => {
                if tick().await == Tick::Stop {
                    stopped = true;
                    if let Some(pid) = child.id() {
                        let _ = signal_group(pid, "TERM").await;
                    }
                    let _ = child.start_kill();
                }
            }
            Some(()) = async { terminate.as_mut()?.recv().await }, if !interrupted && !stopped => {
                interrupted = true;
                interrupt(child.id(), command).await;
            }
        }
    }
    for p in pumps {
        let _ = p.await;
    }
    let status = wait(&mut child, command).await?;
    Ok(Finished {
        code: if stopped { None } else { status.code() },
        output: output.into_output(),
        elapsed: started.elapsed(),
        interrupted,
    })
}

/// Reads `reader` line by line (a line longer than [`MAX_LINE_BYTES`] in
/// pieces of it) into `tx`, until the end or the receiver is gone.
fn pump(
    reader: impl AsyncRead + Unpin + Send + 'static,
    tx: tokio::sync::mpsc::Sender<String>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut reader = BufReader::new(reader);
        let mut buf = Vec::with_capacity(1024);
        loop {
            buf.clear();
            // At most MAX_LINE_BYTES per read: a longer line arrives in pieces.
            let mut limited = (&mut reader).take(MAX_LINE_BYTES as u64);
            match limited.read_until(b'\n', &mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if buf.ends_with(b"\n") {
                buf.pop();
                if buf.ends_with(b"\r") {
                    buf.pop();
                }
            }
            let line = String::from_utf8_lossy(&buf).into_owned();
            if tx.send(line).await.is_err() {
                break;
            }
        }
    })
}

/// SIGINT to the command's process group (the shell leads it): once only, as
/// a second interrupt makes terraform exit at once.
async fn interrupt(pid: Option<u32>, command: &str) {
    let Some(pid) = pid else {
        return;
    };
    match signal_group(pid, "INT").await {
        Ok(()) => {
            tracing::warn!(
                command,
                "SIGTERM: the command is asked to stop (SIGINT to its process group)"
            );
            say!(
                "live-ci: the task is being stopped (SIGTERM): interrupting {command:?} so it can stop cleanly"
            );
        }
        Err(e) => tracing::warn!(error = %e, command, "SIGTERM: interrupting the command"),
    }
}

/// Sends `signal` (as `kill` names it, e.g. `INT`) to the process group that
/// `pid` leads: the shell and everything it started. Sent by this process
/// itself: the command may run as the child user, which only a process
/// holding `CAP_KILL` (this one, not a program it starts) may signal.
async fn signal_group(pid: u32, signal: &str) -> std::io::Result<()> {
    use rustix::process::{Pid, Signal, kill_process_group};
    let sig = match signal {
        "INT" => Signal::INT,
        "TERM" => Signal::TERM,
        _ => Signal::KILL,
    };
    let group = i32::try_from(pid)
        .ok()
        .and_then(Pid::from_raw)
        .ok_or_else(|| std::io::Error::other(format!("no such process group {pid}")))?;
    kill_process_group(group, sig)
        .map_err(|e| std::io::Error::other(format!("signal {signal} to process group {pid}: {e}")))
}

/// Like [`run`] without a callback.
pub(crate) async fn run_quietly(
    command: &str,
    dir: &Path,
    env: &[(String, String)],
    prefix: &str,
) -> Result<Finished> {
    run(
        command,
        dir,
        env,
        prefix,
        Duration::from_secs(3600),
        || async { Tick::Continue },
    )
    .await
}

/// The most of a command's stdout [`capture`] keeps (the JSON of `terraform
/// show -json` of one unit's saved plan; a plan of several thousand resources
/// is a few MiB). At the cap the command is stopped and [`Captured::overflow`]
/// says so, so a child writing without end costs at most this much memory.
pub(crate) const MAX_CAPTURE_BYTES: usize = 64 * 1024 * 1024;

/// A command's stdout as [`capture`] kept it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// At most [`MAX_CAPTURE_BYTES`] (of `cap` in [`capture_with_cap`]).
    pub stdout: String,
    /// The output went past the cap: the command was stopped there and
    /// `stdout` is incomplete (at least this many bytes were written).
    pub overflow: Option<u64>,
}

/// Runs `command` like [`run`] but keeps its stdout apart (a machine-readable
/// answer such as `terraform show -json`, too large for the log), up to
/// [`MAX_CAPTURE_BYTES`], and logs only its stderr, prefixed (kept like
/// [`run`]'s output: the last [`MAX_OUTPUT_BYTES`], the rest counted).
pub(crate) async fn capture(
    command: &str,
    dir: &Path,
    env: &[(String, String)],
    prefix: &str,
) -> Result<(Finished, Captured)> {
    capture_with_cap(command, dir, env, prefix, MAX_CAPTURE_BYTES).await
}

/// [`capture`] with another cap on stdout (tests).
pub(crate) async fn capture_with_cap(
    command: &str,
    dir: &Path,
    env: &[(String, String)],
    prefix: &str,
    cap: usize,
) -> Result<(Finished, Captured)> {
    let started = std::time::Instant::now();
    let mut child = spawn(command, dir, env)?;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<String>(LINES_IN_FLIGHT);
    let stderr_pump = child.stderr.take().map(|err| pump(err, tx));
    let stdout = child.stdout.take();
    let pid = child.id();
    let read_stdout = read_capped(stdout, cap, pid);
    let log_stderr = async {
        let mut tail = Tail::default();
        while let Some(line) = rx.recv().await {
            say!("{prefix}{line}");
            tail.push(line);
        }
        tail
    };
    let ((kept, overflow), tail) = tokio::join!(read_stdout, log_stderr);
    if overflow.is_some() {
        // The shell itself, should the group's signal not have reached it.
        let _ = child.start_kill();
    }
    if let Some(p) = stderr_pump {
        let _ = p.await;
    }
    let status = wait(&mut child, command).await?;
    Ok((
        Finished {
            code: if overflow.is_some() {
                None
            } else {
                status.code()
            },
            output: tail.into_output(),
            elapsed: started.elapsed(),
            interrupted: false,
        },
        Captured {
            stdout: String::from_utf8_lossy(&kept).into_owned(),
            overflow,
        },
    ))
}

/// Starts `sh -c command` in `dir` as the child user
/// ([`crate::sandbox::command`]) with exactly `env`, both outputs piped.
fn spawn(command: &str, dir: &Path, env: &[(String, String)]) -> Result<tokio::process::Child> {
    crate::sandbox::command("sh", dir, env)
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        // Its own process group, so stopping it (a tick's `Stop`, the capture
        // cap) stops what the shell started.
        .process_group(0)
        .spawn()
        .map_err(|e| TaskError::Spawn {
            command: command.to_string(),
            message: format!("in {:?}: {e}", dir.display().to_string()),
        })
}

/// Waits for the command's exit, after its output is read.
async fn wait(
    child: &mut tokio::process::Child,
    command: &str,
) -> Result<std::process::ExitStatus> {
    child.wait().await.map_err(|e| TaskError::Spawn {
        command: command.to_string(),
        message: e.to_string(),
    })
}

/// Reads `stdout` up to `cap` bytes; past the cap, kills the process group
/// `pid` and returns how many bytes it had written by then.
async fn read_capped(
    stdout: Option<tokio::process::ChildStdout>,
    cap: usize,
    pid: Option<u32>,
) -> (Vec<u8>, Option<u64>) {
    let mut kept = Vec::new();
    let Some(mut stdout) = stdout else {
        return (kept, None);
    };
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match stdout.read(&mut chunk).await {
            Ok(0) | Err(_) => return (kept, None),
            Ok(n) if kept.len() + n <= cap => kept.extend_from_slice(&chunk[..n]),
            Ok(n) => {
                let seen = (kept.len() + n) as u64;
                let room = cap.saturating_sub(kept.len()).min(n);
                kept.extend_from_slice(&chunk[..room]);
                // Stopped here: draining it could take forever.
                if let Some(pid) = pid {
                    let _ = signal_group(pid, "KILL").await;
                }
                return (kept, Some(seen));
            }
        }
    }
}

/// The error for a command that exited other than with `ok` codes.
pub fn failed(command: &str, dir: &Path, finished: &Finished) -> TaskError {
    TaskError::CommandFailed {
        command: command.to_string(),
        dir: dir.display().to_string(),
        code: finished
            .code
            .map_or_else(|| "a signal".to_string(), |c| format!("code {c}")),
        tail: finished.tail(5),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn captures_both_streams_and_the_exit_code() {
        let dir = std::env::temp_dir();
        let f = run_quietly("echo out; echo err >&2; exit 3", &dir, &[], "| ")
            .await
            .unwrap();
        assert_eq!(f.code, Some(3));
        assert!(f.output.contains("out\n") && f.output.contains("err\n"));
        let env = vec![("LIVE_CI_X".to_string(), "y z".to_string())];
        let f = run_quietly("printf '%s' \"$LIVE_CI_X\"", &dir, &env, "")
            .await
            .unwrap();
        assert_eq!(f.output, "y z\n");
        // Exactly the given environment: nothing of this process leaks in.
        let f = run_quietly("printf '%s' \"${CARGO:-unset}\"", &dir, &env, "")
            .await
            .unwrap();
        assert_eq!(f.output, "unset\n");
    }

    /// A child printing without end (one 3 MB line without a newline, then
    /// 12 MB of lines) leaves at most MAX_OUTPUT_BYTES in memory: the last
    /// lines, whole, behind a first line that counts the rest.
    #[tokio::test]
    async fn output_is_kept_up_to_a_cap_and_the_rest_summarised() {
        let dir = std::env::temp_dir();
        let env = vec![("PATH".to_string(), "/usr/bin:/bin".to_string())];
        let f = run_quietly(
            "head -c 3000000 /dev/zero | tr '\\0' a; echo; \
             yes 0123456789012345678901234567890123456789 | head -n 300000; echo the end",
            &dir,
            &env,
            "",
        )
        .await
        .unwrap();
        assert_eq!(f.code, Some(0));
        assert!(
            f.output.len() <= MAX_OUTPUT_BYTES + 200,
            "{}",
            f.output.len()
        );
        assert!(
            f.output.len() > MAX_OUTPUT_BYTES - 1000,
            "{}",
            f.output.len()
        );
        let first = f.output.lines().next().unwrap();
        assert!(
            first.starts_with("[live-ci: ")
                && first.ends_with(" not kept; the task's log has them]"),
            "{first}"
        );
        assert!(
            f.output
                .ends_with("0123456789012345678901234567890123456789\nthe end\n")
        );
        // no kept line is longer than the line cap
        assert!(f.output.lines().all(|l| l.len() <= MAX_LINE_BYTES));
        assert_eq!(f.tail(1), "the end");
    }

    /// `capture` keeps stdout up to its cap and stops a child writing without
    /// end there (`yes`), and keeps stderr like `run` (12 MB of lines: the
    /// last MAX_OUTPUT_BYTES behind a count of the rest).
    #[tokio::test]
    async fn capture_stops_at_its_cap_and_keeps_a_bounded_stderr() {
        let dir = std::env::temp_dir();
        let env = vec![("PATH".to_string(), "/usr/bin:/bin".to_string())];
        let cap = 1024 * 1024;
        // 20 MB to a 1 MiB cap: 1 MiB kept, the rest counted, not kept.
        let (_, out) = capture_with_cap("yes | head -c 20000000", &dir, &env, "", cap)
            .await
            .unwrap();
        assert_eq!(out.stdout.len(), cap);
        assert!(out.overflow.is_some());
        // Without end: stopped at the cap.
        let (f, out) = capture_with_cap(
            "yes 0123456789012345678901234567890123456789 | head -n 300000 >&2; yes",
            &dir,
            &env,
            "",
            cap,
        )
        .await
        .unwrap();
        assert_eq!(out.stdout.len(), cap);
        assert!(out.overflow.unwrap() > cap as u64, "{:?}", out.overflow);
        assert_eq!(f.code, None, "stopped at the cap");
        assert!(
            f.output.len() <= MAX_OUTPUT_BYTES + 200,
            "{}",
            f.output.len()
        );
        assert!(f.output.starts_with("[live-ci: "), "{}", &f.output[..100]);
        // Under the cap: all of it, and the exit code.
        let (f, out) = capture_with_cap("printf 'a\nb'; echo err >&2; exit 3", &dir, &env, "", cap)
            .await
            .unwrap();
        assert_eq!(
            (out.stdout.as_str(), out.overflow, f.code),
            ("a\nb", None, Some(3))
        );
        assert_eq!(f.output, "err\n");
    }

    /// A line longer than the cap arrives in pieces of the cap, nothing lost.
    #[tokio::test]
    async fn a_line_longer_than_the_cap_is_cut_not_lost() {
        let dir = std::env::temp_dir();
        let env = vec![("PATH".to_string(), "/usr/bin:/bin".to_string())];
        let f = run_quietly(
            &format!("head -c {} /dev/zero | tr '\\0' b", MAX_LINE_BYTES * 2 + 10),
            &dir,
            &env,
            "",
        )
        .await
        .unwrap();
        let lens: Vec<usize> = f.output.lines().map(str::len).collect();
        assert_eq!(lens, [MAX_LINE_BYTES, MAX_LINE_BYTES, 10]);
    }

    #[tokio::test]
    async fn ticks_while_running_and_stops_when_told() {
        let dir = std::env::temp_dir();
        let ticks = Arc::new(AtomicU32::new(0));
        let t = ticks.clone();
        let started = std::time::Instant::now();
        let env = crate::sandbox::env_for(None, &[]);
        let f = run(
            "sleep 20",
            &dir,
            &env,
            "",
            Duration::from_millis(50),
            move || {
                let t = t.clone();
                async move {
                    if t.fetch_add(1, Ordering::SeqCst) >= 2 {
                        Tick::Stop
                    } else {
                        Tick::Continue
                    }
                }
            },
        )
        .await
        .unwrap();
        assert_eq!(f.code, None);
        assert_eq!(ticks.load(Ordering::SeqCst), 3);
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}
