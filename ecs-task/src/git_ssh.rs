//! The SSH deploy key for private `git::ssh://` module sources: the module
//! injects it as `GIT_SSH_KEY` (an ECS secret, never plain environment); the
//! task loads it into an `ssh-agent` running as the child user ([`child_env`])
//! and gives terraform and terragrunt a `GIT_SSH_COMMAND` that signs through
//! that agent alone, and accepts only the pinned host keys (`SSH_KNOWN_HOSTS`,
//! by default GitHub's published keys): a fresh container has no known host,
//! so `accept-new` would trust whichever server answered first.
//!
//! What the child can do with the agent: ask it to sign (so clone whatever the
//! key may read) while the job's commands run. What it cannot: read the key —
//! it is in no file or environment of the child, and the agent is
//! non-dumpable, so its `/proc/<pid>/mem` and `environ` are root's.

use std::path::Path;

use live_ci_core::terraform::shell_quote;

use live_ci_core::settings::ConfigError;

use crate::error::{Result, TaskError};
use crate::output::say;

/// The variable the module's `git_ssh_key_arn` fills.
pub const ENV: &str = "GIT_SSH_KEY";

/// The module's `ssh_known_hosts`: known_hosts lines the SSH module sources'
/// servers must present; unset or empty means [`GITHUB_KNOWN_HOSTS`].
pub(crate) const KNOWN_HOSTS_ENV: &str = "SSH_KNOWN_HOSTS";

/// GitHub's published SSH host keys, from
/// <https://docs.github.com/en/authentication/keeping-your-account-and-data-secure/githubs-ssh-key-fingerprints>
/// (also `GET https://api.github.com/meta`, `ssh_keys`). Their fingerprints,
/// as published there and as `ssh-keygen -lf` prints them:
/// SHA256:+DiY3wvvV6TuJJhbpZisF/zLDA0zPMSvHdkr4UvCOqU (Ed25519),
/// SHA256:p2QAMXNIC1TJYWeIOttrVc98/R1BUFWu3/LiyKgUfQM (ECDSA),
/// SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s (RSA).
pub(crate) const GITHUB_KNOWN_HOSTS: &str = "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl
github.com ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBEmKSENjQEezOmxkZMy7opKgwFB9nkt5YRrYMjNuG5N87uRgg6CLrbo5wAdT/y6v0mKV0U2w0WZ2YB/++Tpockg=
github.com ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQCj7ndNxQowgcQnjshcLrqPEiiphnt+VTTvDP6mHBL9j1aNUkY4Ue1gvwnGLVlOhGeYrnZaMgRK6+PKCUXaDbC7qtbW8gIkhL7aGCsOr/C56SJMy/BCZfxd1nWzAOxSDPgVsmerOBYfNqltV9/hWCqBywINIR+5dIg6JTJ72pcEpEjcYgXkE2YEFXV1JHnsKgbLWNlhScqb2UmyRkQyytRLtL+38TGxkxCflmO+5Z8CSSNY7GidjMIZ7Q4zMjA2n1nGrlTDkzwDCsw+wqFPGQA179cnfGWOWRVruj16z6XyvxvjJwbz0wQZ75XK5tKSb7FNyeIEs4TT4jk+S4dhPeAUC5y+bDYirYgM4GC7uEnztnZyaVWQ7B381AK4Qdrwt51ZqExKbQpTUNn+EjqoTwvqNj4kqx5QUCI0ThS/YkOxJCXmPUWZbhjpCg56i+2aB6CmK2JGhn57K5mj0MNdBXA4/WnwH6XoPWJzK5Nyu2zB3nAZp+S5hpQs+p1vN1/wsjk=
";

/// The pinned host keys: known_hosts lines, each `<hosts> <key type> <key>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownHosts(String);

impl KnownHosts {
    /// The configured lines (`SSH_KNOWN_HOSTS`), or GitHub's keys when unset
    /// or empty. A line that is not `<hosts> <key type> <key>` is refused,
    /// naming its number.
    pub fn parse(configured: Option<&str>) -> std::result::Result<Self, ConfigError> {
        let text = configured
            .filter(|t| !t.trim().is_empty())
            .unwrap_or(GITHUB_KNOWN_HOSTS);
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            let first_is_marker = fields.first().is_some_and(|f| f.starts_with('@'));
            let needed = if first_is_marker { 4 } else { 3 };
            if fields.len() < needed {
                return Err(ConfigError::Invalid {
                    name: KNOWN_HOSTS_ENV,
                    value: line.chars().take(80).collect(),
                    reason: format!(
                        "line {} is not \"<hosts> <key type> <base64 key>\" (a known_hosts line)",
                        i + 1
                    ),
                });
            }
        }
        Ok(KnownHosts(format!("{}\n", text.trim_end())))
    }
}

