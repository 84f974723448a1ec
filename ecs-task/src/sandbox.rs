//! What the plan/apply child process runs as: the unit's account role, assumed
//! here in the task (never by terragrunt with the task's own credentials), an
//! allow-listed environment (`live_ci_task::child_env`) carrying that role's
//! temporary credentials instead of anything the task itself holds, and — when
//! the image configures one (`LIVE_CI_CHILD_UID` / `LIVE_CI_CHILD_GID`) — a
//! separate unprivileged uid that can reach none of the task's own files and
//! processes.
//!
//! Why a separate uid: the environment allow-list decides what the child is
//! *given*, not what it can *reach*. Under the task's own uid, repository code
//! (a `data "external"` program, a provider, pure HCL with `file()`) reads
//! `/proc/<task>/environ` (the container credentials' URI, the deploy key,
//! every secret ECS injects) and the task's home and scratch files. So:
//! - the task makes itself non-dumpable at start ([`forbid_dumps`]): its
//!   `/proc/<pid>/*` become root-owned, and no process of its uid may ptrace it
//!   or read its memory or environment;
//! - before any thread or child exists ([`harden_process`]) the task empties
//!   its inheritable and ambient capability sets (a `setuid` between two
//!   non-zero uids keeps capabilities, capabilities(7), and ambient ones
//!   survive exec), sets `no_new_privs` (no setuid binary or file capability
//!   gives any privilege back, to it or to anything it starts) and, with a
//!   child user, keeps no supplementary group but the child's;
//! - every process of repository code starts through [`command`], which sets
//!   the child uid and gid (real, effective and saved) in the forked child:
//!   its exec then leaves it no capability at all. (The workspace forbids
//!   `unsafe`, so no `pre_exec` hook: the child inherits what the task set on
//!   itself instead.)
//! - the task's own directories stay `0700`; the checkout is shared with the
//!   child through the child's *group* ([`share_checkout`], [`child_dirs`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::OnceLock;

use crate::child_env::child_env;
use live_ci_core::port::{RoleAssumer, TemporaryCredentials, session_name};
use live_ci_core::settings::ConfigError;

use crate::error::{Result, TaskError};

/// The uid repository code runs as (the image sets it).
pub const CHILD_UID: &str = "LIVE_CI_CHILD_UID";
/// The child's gid: the group its directories are shared through.
pub(crate) const CHILD_GID: &str = "LIVE_CI_CHILD_GID";

/// The unprivileged user and group terraform, terragrunt and everything they
/// start run as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChildUser {
    /// `LIVE_CI_CHILD_UID`.
    pub uid: u32,
    /// `LIVE_CI_CHILD_GID`.
    pub gid: u32,
}

impl ChildUser {
    /// Both variables or neither; numbers other than 0 (root).
    pub(crate) fn from_settings(
        uid: Option<String>,
        gid: Option<String>,
    ) -> std::result::Result<Option<Self>, ConfigError> {
        let id = |name: &'static str, value: &str| {
            match value.trim().parse::<u32>() {
                Ok(0) => Err("must not be 0 (root)"),
                Ok(n) => Ok(n),
                Err(_) => Err("not a numeric id"),
            }
            .map_err(|reason| ConfigError::Invalid {
                name,
                value: value.to_string(),
                reason: reason.into(),
            })
        };
        match (uid, gid) {
            (None, None) => Ok(None),
            (Some(uid), Some(gid)) => Ok(Some(ChildUser {
                uid: id(CHILD_UID, &uid)?,
                gid: id(CHILD_GID, &gid)?,
            })),
            (Some(uid), None) => Err(ConfigError::Invalid {
                name: CHILD_UID,
                value: uid,
                reason: format!("{CHILD_GID} must be set with it"),
            }),
            (None, Some(gid)) => Err(ConfigError::Invalid {
                name: CHILD_GID,
                value: gid,
                reason: format!("{CHILD_UID} must be set with it"),
            }),
        }
    }
}

/// The child user of this process, set once at start by [`run_children_as`].
static CHILD: OnceLock<ChildUser> = OnceLock::new();

/// The child user [`command`] starts repository code as, if any.
pub fn child_user() -> Option<ChildUser> {
    CHILD.get().copied()
}

