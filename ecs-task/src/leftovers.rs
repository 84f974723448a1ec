//! Processes the plan left behind, found and killed before the plan task may
//! stay up for its apply. The plan command runs repository code under the
//! read-only plan role (a `data "external"` program, a provider); a process it
//! detaches (double fork, `setsid`, its pipes closed) outlives it, and in this
//! same container, with the same uid, could read `/proc/<pid>/environ` of the
//! apply command that follows: the apply role's credentials. A new apply task
//! never shares a container with the plan, so the hand-off is offered only
//! when no such process is left.
//!
//! terra-run makes itself the *child subreaper* of its descendants
//! ([`Subreaper::adopt`], `PR_SET_CHILD_SUBREAPER`): whatever the plan
//! orphans is re-parented to it, not to the container's init, so once none of
//! its own commands runs, every child it still has is a leftover.

use std::fmt;
use std::time::{Duration, Instant};

/// One process as its `/proc/<pid>/stat` line reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    pub pid: i32,
    /// The process state letter (`R`, `S`, `D`, `T`, `Z`, ...).
    pub state: char,
    pub ppid: i32,
    /// The executable's name as the kernel keeps it (at most 15 bytes).
    pub comm: String,
}

impl Stat {
    /// A zombie has exited: nothing of it runs or reads any more.
    pub fn is_live(&self) -> bool {
        self.state != 'Z' && self.state != 'X'
    }
}

/// Parses a `/proc/<pid>/stat` line: `pid (comm) state ppid ...`. The name
/// may hold spaces and parentheses, so it ends at the line's *last* `)`.
pub fn parse_stat(line: &str) -> Option<Stat> {
    let (pid, rest) = line.split_once(" (")?;
    let close = rest.rfind(')')?;
    let comm = &rest[..close];
    let mut fields = rest[close + 1..].split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some(Stat {
        pid: pid.trim().parse().ok()?,
        state,
        ppid,
        comm: comm.to_string(),
    })
}

/// A process left behind by the plan, as the warning names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    pub pid: i32,
    /// Its command line (`/proc/<pid>/cmdline`), else its name.
    pub command: String,
}

impl fmt::Display for Leftover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pid {} {:?}", self.pid, self.command)
    }
}

/// Why the hand-off is not offered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// This process could not be made the subreaper of its descendants: an
    /// orphan would escape the scan, so none is trusted to be absent.
    NotASubreaper(String),
    /// `/proc` could not be read.
    Scan(String),
    /// Processes the plan left; they were killed (those in `survivors` did
    /// not die in time).
    LeftBehind {
        killed: Vec<Leftover>,
        survivors: Vec<i32>,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NotASubreaper(why) => write!(
                f,
                "terra-run is not the child subreaper of its commands ({why}), so a process the plan left could not be found"
            ),
            Refusal::Scan(why) => write!(f, "cannot list this task's processes: {why}"),
            Refusal::LeftBehind { killed, survivors } => {
                let list: Vec<String> = killed.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "the plan left {} process(es) running: {}; killed",
                    killed.len(),
                    list.join(", ")
                )?;
                if !survivors.is_empty() {
                    write!(f, " (not yet dead: pids {survivors:?})")?;
                }
                Ok(())
            }
        }
    }
}

/// This process as the adoptive parent of everything its commands orphan.
#[derive(Debug)]
pub struct Subreaper {
    /// This process's pid once it is the subreaper; why not otherwise.
    adopted: Result<i32, String>,
}

/// Rounds of scan-and-kill: a leftover's own children are re-parented to us
/// only once it dies, so each round finds the next generation.
const ROUNDS: usize = 64;
/// How long a SIGKILLed process may take to become reapable.
const REAP_WITHIN: Duration = Duration::from_secs(5);

impl Subreaper {
    /// Makes this process the child subreaper of its descendants; to be called
    /// at start, before any command runs.
    pub fn adopt() -> Self {
        Subreaper {
            adopted: become_subreaper(),
        }
    }

    /// Why this process is not the subreaper, if it is not.
    pub fn refused(&self) -> Option<&str> {
        self.adopted.as_ref().err().map(String::as_str)
    }

    /// Kills and reaps every live child of this process (by then none of its
    /// own commands runs, so each one is a leftover of the plan). `Ok` only
    /// when there was none and the process is the subreaper: then no process
    /// of the plan is alive in this task.
    pub async fn clear(&self) -> Result<(), Refusal> {
        let me = match &self.adopted {
            Ok(pid) => *pid,
            Err(why) => return Err(Refusal::NotASubreaper(why.clone())),
        };
        let mut killed = Vec::new();
        let mut survivors = Vec::new();
        for _ in 0..ROUNDS {
            let children = live_children(me).map_err(Refusal::Scan)?;
            if children.is_empty() {
                survivors.clear();
                break;
            }
            let mut round = Vec::new();
            for child in children {
                if kill(child.pid) {
                    round.push(child.pid);
                }
                if !killed.iter().any(|k: &Leftover| k.pid == child.pid) {
                    killed.push(Leftover {
                        pid: child.pid,
                        command: command_line(child.pid).unwrap_or(child.comm),
                    });
                }
            }
            survivors = reap(round).await;
        }
        if killed.is_empty() {
            Ok(())
        } else {
            Err(Refusal::LeftBehind { killed, survivors })
        }
    }
}

