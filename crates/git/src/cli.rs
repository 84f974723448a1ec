//! Runs the git CLI. The CLI rather than `gix` because every machine that runs
//! terragrunt already has git, and its merge-base and diff semantics are the reference.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::FsTree;
use live_ci_core::path::RepoPath;
use live_ci_core::port::FileTree;
use live_ci_core::port::{ChangeKind, FileChange, Vcs};

use crate::error::GitError;
use crate::tree::GitTree;

/// A `git` command in `dir` that reads no configuration but the repository's
/// own and what the caller passes (`-c`, `GIT_CONFIG_COUNT`): not the system's,
/// and not a global `~/.gitconfig` or `$XDG_CONFIG_HOME/git/config`. Repository
/// code runs between the task's git calls, and without a child user it runs as
/// the task's uid: a `core.fsmonitor`, `core.hooksPath` or `core.sshCommand` it
/// wrote into a global configuration would otherwise run as the task at its
/// next git call. (The checkout's own `.git/config` is the task's and not
/// writable by the child: `ecs-task/src/sandbox.rs`.) No prompt, no stdin.
///
/// A global configuration the task's own environment names with
/// `GIT_CONFIG_GLOBAL` is kept: that environment comes from the task
/// definition, not from repository code (the local cloud's ECS agent names a
/// file of the task user's there, with the `safe.directory` its local-path
/// clones need). A child running as another uid cannot write that file.
pub(crate) fn git_command(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir).env("GIT_CONFIG_NOSYSTEM", "1");
    if std::env::var_os("GIT_CONFIG_GLOBAL").is_none() {
        cmd.env("GIT_CONFIG_GLOBAL", "/dev/null");
    }
    cmd.env("GIT_ATTR_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null());
    cmd
}

/// A local clone, driven through the `git` executable.
#[derive(Debug, Clone)]
pub struct GitCli {
    dir: PathBuf,
}