impl Default for KnownHosts {
    fn default() -> Self {
        KnownHosts(GITHUB_KNOWN_HOSTS.to_string())
    }
}

/// The private key, kept out of `Debug` output (the configuration is logged).
#[derive(Clone, PartialEq, Eq)]
pub struct SshKey(String);

impl SshKey {
    /// Wraps the key as read from `GIT_SSH_KEY`.
    pub(crate) fn new(key: String) -> Self {
        SshKey(key)
    }

    /// The key itself, for the agent only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SshKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SshKey(redacted)")
    }
}

/// Whether a job's repository code may use the deploy key (through the
/// agent): merged code (terra-run, create-deploy-stack's plan scan) may; a
/// pull request's plan only for a trusted head (`LIVE_CI_HEAD_TRUSTED`), like
/// the HTTPS module-source token — a maintainer's `/live-ci plan` of a fork's
/// code gets none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyUse {
    /// Offered to the repository code's SSH module sources.
    Allowed,
    /// Why not, said in the task's output.
    Withheld(&'static str),
}

/// What the child's git gets for SSH module sources: its environment, and the
/// agent that holds the key while the commands run. Dropping it kills the
/// agent (its whole process group) and removes its socket's directory: keep
/// it until the last command that may clone has ended.
#[derive(Debug, Default)]
pub struct SshAccess {
    env: Vec<(String, String)>,
    agent: Option<Agent>,
}

impl SshAccess {
    /// The child environment entries (`GIT_SSH_COMMAND`).
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// The agent's process id, if one was started.
    pub fn agent_pid(&self) -> Option<u32> {
        self.agent.as_ref().map(|a| a.pid)
    }
}

/// An `ssh-agent` running as the child user, holding the deploy key.
#[derive(Debug)]
struct Agent {
    pid: u32,
    child: tokio::process::Child,
    /// Removed after the agent is killed.
    _dir: tempfile::TempDir,
}