/// Makes every later [`command`] run as `user` (the binary calls it once at
/// start, before any command). `None` keeps repository code on the task's own
/// uid, said loudly: only the environment allow-list then separates them.
pub fn run_children_as(user: Option<ChildUser>) -> Result<()> {
    let Some(user) = user else {
        tracing::warn!(
            "{CHILD_UID} is not set: repository code runs as this task's own user and can read its files"
        );
        return Ok(());
    };
    let me = rustix::process::getuid().as_raw();
    if user.uid == me {
        return Err(TaskError::Config(ConfigError::Invalid {
            name: CHILD_UID,
            value: user.uid.to_string(),
            reason: "is this task's own uid: repository code must run as another user".into(),
        }));
    }
    if CHILD.get_or_init(|| user) != &user {
        return Err(TaskError::Io(
            "the child user is already set to another one".into(),
        ));
    }
    Ok(())
}

/// Makes this process non-dumpable (`PR_SET_DUMPABLE 0`): its `/proc/<pid>`
/// files become root-owned, and no other process of its uid can read its
/// environment or memory or ptrace it. The first thing the binary does.
pub fn forbid_dumps() -> std::io::Result<()> {
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)?;
    Ok(())
}

/// What every process this one starts inherits, set while it has a single
/// thread (capability sets, `no_new_privs` and groups are per thread):
/// - an empty inheritable set, and so an empty ambient set: nothing it
///   starts gets the capabilities it holds (`CAP_SETUID`, `CAP_SETGID`,
///   `CAP_KILL`), which it keeps in its own permitted and effective sets;
/// - `no_new_privs`: no exec of a setuid binary or a file with capabilities
///   raises any privilege, in this process or any descendant;
/// - with a child user: the child's group as its only supplementary group
///   (the task shares the checkout through it; a child started with
///   [`command`] keeps the groups it inherits when the task is not root, so
///   this is the only group besides its own gid it can have), and a umask of
///   `007` (what the child creates stays the group's, which the task deletes
///   with its scratch directories).
pub fn harden_process(user: Option<ChildUser>) -> std::io::Result<()> {
    use rustix::thread::{CapabilitySet, CapabilitySets, capabilities, set_capabilities};
    let current = capabilities(None)?;
    set_capabilities(
        None,
        CapabilitySets {
            inheritable: CapabilitySet::empty(),
            ..current
        },
    )?;
    // Already empty with the inheritable set; said again for kernels whose
    // ambient set is kept apart.
    match rustix::thread::clear_ambient_capability_set() {
        Ok(()) | Err(rustix::io::Errno::INVAL) => {}
        Err(e) => return Err(e.into()),
    }
    rustix::thread::set_no_new_privs(true)?;
    if let Some(user) = user {
        rustix::thread::set_thread_groups(&[rustix::process::Gid::from_raw(user.gid)]).map_err(
            |e| {
                std::io::Error::other(format!(
                    "keeping only the child's group {} (needs CAP_SETGID): {e}",
                    user.gid
                ))
            },
        )?;
        rustix::process::umask(rustix::fs::Mode::from_bits_truncate(0o007));
    }
    Ok(())
}

/// A command of repository code: `program` in `dir` with exactly `env`, as the
/// child user when one is set ([`run_children_as`]).
pub fn command(program: &str, dir: &Path, env: &[(String, String)]) -> tokio::process::Command {
    command_as(child_user(), program, dir, env)
}

/// [`command`] as `user`: the forked child sets its gid, then its uid (real,
/// effective and saved: a process with `CAP_SETUID` sets all three, so no id
/// of the task is left to switch back to) before it execs `program`, which
/// then holds no capability (see [`harden_process`]).
pub(crate) fn command_as(
    user: Option<ChildUser>,
    program: &str,
    dir: &Path,
    env: &[(String, String)],
) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(program);
    cmd.current_dir(dir)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    if let Some(user) = user {
        cmd.gid(user.gid).uid(user.uid);
    }
    cmd
}

/// Directories the child writes in: its group may create entries (setgid: they
/// get its group), and the sticky bit lets it rename or delete only its own.
const CHILD_DIR_MODE: u32 = 0o3770;
/// The largest file the task reads back from the child (a saved plan).
pub(crate) const MAX_CHILD_FILE_BYTES: u64 = 1 << 30;

