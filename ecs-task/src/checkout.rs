//! A fresh checkout of the live repository at one commit, in a temporary
//! directory removed when the task is done with it: cloned or fetched from the
//! repository, or unpacked from the run's packed checkout
//! (`crate::checkout_cache`).

use std::path::{Path, PathBuf};

use live_ci_git::GitCli;
use tempfile::TempDir;

use crate::error::{Result, TaskError};

/// Where to clone from and with which credentials.
#[derive(Clone)]
pub struct Repo {
    /// A GitHub HTTPS URL, or a local path / `file://` URL in tests and the demo.
    pub clone_url: String,
    /// The GitHub token (from the parameter store), if any.
    pub token: Option<String>,
}

impl std::fmt::Debug for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repo")
            .field("clone_url", &self.clone_url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// A checkout and its scratch space, deleted on drop.
#[derive(Debug)]
pub struct Checkout {
    scratch: TempDir,
    /// Git in the checkout's work tree.
    pub git: GitCli,
    /// The full id of the commit checked out.
    pub commit: String,
}

impl Checkout {
    /// Clones `repo` and checks out `commit` (a full id or anything git resolves).
    pub fn new(repo: &Repo, commit: &str) -> Result<Self> {
        Self::in_scratch(commit, |dir| {
            GitCli::clone_at(&repo.clone_url, dir, commit, repo.token.as_deref())
        })
    }

    /// `commit` alone, without history (a shallow fetch of that one commit):
    /// for terra-run, which reads one commit's tree and nothing else.
    pub fn commit_only(repo: &Repo, commit: &str) -> Result<Self> {
        Self::in_scratch(commit, |dir| {
            GitCli::fetch_commit(&repo.clone_url, dir, commit, repo.token.as_deref())
        })
    }

    /// The checkout packed in `archive` (stored at `key`, already checked
    /// against its recorded digest), unpacked into a new scratch directory:
    /// it must hold `commit` checked out, or it is refused.
    pub fn unpacked(key: &str, archive: &[u8], commit: &str) -> Result<Self> {
        let bad = |message: String| TaskError::CachedCheckout {
            key: key.to_string(),
            message,
        };
        let scratch = scratch()?;
        let dir = scratch.path().join("repo");
        crate::checkout_cache::unpack(archive, &dir).map_err(bad)?;
        crate::timeline::mark("unpack");
        // The packer checks the commit out detached, so `.git/HEAD` names it;
        // read there, not by two git processes on every unit's path.
        let (git, head) = GitCli::open_detached(&dir).map_err(|e| {
            bad(format!(
                "the unpacked checkout has no commit checked out: {e}"
            ))
        })?;
        if head != commit {
            return Err(bad(format!(
                "holds commit {head}, not the run's commit {commit}; nothing was run"
            )));
        }
        // Before git reads anything of it: the archive's `.git` holds only
        // what a one-commit fetch makes, and its configuration is replaced
        // (a `core.fsmonitor` or `core.hooksPath` in it would run as the task).
        own_git_dir(&dir, &head).map_err(bad)?;
        // `.git/HEAD` names the commit; the files must be its tree.
        git.verify_work_tree(&head)
            .map_err(|e| bad(e.to_string()))?;
        crate::timeline::mark("verify");
        // After the check: generated files are no part of the commit's tree.
        crate::stacks::write_generated(&dir)?;
        crate::sandbox::share_checkout(&dir)?;
        Ok(Checkout {
            scratch,
            git,
            commit: head,
        })
    }

    fn in_scratch(
        commit: &str,
        check_out: impl FnOnce(&Path) -> std::result::Result<GitCli, live_ci_git::GitError>,
    ) -> Result<Self> {
        let scratch = scratch()?;
        let git = check_out(&scratch.path().join("repo"))?;
        let commit = git.resolve(commit)?;
        crate::stacks::write_generated(git.dir())?;
        crate::sandbox::share_checkout(git.dir())?;
        Ok(Checkout {
            scratch,
            git,
            commit,
        })
    }

    /// The work tree's top directory.
    pub fn dir(&self) -> &Path {
        self.git.dir()
    }

    /// A path for scratch files outside the work tree.
    pub(crate) fn scratch_file(&self, name: &str) -> PathBuf {
        self.scratch.path().join(name)
    }
}

/// What a one-commit fetch leaves in `.git` (`crate::checkout_cache` packs it
/// without `FETCH_HEAD` and `hooks`): anything else in an archive (`hooks`,
/// `commondir`, `config.worktree`, `worktrees`, `modules`…) is refused.
const GIT_ENTRIES: &[&str] = &[
    "HEAD",
    "branches",
    "config",
    "description",
    "index",
    "info",
    "logs",
    "objects",
    "refs",
    "shallow",
    "packed-refs",
];

/// Object stores elsewhere that git would read objects from.
const OBJECT_INFO_REFUSED: &[&str] = &["alternates", "http-alternates"];

/// Checks the unpacked `.git` of `dir` against [`GIT_ENTRIES`] (and no
/// alternate object store, no `info` file but `exclude`) and writes its
/// `config` anew: the task's git then reads nothing the archive chose.
fn own_git_dir(dir: &Path, head: &str) -> std::result::Result<(), String> {
    let git_dir = dir.join(".git");
    let names = |d: &Path| -> std::result::Result<Vec<String>, String> {
        let entries = std::fs::read_dir(d)
            .map_err(|e| format!("reading {:?}: {e}", d.display().to_string()))?;
        entries
            .map(|e| {
                e.map(|e| e.file_name().to_string_lossy().into_owned())
                    .map_err(|e| format!("reading {:?}: {e}", d.display().to_string()))
            })
            .collect()
    };
    let refuse = |rel: &str| {
        format!("holds \".git/{rel}\", which a one-commit checkout does not have; nothing was run")
    };
    for name in names(&git_dir)? {
        if !GIT_ENTRIES.contains(&name.as_str()) {
            return Err(refuse(&name));
        }
    }
    if git_dir.join("info").exists() {
        for name in names(&git_dir.join("info"))? {
            if name != "exclude" {
                return Err(refuse(&format!("info/{name}")));
            }
        }
    }
    for name in OBJECT_INFO_REFUSED {
        if std::fs::symlink_metadata(git_dir.join("objects/info").join(name)).is_ok() {
            return Err(refuse(&format!("objects/info/{name}")));
        }
    }
    let config = git_dir.join("config");
    // Replaced, not edited: a link is removed, never written through.
    let _ = std::fs::remove_file(&config);
    let format = if head.len() == 64 {
        "\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = sha256\n"
    } else {
        "\trepositoryformatversion = 0\n"
    };
    std::fs::write(
        &config,
        format!("[core]\n\tfilemode = true\n\tbare = false\n{format}"),
    )
    .map_err(|e| format!("writing {:?}: {e}", config.display().to_string()))
}

/// A new scratch directory (`0700`): with a child user, its group may pass
/// through to the checkout and the directories made for it, nothing more.
fn scratch() -> Result<TempDir> {
    let scratch = tempfile::Builder::new()
        .prefix("live-ci-task-")
        .tempdir()
        .map_err(|e| TaskError::Io(format!("cannot create a scratch directory: {e}")))?;
    crate::sandbox::pass_through(scratch.path())?;
    Ok(scratch)
}
