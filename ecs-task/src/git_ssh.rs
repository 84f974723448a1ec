//! The SSH deploy key for private `git::ssh://` module sources: the module
//! injects it as `GIT_SSH_KEY` (an ECS secret, never plain environment); the
//! task writes it to an owner-only file in the checkout's scratch directory
//! and gives terraform and terragrunt a `GIT_SSH_COMMAND` that uses only it,
//! and accepts only the pinned host keys (`SSH_KNOWN_HOSTS`, by default
//! GitHub's published keys): a fresh container has no known host, so
//! `accept-new` would trust whichever server answered first.

use std::io::Write;
use std::path::Path;

use live_ci_core::terraform::shell_quote;

use live_ci_core::settings::ConfigError;

use crate::error::{Result, TaskError};

/// The variable the module's `git_ssh_key_arn` fills.
pub const ENV: &str = "GIT_SSH_KEY";

/// The module's `ssh_known_hosts`: known_hosts lines the SSH module sources'
/// servers must present; unset or empty means [`GITHUB_KNOWN_HOSTS`].
pub const KNOWN_HOSTS_ENV: &str = "SSH_KNOWN_HOSTS";

/// GitHub's published SSH host keys, from
/// <https://docs.github.com/en/authentication/keeping-your-account-and-data-secure/githubs-ssh-key-fingerprints>
/// (also `GET https://api.github.com/meta`, `ssh_keys`). Their fingerprints,
/// as published there and as `ssh-keygen -lf` prints them:
/// SHA256:+DiY3wvvV6TuJJhbpZisF/zLDA0zPMSvHdkr4UvCOqU (Ed25519),
/// SHA256:p2QAMXNIC1TJYWeIOttrVc98/R1BUFWu3/LiyKgUfQM (ECDSA),
/// SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s (RSA).
pub const GITHUB_KNOWN_HOSTS: &str = "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl
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
    pub fn new(key: String) -> Self {
        SshKey(key)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SshKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SshKey(redacted)")
    }
}

/// Writes `key` into `dir` (the task's alone) and the pinned `hosts` into
/// `<dir>-hosts/known_hosts` (readable by the child user, not writable), and
/// returns the child environment that makes git use both; nothing when no key
/// is configured.
pub fn child_env(
    key: Option<&SshKey>,
    hosts: &KnownHosts,
    dir: &Path,
) -> Result<Vec<(String, String)>> {
    let Some(key) = key.map(|k| k.expose().trim()).filter(|k| !k.is_empty()) else {
        return Ok(Vec::new());
    };
    // A key pasted without its armour would make ssh fail with a vague
    // "invalid format" deep inside terraform init; say it here instead.
    if !key.starts_with("-----BEGIN ") || !key.contains("PRIVATE KEY-----") {
        return Err(TaskError::Config(
            live_ci_core::settings::ConfigError::Invalid {
                name: ENV,
                value: "(secret)".into(),
                reason:
                    "not a PEM/OpenSSH private key (no \"-----BEGIN ... PRIVATE KEY-----\" line)"
                        .into(),
            },
        ));
    }
    std::fs::create_dir_all(dir).map_err(|source| TaskError::file("creating", dir, source))?;
    // The task's alone: the child user may not pass through it.
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|source| TaskError::file("protecting", dir, source))?;
    }
    let path = dir.join("git_ssh_key");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // ssh refuses a key file that others can read.
        options.mode(0o600);
    }
    let mut file = options
        .open(&path)
        .map_err(|source| TaskError::file("writing", &path, source))?;
    // ssh needs the final newline that secret stores tend to strip.
    file.write_all(format!("{key}\n").as_bytes())
        .map_err(|source| TaskError::file("writing", &path, source))?;
    if crate::sandbox::child_user().is_some() {
        // The key file is the task's alone: the child user cannot read it, so
        // ssh in the child cannot use it yet (an agent it may use without
        // reading the key is still to do). Said, not silently broken.
        tracing::warn!(
            "GIT_SSH_KEY is set, but git::ssh module sources cannot use it under the child user"
        );
        println!(
            "live-ci: warning: GIT_SSH_KEY is set, but the commands run as the child user, which cannot read the key: git::ssh:// module sources will fail to clone"
        );
    }
    let known_hosts = write_known_hosts(hosts, &dir.with_extension("hosts"))?;
    let command = format!(
        "ssh -i {} -o IdentitiesOnly=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile={} -o GlobalKnownHostsFile=/dev/null -o BatchMode=yes",
        shell_quote(&path.display().to_string()),
        shell_quote(&known_hosts.display().to_string())
    );
    Ok(vec![("GIT_SSH_COMMAND".to_string(), command)])
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

    #[test]
    fn the_key_is_written_owner_only_and_used_alone() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert!(
            child_env(None, &KnownHosts::default(), dir.path())
                .unwrap_or_else(|e| panic!("{e}"))
                .is_empty()
        );
        let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----";
        let env = child_env(
            Some(&SshKey::new(key.into())),
            &KnownHosts::default(),
            &dir.path().join("ssh"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(env[0].0, "GIT_SSH_COMMAND");
        let path = dir.path().join("ssh/git_ssh_key");
        assert!(
            env[0].1.contains(&format!("-i {}", path.display())),
            "{env:?}"
        );
        assert!(env[0].1.contains("IdentitiesOnly=yes"));
        assert_eq!(format!("{:?}", SshKey::new(key.into())), "SshKey(redacted)");
        let written = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(written, format!("{key}\n"));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path)
            .unwrap_or_else(|e| panic!("{e}"))
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let err = child_env(
            Some(&SshKey::new("ssh-ed25519 AAAA public".into())),
            &KnownHosts::default(),
            &dir.path().join("x"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("GIT_SSH_KEY"), "{err}");
        assert!(
            !err.to_string().contains("AAAA"),
            "the secret is never echoed: {err}"
        );
    }

    #[test]
    fn only_the_pinned_host_keys_are_accepted_from_a_file_the_child_cannot_write() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----";
        let env = child_env(
            Some(&SshKey::new(key.into())),
            &KnownHosts::parse(None).unwrap_or_else(|e| panic!("{e}")),
            &dir.path().join("ssh"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let command = &env[0].1;
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
        )
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