/// Creates each of `dirs` (with missing parents) as a directory the child may
/// write in: owned by the task, group the child's, [`CHILD_DIR_MODE`]. Without
/// a child user, plain directories.
pub(crate) fn child_dirs(dirs: &[&Path]) -> Result<()> {
    for dir in dirs {
        std::fs::create_dir_all(dir).map_err(|e| TaskError::file("creating", dir, e))?;
        if let Some(user) = child_user() {
            give_group(dir, user, CHILD_DIR_MODE)?;
        }
    }
    Ok(())
}

/// A scratch directory of the task that holds directories of the child:
/// the child's group may pass through it (`0710`) but not list it, so what
/// the task keeps there (the SSH key's directory, `0700`) stays its own.
pub(crate) fn pass_through(scratch: &Path) -> Result<()> {
    match child_user() {
        Some(user) => give_group(scratch, user, 0o710),
        None => Ok(()),
    }
}

/// Shares the checkout at `repo` with the child: every directory of the work
/// tree becomes one the child may create entries in ([`CHILD_DIR_MODE`]:
/// terraform writes `.terraform` and lock files, terragrunt its cache), while
/// the committed files and all of `.git` stay the task's, readable by the
/// child's group and not writable (the sticky bit keeps the child from
/// renaming them away, so `.git` cannot be swapped under the task's own git).
///
/// Why a group, not the child owning the checkout: the task would need
/// `CAP_CHOWN` (or `CAP_FOWNER`) for that; membership of the child's group is
/// no privilege, and the task's own files stay behind its `0700` directories.
pub(crate) fn share_checkout(repo: &Path) -> Result<()> {
    let Some(user) = child_user() else {
        return Ok(());
    };
    share_tree(repo, user, false)
}

fn share_tree(dir: &Path, user: ChildUser, in_git: bool) -> Result<()> {
    give_group(dir, user, if in_git { 0o2750 } else { CHILD_DIR_MODE })?;
    let entries = std::fs::read_dir(dir).map_err(|e| TaskError::file("reading", dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| TaskError::file("reading", dir, e))?;
        let path = entry.path();
        let kind = entry
            .file_type()
            .map_err(|e| TaskError::file("reading", &path, e))?;
        if kind.is_dir() {
            share_tree(&path, user, in_git || entry.file_name() == ".git")?;
        } else if kind.is_symlink() {
            // Never followed; only its group changes.
            std::os::unix::fs::lchown(&path, None, Some(user.gid))
                .map_err(|e| TaskError::file("sharing", &path, e))?;
        } else {
            use std::os::unix::fs::PermissionsExt;
            let mode = entry
                .metadata()
                .map_err(|e| TaskError::file("reading", &path, e))?
                .permissions()
                .mode();
            // Readable (and executable when its owner may run it) by the group.
            let group = 0o040 | if mode & 0o100 != 0 { 0o010 } else { 0 };
            give_group(&path, user, (mode & 0o700) | group)?;
        }
    }
    Ok(())
}

/// Gives `path` to the child's group with `mode` (read access the owner
/// decides), when there is a child user; without one the child is the task's
/// own uid, and `mode` alone applies.
pub(crate) fn share_read_only(path: &Path, mode: u32) -> Result<()> {
    match child_user() {
        Some(user) => give_group(path, user, mode),
        None => {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
                .map_err(|e| TaskError::file("sharing", path, e))
        }
    }
}

/// Gives `path` (not a link) to the child's group with `mode`.
fn give_group(path: &Path, user: ChildUser, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::os::unix::fs::lchown(path, None, Some(user.gid)).map_err(|e| {
        TaskError::Io(format!(
            "giving {:?} to the child's group {} (the task must be a member of it): {e}",
            path.display().to_string(),
            user.gid
        ))
    })?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| TaskError::file("sharing", path, e))
}