impl GitCli {
    /// Opens the repository whose work tree is `dir`; fails if it is not one.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, GitError> {
        let dir = dir.into();
        let cli = GitCli { dir };
        let top = cli.run(&["rev-parse", "--show-toplevel"])?;
        let top = PathBuf::from(String::from_utf8_lossy(&top).trim());
        Ok(GitCli { dir: top })
    }

    /// Opens the checkout whose top directory is `dir` and answers the commit
    /// its detached HEAD names, reading `.git` itself instead of running git:
    /// for terra-run's unpacked checkouts, where the two `git rev-parse`
    /// processes of [`GitCli::open`] and [`GitCli::resolve`] were most of the
    /// time after the unpack, on every unit's path. Only the layout a
    /// one-commit checkout has is accepted: `.git` a directory holding
    /// `objects` and `refs` (what git itself requires of a repository), and
    /// `.git/HEAD` a regular file holding a full object id. A symbolic HEAD
    /// (a branch), a `.git` file or link pointing elsewhere, or anything else
    /// is refused, naming the path and what was found.
    pub fn open_detached(dir: impl Into<PathBuf>) -> Result<(Self, String), GitError> {
        let dir = dir.into();
        let refuse = |path: &Path, message: String| GitError::NotACheckout {
            path: path.display().to_string(),
            message,
        };
        // What `git rev-parse --show-toplevel` answers: the real path.
        let top = std::fs::canonicalize(&dir).map_err(|e| refuse(&dir, unreadable(&e)))?;
        let git_dir = top.join(".git");
        let kind = |path: &Path| {
            std::fs::symlink_metadata(path)
                .map(|m| m.file_type())
                .map_err(|e| refuse(path, unreadable(&e)))
        };
        for path in [&git_dir, &git_dir.join("objects"), &git_dir.join("refs")] {
            if !kind(path)?.is_dir() {
                return Err(refuse(path, "is not a directory".into()));
            }
        }
        let head_path = git_dir.join("HEAD");
        if !kind(&head_path)?.is_file() {
            return Err(refuse(&head_path, "is not a regular file".into()));
        }
        let head = std::fs::read(&head_path).map_err(|e| refuse(&head_path, unreadable(&e)))?;
        let id = head.strip_suffix(b"\n").unwrap_or(&head);
        let is_full_id = matches!(id.len(), 40 | 64)
            && id
                .iter()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b));
        if !is_full_id {
            let shown: String = String::from_utf8_lossy(&head).chars().take(80).collect();
            return Err(refuse(
                &head_path,
                format!("holds {shown:?}, not a detached commit id"),
            ));
        }
        let id = String::from_utf8_lossy(id).into_owned();
        Ok((GitCli { dir: top }, id))
    }

    /// The work tree's top directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Runs git with `args` and returns its stdout; a non-zero exit becomes an
    /// error carrying git's own message.
    pub(crate) fn run(&self, args: &[&str]) -> Result<Vec<u8>, GitError> {
        self.run_with(args, &[], None)
    }

    /// [`GitCli::run`] with extra environment and, when given, `input` on stdin.
    pub(crate) fn run_with(
        &self,
        args: &[&str],
        env: &[(&str, &std::ffi::OsStr)],
        input: Option<&[u8]>,
    ) -> Result<Vec<u8>, GitError> {
        let spawn = |source| GitError::Spawn {
            dir: self.dir.display().to_string(),
            source,
        };
        let mut cmd = git_command(&self.dir);
        cmd.args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let out = match input {
            None => cmd.output().map_err(spawn)?,
            Some(input) => {
                use std::io::Write;
                let mut child = cmd.stdin(Stdio::piped()).spawn().map_err(spawn)?;
                // Small inputs only (a commit object): written whole before reading.
                if let Some(mut stdin) = child.stdin.take() {
                    stdin.write_all(input).map_err(spawn)?;
                }
                child.wait_with_output().map_err(spawn)?
            }
        };
        if !out.status.success() {
            return Err(GitError::Command {
                dir: self.dir.display().to_string(),
                args: args.join(" "),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(out.stdout)
    }

    /// The full commit id `rev` names.
    pub fn resolve(&self, rev: &str) -> Result<String, GitError> {
        if rev.starts_with('-') {
            return Err(GitError::UnknownRevision(rev.to_string()));
        }
        let spec = format!("{rev}^{{commit}}");
        match self.run(&["rev-parse", "--verify", "--quiet", &spec]) {
            Ok(out) => Ok(String::from_utf8_lossy(&out).trim().to_string()),
            Err(GitError::Command { .. }) => Err(GitError::UnknownRevision(rev.to_string())),
            Err(e) => Err(e),
        }
    }

    /// The merge base of `a` and `b`.
    pub fn merge_base_of(&self, a: &str, b: &str) -> Result<String, GitError> {
        let (a, b) = (self.resolve(a)?, self.resolve(b)?);
        let out = self.run(&["merge-base", &a, &b])?;
        Ok(String::from_utf8_lossy(&out).trim().to_string())
    }

    /// Files changed from the merge base of `base` and `head` to `head`, or to the
    /// working tree (tracked changes and untracked, not ignored, files) when `head`
    /// is `None`.
    pub fn diff(&self, base: &str, head: Option<&str>) -> Result<Vec<FileChange>, GitError> {
        let mut changes = match head {
            Some(head) => {
                let mb = self.merge_base_of(base, head)?;
                let head = self.resolve(head)?;
                parse_name_status(&self.run(&[
                    "diff",
                    "--no-renames",
                    "--no-ext-diff",
                    "--name-status",
                    "-z",
                    &mb,
                    &head,
                ])?)?
            }
            None => {
                let base = self.resolve(base)?;
                let mut tracked = parse_name_status(&self.run(&[
                    "diff",
                    "--no-renames",
                    "--no-ext-diff",
                    "--name-status",
                    "-z",
                    &base,
                ])?)?;
                let untracked = self.run(&["ls-files", "--others", "--exclude-standard", "-z"])?;
                for name in split_z(&untracked)? {
                    tracked.push(FileChange {
                        path: RepoPath::new(name)?,
                        kind: ChangeKind::Added,
                    });
                }
                tracked
            }
        };
        changes.sort();
        changes.dedup();
        Ok(changes)
    }
}

fn unreadable(e: &std::io::Error) -> String {
    format!("cannot be read: {e}")
}

fn split_z(bytes: &[u8]) -> Result<Vec<&str>, GitError> {
    bytes
        .split(|&b| b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| {
            std::str::from_utf8(s).map_err(|_| GitError::NonUtf8(String::from_utf8_lossy(s).into()))
        })
        .collect()
}

/// Parses `git diff --name-status -z --no-renames`: status and path alternate.
fn parse_name_status(bytes: &[u8]) -> Result<Vec<FileChange>, GitError> {
    let fields = split_z(bytes)?;
    let mut out = Vec::with_capacity(fields.len() / 2);
    for pair in fields.chunks(2) {
        let [status, path] = pair else {
            continue;
        };
        let kind = match status.chars().next() {
            Some('A') => ChangeKind::Added,
            Some('D') => ChangeKind::Deleted,
            // M, T (type change), U (unmerged): the file is there and differs.
            _ => ChangeKind::Modified,
        };
        out.push(FileChange {
            path: RepoPath::new(path)?,
            kind,
        });
    }
    Ok(out)
}

impl Vcs for GitCli {
    fn changed_files(
        &self,
        base: &str,
        head: Option<&str>,
    ) -> live_ci_core::Result<Vec<FileChange>> {
        Ok(self.diff(base, head)?)
    }

    fn tree_at(&self, rev: Option<&str>) -> live_ci_core::Result<Box<dyn FileTree>> {
        Ok(match rev {
            None => Box::new(FsTree::new(self.dir.clone())),
            Some(rev) => Box::new(GitTree::open(self.clone(), rev)?),
        })
    }

    fn merge_base(&self, a: &str, b: &str) -> live_ci_core::Result<String> {
        Ok(self.merge_base_of(a, b)?)
    }
}