#[cfg(target_os = "linux")]
fn become_subreaper() -> Result<i32, String> {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))
        .map_err(|e| format!("prctl(PR_SET_CHILD_SUBREAPER): {e}"))?;
    Ok(rustix::process::getpid().as_raw_pid())
}

#[cfg(not(target_os = "linux"))]
fn become_subreaper() -> Result<i32, String> {
    Err(format!(
        "a child subreaper needs linux, not {:?}",
        std::env::consts::OS
    ))
}

/// The live children of `parent`, from every `/proc/<pid>/stat`.
fn live_children(parent: i32) -> Result<Vec<Stat>, String> {
    let entries = std::fs::read_dir("/proc").map_err(|e| format!("reading \"/proc\": {e}"))?;
    let mut children = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("reading \"/proc\": {e}"))?;
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        // A process that ended since the listing has no stat any more.
        let Ok(line) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let stat = parse_stat(&line)
            .ok_or_else(|| format!("\"/proc/{pid}/stat\" does not parse: {line:?}"))?;
        if stat.ppid == parent && stat.is_live() {
            children.push(stat);
        }
    }
    Ok(children)
}

fn command_line(pid: i32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let words: Vec<String> = raw
        .split(|b| *b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// SIGKILL; false when the process is already gone.
#[cfg(target_os = "linux")]
fn kill(pid: i32) -> bool {
    use rustix::process::{Pid, Signal, kill_process};
    Pid::from_raw(pid).is_some_and(|p| kill_process(p, Signal::KILL).is_ok())
}

#[cfg(not(target_os = "linux"))]
fn kill(_pid: i32) -> bool {
    false
}

/// Reaps each killed child by its own pid (never `waitpid(-1)`, which would
/// take the exit of a child tokio waits for); returns those not reaped in
/// time. A child's pid stays ours until reaped, so none was reused meanwhile.
async fn reap(mut pending: Vec<i32>) -> Vec<i32> {
    let deadline = Instant::now() + REAP_WITHIN;
    loop {
        pending.retain(|pid| !reaped(*pid));
        if pending.is_empty() || Instant::now() >= deadline {
            return pending;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[cfg(target_os = "linux")]
fn reaped(pid: i32) -> bool {
    use rustix::process::{Pid, WaitOptions, waitpid};
    let Some(p) = Pid::from_raw(pid) else {
        return true;
    };
    // `Err` is ECHILD: not (or no longer) our child.
    !matches!(waitpid(Some(p), WaitOptions::NOHANG), Ok(None))
}

#[cfg(not(target_os = "linux"))]
fn reaped(_pid: i32) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_parses_with_spaces_and_parentheses_in_the_name() {
        let line = "4242 (my (odd) prog) S 17 4242 4242 0 -1 4194560 101 0 0 0 0 0 0 0 20 0 1 0 \
                    123 4096 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                pid: 4242,
                state: 'S',
                ppid: 17,
                comm: "my (odd) prog".into(),
            })
        );
        let zombie = parse_stat("77 (sleep) Z 1 77 77 0 -1").unwrap();
        assert!(!zombie.is_live());
        assert!(parse_stat("77 (sleep) R 1 77 77").unwrap().is_live());
        assert!(parse_stat("77 (sleep) T 1").unwrap().is_live(), "stopped");
    }

    #[test]
    fn a_malformed_stat_line_is_none() {
        for bad in [
            "",
            "77",
            "77 (sleep",
            "x (sleep) S 1",
            "77 (sleep) S",
            "77 (sleep) S x",
        ] {
            assert_eq!(parse_stat(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn this_process_is_found_as_its_parents_child() {
        let me = i32::try_from(std::process::id()).unwrap();
        let line = std::fs::read_to_string(format!("/proc/{me}/stat")).unwrap();
        let stat = parse_stat(&line).unwrap();
        assert_eq!(stat.pid, me);
        let children = live_children(stat.ppid).unwrap();
        assert!(children.iter().any(|c| c.pid == me), "{children:?}");
    }

    /// Fail closed: without the subreaper an orphan escapes the scan, so
    /// nothing is scanned and the hand-off is refused, saying why.
    #[tokio::test]
    async fn without_the_subreaper_the_hand_off_is_refused() {
        let refused = Subreaper {
            adopted: Err("prctl(PR_SET_CHILD_SUBREAPER): permission denied".into()),
        };
        assert_eq!(
            refused.refused(),
            Some("prctl(PR_SET_CHILD_SUBREAPER): permission denied")
        );
        let refusal = refused.clear().await.unwrap_err();
        assert!(matches!(&refusal, Refusal::NotASubreaper(_)), "{refusal:?}");
        assert!(
            refusal.to_string().contains("permission denied"),
            "{refusal}"
        );
    }

    #[test]
    fn the_refusal_names_the_pids_and_commands() {
        let refusal = Refusal::LeftBehind {
            killed: vec![Leftover {
                pid: 31,
                command: "sleep 300".into(),
            }],
            survivors: vec![],
        };
        assert_eq!(
            refusal.to_string(),
            "the plan left 1 process(es) running: pid 31 \"sleep 300\"; killed"
        );
    }
}
