//! Runs one plan or apply command through `sh -c` (templates are
//! configuration, and `terraform init && terraform plan` must be expressible),
//! streaming its output to our stdout (CloudWatch in AWS) while keeping it for
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
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use crate::error::{Result, TaskError};

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

/// Commands of [`run`] running in this process now.
static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// Whether a command of [`run`] runs now: after SIGTERM, the caller lets it
/// stop by itself rather than dropping it (which would SIGKILL its shell).
pub fn commands_running() -> bool {
    RUNNING.load(Ordering::SeqCst) > 0
}

/// Counts one running command while alive.
struct Running;

impl Running {
    fn start() -> Self {
        RUNNING.fetch_add(1, Ordering::SeqCst);
        Running
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.fetch_sub(1, Ordering::SeqCst);
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
    Continue,
    /// Nobody waits for the result any more: stop the command.
    Stop,
}

/// Runs `command` in `dir` with exactly the environment `env` (nothing of
/// ours is inherited: see [`crate::sandbox::env_for`]); `tick` is awaited
/// every `every` while it runs. Output lines go to stdout prefixed with `prefix`.
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
    let running = Running::start();
    // As the child user (crate::sandbox::command), with exactly `env`.
    let mut child = crate::sandbox::command("sh", dir, env)
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        // Its own process group, so stopping it stops what the shell started.
        .process_group(0)
        .spawn()
        .map_err(|e| TaskError::Spawn {
            command: command.to_string(),
            message: format!("in {:?}: {e}", dir.display().to_string()),
        })?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    fn pump(
        reader: impl AsyncRead + Unpin + Send + 'static,
        tx: tokio::sync::mpsc::UnboundedSender<String>,
    ) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut lines = BufReader::new(reader).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if tx.send(line).is_err() {
                    break;
                }
            }
        })
    }
    let mut pumps = Vec::new();
    if let Some(out) = child.stdout.take() {
        pumps.push(pump(out, tx.clone()));
    }
    if let Some(err) = child.stderr.take() {
        pumps.push(pump(err, tx.clone()));
    }
    drop(tx);
    let mut output = String::new();
    let mut interval = tokio::time::interval(every);
    interval.tick().await;
    let mut stopped = false;
    let mut interrupted = false;
    loop {
        tokio::select! {
            line = rx.recv() => match line {
                Some(line) => {
                    println!("{prefix}{line}");
                    output.push_str(&line);
                    output.push('\n');
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
    let status = child.wait().await.map_err(|e| TaskError::Spawn {
        command: command.to_string(),
        message: e.to_string(),
    })?;
    drop(running);
    Ok(Finished {
        code: if stopped { None } else { status.code() },
        output,
        elapsed: started.elapsed(),
        interrupted,
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
            println!(
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
pub async fn run_quietly(
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

/// Runs `command` like [`run`] but keeps its stdout apart (a machine-readable
/// answer such as `terraform show -json`, too large for the log) and logs
/// only its stderr, prefixed.
pub async fn capture(
    command: &str,
    dir: &Path,
    env: &[(String, String)],
    prefix: &str,
) -> Result<(Finished, String)> {
    let started = std::time::Instant::now();
    // The child user and the whole environment, as for `run`.
    let out = crate::sandbox::command("sh", dir, env)
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| TaskError::Spawn {
            command: command.to_string(),
            message: format!("in {:?}: {e}", dir.display().to_string()),
        })?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    for line in stderr.lines() {
        println!("{prefix}{line}");
    }
    Ok((
        Finished {
            code: out.status.code(),
            output: stderr,
            elapsed: started.elapsed(),
            interrupted: false,
        },
        String::from_utf8_lossy(&out.stdout).into_owned(),
    ))
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
