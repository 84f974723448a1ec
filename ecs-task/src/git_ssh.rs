//! The SSH deploy key for private `git::ssh://` module sources: the module
//! injects it as `GIT_SSH_KEY` (an ECS secret, never plain environment); the
//! task writes it to an owner-only file in the checkout's scratch directory
//! and gives terraform and terragrunt a `GIT_SSH_COMMAND` that uses only it.

use std::io::Write;
use std::path::Path;

use live_ci_core::terraform::shell_quote;

use crate::error::{Result, TaskError};

/// The variable the module's `git_ssh_key_arn` fills.
pub const ENV: &str = "GIT_SSH_KEY";

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

/// Writes `key` into `dir` and returns the child environment that makes git
/// use it; nothing when no key is configured.
pub fn child_env(key: Option<&SshKey>, dir: &Path) -> Result<Vec<(String, String)>> {
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
    let command = format!(
        "ssh -i {} -o IdentitiesOnly=yes -o StrictHostKeyChecking=accept-new -o BatchMode=yes",
        shell_quote(&path.display().to_string())
    );
    Ok(vec![("GIT_SSH_COMMAND".to_string(), command)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_written_owner_only_and_used_alone() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert!(
            child_env(None, dir.path())
                .unwrap_or_else(|e| panic!("{e}"))
                .is_empty()
        );
        let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----";
        let env = child_env(Some(&SshKey::new(key.into())), &dir.path().join("ssh"))
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
            &dir.path().join("x"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("GIT_SSH_KEY"), "{err}");
        assert!(
            !err.to_string().contains("AAAA"),
            "the secret is never echoed: {err}"
        );
    }
}