/// Reads a file the child wrote (a saved plan) as untrusted input: a link is
/// not followed (it could name the task's own files), a FIFO or device is
/// not opened for reading, a file with other names (a hard link) or larger
/// than `max` bytes is refused.
pub(crate) fn read_child_file(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(i32::try_from(flags.bits()).unwrap_or(0))
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
                std::io::Error::other("it is a symbolic link: not followed")
            } else {
                e
            }
        })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("it is not a regular file"));
    }
    if meta.nlink() != 1 {
        return Err(std::io::Error::other(format!(
            "it has {} names (a hard link): refused",
            meta.nlink()
        )));
    }
    if meta.len() > max {
        return Err(std::io::Error::other(format!(
            "it is {} bytes, more than the {max} read back",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    file.by_ref().take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::other(format!(
            "it grew past the {max} bytes read back"
        )));
    }
    Ok(bytes)
}

/// Assumes `role_arn` for a session named after `label`; `None` for an empty
/// role (a unit whose account names none runs without AWS credentials).
pub async fn assume<R: RoleAssumer>(
    roles: &R,
    role_arn: &str,
    label: &str,
) -> Result<Option<TemporaryCredentials>> {
    if role_arn.trim().is_empty() {
        return Ok(None);
    }
    roles
        .assume_role(role_arn, &session_name(label))
        .await
        .map(Some)
        .map_err(|e| TaskError::AssumeRole {
            role_arn: role_arn.to_string(),
            message: e.to_string(),
        })
}

/// Assumes each role once (many units share an account's plan role).
pub(crate) async fn assume_each<R: RoleAssumer>(
    roles: &R,
    role_arns: BTreeSet<String>,
    label: &str,
) -> Result<BTreeMap<String, TemporaryCredentials>> {
    let mut out = BTreeMap::new();
    for arn in role_arns {
        if let Some(c) = assume(roles, &arn, label).await? {
            out.insert(arn, c);
        }
    }
    Ok(out)
}

/// The child's whole environment: the allowed part of this process's
/// environment, the role's credentials, then `extra`.
pub fn env_for(
    credentials: Option<&TemporaryCredentials>,
    extra: &[(String, String)],
) -> Vec<(String, String)> {
    child_env(std::env::vars(), credentials, extra)
}

/// A home, a temporary directory and a provider plugin cache of the command's
/// own, created under `scratch` (a phase's scratch directory, deleted with its
/// checkout), as child environment entries that override the task's.
///
/// Why: a plan task that goes on to apply runs both phases in one container
/// as one user. Code the plan runs (under the read-only plan role) could plant
/// a CLI configuration with `dev_overrides`, a provider in the shared plugin
/// cache, or a git configuration in the task's home; the apply, under the apply
/// role, would then run it. Each phase reading only directories created for it
/// (with unpredictable names, after every process of the plan is gone) keeps
/// what the plan wrote away from the apply, as a new task's fresh container did.
pub(crate) fn private_dirs(scratch: &Path) -> Result<Vec<(String, String)>> {
    let home = scratch.join("home");
    let terraform_d = home.join(".terraform.d");
    let cache = terraform_d.join("plugin-cache");
    let tmp = scratch.join("tmp");
    child_dirs(&[scratch, &home, &terraform_d, &cache, &tmp])?;
    let mut gitconfig = String::new();
    if child_user().is_some() {
        // The checkout belongs to the task, and git refuses a repository of
        // another owner ("dubious ownership"); the child's own git (a
        // template's `git rev-parse`, a module source) may read it.
        gitconfig.push_str("[safe]\n\tdirectory = *\n");
    }
    // Private module sources over HTTPS: the module-source token, if the
    // task holds one for this job (crate::git_credentials).
    gitconfig.push_str(&crate::git_credentials::install(&home)?);
    if !gitconfig.is_empty() {
        let config = home.join(".gitconfig");
        std::fs::write(&config, gitconfig).map_err(|e| TaskError::file("writing", &config, e))?;
    }
    let path = |p: &Path| p.display().to_string();
    Ok(vec![
        ("HOME".into(), path(&home)),
        ("TMPDIR".into(), path(&tmp)),
        ("TF_PLUGIN_CACHE_DIR".into(), path(&cache)),
        // A source git cannot read fails with git's own error instead of
        // waiting for a password nobody types.
        ("GIT_TERMINAL_PROMPT".into(), "0".into()),
    ])
}

/// The provider plugin cache of one of the concurrent slots of a bulk plan:
/// `slot-<n>` under the cache [`private_dirs`] put in `env`, created for the
/// child, as the entry that overrides it; `None` when `env` names no cache.
///
/// Why: terraform's plugin cache is not safe for concurrent `init`s (its own
/// documentation; hashicorp/terraform#31964, still open): two units
/// installing the same provider into one cache at once fail with "failed to
/// compute a checksum" or a checksum mismatch. A slot runs one unit at a time,
/// so each cache has one writer, and a provider is fetched at most once per
/// slot instead of once per unit.
pub(crate) fn slot_plugin_cache(
    env: &[(String, String)],
    slot: usize,
) -> Result<Option<(String, String)>> {
    let Some((_, cache)) = env.iter().rev().find(|(k, _)| k == "TF_PLUGIN_CACHE_DIR") else {
        return Ok(None);
    };
    let dir = Path::new(cache).join(format!("slot-{slot}"));
    child_dirs(&[&dir])?;
    Ok(Some((
        "TF_PLUGIN_CACHE_DIR".into(),
        dir.display().to_string(),
    )))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn the_child_user_is_both_ids_or_neither_and_never_root() {
        let some = |s: &str| Some(s.to_string());
        assert_eq!(ChildUser::from_settings(None, None).unwrap(), None);
        assert_eq!(
            ChildUser::from_settings(some("10002"), some(" 10003 ")).unwrap(),
            Some(ChildUser {
                uid: 10002,
                gid: 10003
            })
        );
        for (uid, gid, says) in [
            (
                some("0"),
                some("10002"),
                "LIVE_CI_CHILD_UID=\"0\": must not be 0 (root)",
            ),
            (
                some("10002"),
                some("0"),
                "LIVE_CI_CHILD_GID=\"0\": must not be 0 (root)",
            ),
            (
                some("live-ci"),
                some("10002"),
                "LIVE_CI_CHILD_UID=\"live-ci\": not a numeric id",
            ),
            (
                some("10002"),
                None,
                "LIVE_CI_CHILD_UID=\"10002\": LIVE_CI_CHILD_GID must be set with it",
            ),
            (
                None,
                some("10002"),
                "LIVE_CI_CHILD_GID=\"10002\": LIVE_CI_CHILD_UID must be set with it",
            ),
        ] {
            let err = ChildUser::from_settings(uid, gid).unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
    }

    /// The saved plan comes from repository code: a link to the task's own
    /// files, a FIFO that would block the read, a hard link or an oversized
    /// file is refused, never read.
    #[test]
    fn a_file_of_the_child_is_read_as_untrusted_input() {
        let dir = tempfile::tempdir().unwrap();
        let plan = dir.path().join("unit.tfplan");
        std::fs::write(&plan, b"plan").unwrap();
        assert_eq!(read_child_file(&plan, 4).unwrap(), b"plan");
        let err = read_child_file(&plan, 3).unwrap_err().to_string();
        assert!(err.contains("more than the 3 read back"), "{err}");

        let secret = dir.path().join("secret");
        std::fs::write(&secret, b"the task's").unwrap();
        let link = dir.path().join("link.tfplan");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        let err = read_child_file(&link, 1 << 20).unwrap_err().to_string();
        assert!(err.contains("symbolic link: not followed"), "{err}");

        let hard = dir.path().join("hard.tfplan");
        std::fs::hard_link(&secret, &hard).unwrap();
        let err = read_child_file(&hard, 1 << 20).unwrap_err().to_string();
        assert!(err.contains("2 names (a hard link)"), "{err}");

        let fifo = dir.path().join("fifo.tfplan");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let err = read_child_file(&fifo, 1 << 20).unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{err}");
    }

    #[test]
    fn private_dirs_are_made_under_the_scratch_and_override_the_tasks() {
        let scratch = tempfile::tempdir().unwrap();
        let dirs = private_dirs(scratch.path()).unwrap();
        let env = child_env(
            [
                ("HOME".to_string(), "/home/live-ci".to_string()),
                (
                    "TF_PLUGIN_CACHE_DIR".to_string(),
                    "/home/live-ci/.terraform.d/plugin-cache".to_string(),
                ),
            ],
            None,
            &dirs,
        );
        let last = |name: &str| {
            env.iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| PathBuf::from(v))
                .unwrap()
        };
        for name in ["HOME", "TMPDIR", "TF_PLUGIN_CACHE_DIR"] {
            let dir = last(name);
            assert!(dir.starts_with(scratch.path()), "{name}={dir:?}");
            assert!(dir.is_dir(), "{name}={dir:?} was created");
        }
    }
}