impl Drop for Agent {
    fn drop(&mut self) {
        // The agent leads its own process group: the group goes, whatever it
        // started. Sent by this process, which holds CAP_KILL (the agent runs
        // as another uid); `kill_on_drop` is the fallback for the leader.
        if let Some(group) = i32::try_from(self.pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            && let Err(e) =
                rustix::process::kill_process_group(group, rustix::process::Signal::KILL)
        {
            tracing::warn!(error = %e, pid = self.pid, "stopping the ssh agent's process group");
        }
        let _ = self.child.start_kill();
    }
}

/// The longest socket path the kernel binds (`sun_path`, 108 bytes with the
/// final NUL).
const MAX_SOCKET_PATH: usize = 107;

/// How long the agent may take to listen, and `ssh-add` to load the key.
const AGENT_START: std::time::Duration = std::time::Duration::from_secs(10);

/// SSH access for the child's git: with a deploy key and `key_use` allowing
/// it, an `ssh-agent` started **as the child user** (OpenSSH's agent answers
/// only peers of its own uid or root, and makes itself non-dumpable, so the
/// child may ask it to sign but can read the key neither from its memory nor
/// its environment), fed the key by `ssh-add -` (also the child user) through
/// its stdin alone: the key is never in a file or an environment the child
/// could read. This is done before any of the job's repository code runs, in
/// a directory of unpredictable name the child's group may not list.
///
/// The child's `GIT_SSH_COMMAND` then authenticates through the agent's
/// socket only (`IdentityAgent`), accepts only the pinned host keys (`hosts`,
/// written read-only to `<dir>.hosts/known_hosts`), never prompts
/// (`BatchMode`) and reads no ssh configuration the child could write. With
/// the key withheld the command is the same without an agent: a clone of an
/// SSH source fails with ssh's own "Permission denied (publickey)". Without a
/// key, nothing.
pub async fn child_env(
    key: Option<&SshKey>,
    hosts: &KnownHosts,
    dir: &Path,
    key_use: KeyUse,
) -> Result<SshAccess> {
    let Some(key) = key.map(|k| k.expose().trim()).filter(|k| !k.is_empty()) else {
        return Ok(SshAccess::default());
    };
    // A key pasted without its armour would make ssh fail with a vague
    // "invalid format" deep inside terraform init; say it here instead.
    if !key.starts_with("-----BEGIN ") || !key.contains("PRIVATE KEY-----") {
        return Err(TaskError::Config(ConfigError::Invalid {
            name: ENV,
            value: "(secret)".into(),
            reason: "not a PEM/OpenSSH private key (no \"-----BEGIN ... PRIVATE KEY-----\" line)"
                .into(),
        }));
    }
    let known_hosts = write_known_hosts(hosts, &dir.with_extension("hosts"))?;
    let agent = match key_use {
        KeyUse::Allowed => Some(start_agent(key, dir).await?),
        KeyUse::Withheld(why) => {
            say!(
                "live-ci: the SSH deploy key is not offered to this plan's git::ssh:// module sources: {why}"
            );
            None
        }
    };
    let mut command = String::from("ssh -F /dev/null");
    match &agent {
        Some(agent) => command.push_str(&format!(
            " -o IdentityAgent={}",
            shell_quote(&agent.socket.display().to_string())
        )),
        None => command.push_str(" -o IdentityAgent=none"),
    }
    command.push_str(&format!(
        " -o StrictHostKeyChecking=yes -o UserKnownHostsFile={} -o GlobalKnownHostsFile=/dev/null -o BatchMode=yes -o PasswordAuthentication=no -o KbdInteractiveAuthentication=no",
        shell_quote(&known_hosts.display().to_string())
    ));
    Ok(SshAccess {
        env: vec![("GIT_SSH_COMMAND".to_string(), command)],
        agent: agent.map(|a| a.agent),
    })
}

struct Started {
    agent: Agent,
    socket: std::path::PathBuf,
}

/// Starts the agent as the child user in a new directory beside `dir` and
/// loads `key` into it through `ssh-add -`'s stdin.
async fn start_agent(key: &str, dir: &Path) -> Result<Started> {
    let parent = dir.parent().unwrap_or(dir);
    let (agent_dir, socket) = agent_dir(dir, parent)?;
    let agent = spawn_agent(parent, &socket, agent_dir).await?;
    load_key(parent, &socket, key).await?;
    Ok(Started { agent, socket })
}

fn spawn_failed(what: &str, e: String) -> TaskError {
    TaskError::Spawn {
        command: what.to_string(),
        message: e,
    }
}

/// The agent's directory and socket path. Unpredictable and unlistable by the
/// child's group (0730: it may create the agent's socket and pass through,
/// not list): a process of the child user left over from earlier cannot
/// find the socket to stand in for the agent before the key is loaded.
fn agent_dir(dir: &Path, parent: &Path) -> Result<(tempfile::TempDir, std::path::PathBuf)> {
    let prefix = format!(
        "{}-agent.",
        dir.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "ssh".into())
    );
    let agent_dir = tempfile::Builder::new()
        .prefix(&prefix)
        .tempdir_in(parent)
        .map_err(|e| TaskError::file("creating", parent, e))?;
    crate::sandbox::share_read_only(agent_dir.path(), 0o730)?;
    let socket = agent_dir.path().join("agent.sock");
    let socket_str = socket.display().to_string();
    if socket_str.len() > MAX_SOCKET_PATH {
        return Err(TaskError::Io(format!(
            "the ssh agent's socket path {socket_str:?} is longer than the {MAX_SOCKET_PATH} bytes a unix socket may have"
        )));
    }
    Ok((agent_dir, socket))
}

/// Runs `ssh-agent -D` (in the foreground, this process its parent: no
/// daemon to lose) as the child user, and waits until it listens (it prints
/// its variables then).
async fn spawn_agent(parent: &Path, socket: &Path, agent_dir: tempfile::TempDir) -> Result<Agent> {
    use tokio::io::AsyncBufReadExt;
    let mut child = crate::sandbox::command("ssh-agent", parent, &[])
        .arg("-D")
        .arg("-a")
        .arg(socket)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .process_group(0)
        .spawn()
        .map_err(|e| spawn_failed("ssh-agent", e.to_string()))?;
    let pid = child
        .id()
        .ok_or_else(|| spawn_failed("ssh-agent", "exited at once".into()))?;
    let stdout = child.stdout.take();
    let agent = Agent {
        pid,
        child,
        _dir: agent_dir,
    };
    let listening = async {
        let Some(stdout) = stdout else {
            return false;
        };
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        matches!(lines.next_line().await, Ok(Some(line)) if line.starts_with("SSH_AUTH_SOCK="))
    };
    if !tokio::time::timeout(AGENT_START, listening)
        .await
        .unwrap_or(false)
    {
        return Err(spawn_failed(
            "ssh-agent",
            format!("did not listen on {:?}", socket.display().to_string()),
        ));
    }
    Ok(agent)
}

/// Loads `key` into the agent through `ssh-add -`'s stdin; a key the agent
/// refuses is a configuration error that names no part of the key.
async fn load_key(parent: &Path, socket: &Path, key: &str) -> Result<()> {
    use tokio::io::AsyncWriteExt;
    let env = [("SSH_AUTH_SOCK".to_string(), socket.display().to_string())];
    let mut add = crate::sandbox::command("ssh-add", parent, &env)
        .arg("-q")
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| spawn_failed("ssh-add -", e.to_string()))?;
    let loaded = async {
        if let Some(mut stdin) = add.stdin.take() {
            // ssh needs the final newline that secret stores tend to strip.
            stdin
                .write_all(format!("{key}\n").as_bytes())
                .await
                .map_err(|e| e.to_string())?;
            stdin.shutdown().await.map_err(|e| e.to_string())?;
        }
        add.wait_with_output().await.map_err(|e| e.to_string())
    };
    let output = tokio::time::timeout(AGENT_START, loaded)
        .await
        .map_err(|_| spawn_failed("ssh-add -", "did not load the key in time".into()))?
        .map_err(|e| spawn_failed("ssh-add -", e))?;
    if output.status.success() {
        return Ok(());
    }
    Err(TaskError::Config(ConfigError::Invalid {
        name: ENV,
        value: "(secret)".into(),
        reason: format!(
            "the ssh agent refused it: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ),
    }))
}

/// `hosts` as `<dir>/known_hosts`: the directory and file the task's, their
/// group the child's (read only), so ssh in the child reads the pins and
/// nothing the child runs can add a key to them.
fn write_known_hosts(hosts: &KnownHosts, dir: &Path) -> Result<std::path::PathBuf> {
    std::fs::create_dir_all(dir).map_err(|source| TaskError::file("creating", dir, source))?;
    let path = dir.join("known_hosts");
    std::fs::write(&path, &hosts.0).map_err(|source| TaskError::file("writing", &path, source))?;
    crate::sandbox::share_read_only(dir, 0o750)?;
    crate::sandbox::share_read_only(&path, 0o640)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A throwaway key, made by ssh-keygen for the test.
    fn test_key(dir: &Path) -> String {
        let path = dir.join("test-only-key");
        let out = std::process::Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", "test-only", "-f"])
            .arg(&path)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(out.status.success(), "{out:?}");
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"))
    }

    fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{e}")) {
            let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
            if path.is_dir() {
                out.extend(files_under(&path));
            } else {
                out.push(path);
            }
        }
        out
    }

    #[tokio::test]
    async fn the_key_goes_to_an_agent_through_stdin_and_is_in_no_file() {
        let keys = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let key = test_key(keys.path());
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let none = child_env(None, &KnownHosts::default(), dir.path(), KeyUse::Allowed)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(none.env().is_empty() && none.agent_pid().is_none());

        let access = child_env(
            Some(&SshKey::new(key.trim().to_string())),
            &KnownHosts::default(),
            &dir.path().join("ssh"),
            KeyUse::Allowed,
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        let command = &access.env()[0].1;
        assert_eq!(access.env()[0].0, "GIT_SSH_COMMAND");
        let socket = command
            .split("IdentityAgent=")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .map(|s| s.trim_matches('\'').to_string())
            .unwrap_or_else(|| panic!("no IdentityAgent in {command}"));
        assert!(!command.contains(" -i "), "no key file: {command}");
        assert!(command.contains("-F /dev/null") && command.contains("BatchMode=yes"));
        // The agent holds exactly the key.
        let listed = std::process::Command::new("ssh-add")
            .arg("-l")
            .env("SSH_AUTH_SOCK", &socket)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        let listed = String::from_utf8_lossy(&listed.stdout);
        let fingerprint = std::process::Command::new("ssh-keygen")
            .arg("-lf")
            .arg(keys.path().join("test-only-key"))
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        let fingerprint = String::from_utf8_lossy(&fingerprint.stdout);
        let fingerprint = fingerprint.split_whitespace().nth(1).unwrap_or("?");
        assert!(listed.contains(fingerprint), "{listed} lacks {fingerprint}");
        assert_eq!(listed.lines().count(), 1, "{listed}");
        // Nothing under the scratch directory holds the key.
        let secret = key.lines().nth(1).unwrap_or_else(|| panic!("{key}"));
        for file in files_under(dir.path()) {
            let bytes = std::fs::read(&file).unwrap_or_default();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(secret),
                "{} holds the key",
                file.display()
            );
        }
        // Dropped: the agent is gone, and its directory with it.
        let pid = access.agent_pid().unwrap_or_else(|| panic!("no agent"));
        drop(access);
        let proc = std::path::PathBuf::from(format!("/proc/{pid}"));
        for _ in 0..100 {
            let state = std::fs::read_to_string(proc.join("stat")).unwrap_or_default();
            // Gone, or a zombie its (dropped) parent handle no longer reaps.
            if state.is_empty() || state.contains(") Z ") {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let state = std::fs::read_to_string(proc.join("stat")).unwrap_or_default();
        assert!(state.is_empty() || state.contains(") Z "), "{state}");
        assert!(!Path::new(&socket).exists(), "{socket}");

        let err = child_env(
            Some(&SshKey::new("ssh-ed25519 AAAA public".into())),
            &KnownHosts::default(),
            &dir.path().join("x"),
            KeyUse::Allowed,
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("GIT_SSH_KEY"), "{err}");
        assert!(
            !err.to_string().contains("AAAA"),
            "the secret is never echoed: {err}"
        );
        assert_eq!(format!("{:?}", SshKey::new(key)), "SshKey(redacted)");
    }

    #[tokio::test]
    async fn a_withheld_key_starts_no_agent() {
        let keys = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let key = test_key(keys.path());
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let access = child_env(
            Some(&SshKey::new(key)),
            &KnownHosts::default(),
            &dir.path().join("ssh"),
            KeyUse::Withheld("a fork's code"),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(access.agent_pid().is_none());
        let command = &access.env()[0].1;
        assert!(command.contains("IdentityAgent=none"), "{command}");
        assert!(command.contains("StrictHostKeyChecking=yes"), "{command}");
    }

    #[tokio::test]
    async fn only_the_pinned_host_keys_are_accepted_from_a_file_the_child_cannot_write() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----";
        let access = child_env(
            Some(&SshKey::new(key.into())),
            &KnownHosts::parse(None).unwrap_or_else(|e| panic!("{e}")),
            &dir.path().join("ssh"),
            KeyUse::Withheld("test"),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        let command = &access.env()[0].1;
        let hosts = dir.path().join("ssh.hosts/known_hosts");
        assert!(command.contains("StrictHostKeyChecking=yes"), "{command}");
        assert!(!command.contains("accept-new"), "{command}");
        assert!(
            command.contains(&format!("UserKnownHostsFile={}", hosts.display()))
                && command.contains("GlobalKnownHostsFile=/dev/null"),
            "{command}"
        );
        let written = std::fs::read_to_string(&hosts).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(written, GITHUB_KNOWN_HOSTS);
        // GitHub's keys as ssh itself reads them, with the published fingerprints.
        let out = std::process::Command::new("ssh-keygen")
            .arg("-lf")
            .arg(&hosts)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        let listed = String::from_utf8_lossy(&out.stdout);
        for fingerprint in [
            "SHA256:+DiY3wvvV6TuJJhbpZisF/zLDA0zPMSvHdkr4UvCOqU",
            "SHA256:p2QAMXNIC1TJYWeIOttrVc98/R1BUFWu3/LiyKgUfQM",
            "SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s",
        ] {
            assert!(
                listed.contains(fingerprint),
                "{fingerprint} not in {listed}"
            );
        }
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| {
            std::fs::metadata(p)
                .unwrap_or_else(|e| panic!("{e}"))
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(mode(&hosts) & 0o022, 0, "no one else may write the pins");
        assert_eq!(mode(hosts.parent().unwrap_or(&hosts)) & 0o022, 0);

        let own = "git.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";
        let configured = KnownHosts::parse(Some(own)).unwrap_or_else(|e| panic!("{e}"));
        child_env(
            Some(&SshKey::new(key.into())),
            &configured,
            &dir.path().join("own"),
            KeyUse::Withheld("test"),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("own.hosts/known_hosts"))
                .unwrap_or_else(|e| panic!("{e}")),
            format!("{own}\n")
        );
        let err = KnownHosts::parse(Some("# pins\ngit.example.com ssh-ed25519"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("SSH_KNOWN_HOSTS") && err.contains("line 2"),
            "{err}"
        );
    }
}
