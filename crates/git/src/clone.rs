//! Fresh checkouts for the ECS tasks: clone the repository and check out one
//! commit. A GitHub token, when given, reaches git through a credential helper
//! reading the child's environment, so it never appears in arguments, remotes
//! or the clone's config.

use std::path::Path;

use crate::cli::GitCli;
use crate::error::GitError;

/// The variable the credential helper reads the token from.
const TOKEN_VAR: &str = "LIVE_CI_GIT_TOKEN";
const HELPER: &str = "!f() { test \"$1\" = get || exit 0; echo username=x-access-token; echo \"password=$LIVE_CI_GIT_TOKEN\"; }; f";

fn git(dir: &Path, args: &[&str], token: Option<&str>) -> Result<(), GitError> {
    let mut cmd = crate::cli::git_command(dir);
    cmd.args(args);
    if let Some(token) = token {
        cmd.env("GIT_CONFIG_COUNT", "1")
            .env("GIT_CONFIG_KEY_0", "credential.helper")
            .env("GIT_CONFIG_VALUE_0", HELPER)
            .env(TOKEN_VAR, token);
    }
    let out = cmd.output().map_err(|source| GitError::Spawn {
        dir: dir.display().to_string(),
        source,
    })?;
    if !out.status.success() {
        return Err(GitError::Command {
            dir: dir.display().to_string(),
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(())
}

impl GitCli {
    /// Clones `url` into `dest` (which must not exist or be empty) and checks
    /// out `commit` detached. A commit no branch reaches (a pull request's head
    /// from a fork) is fetched by id. Fails with [`GitError::UnknownRevision`]
    /// when the remote does not have it.
    pub fn clone_at(
        url: &str,
        dest: &Path,
        commit: &str,
        token: Option<&str>,
    ) -> Result<GitCli, GitError> {
        if commit.starts_with('-') || url.starts_with('-') {
            return Err(GitError::UnknownRevision(commit.to_string()));
        }
        let parent = dest.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(|source| GitError::Spawn {
            dir: parent.display().to_string(),
            source,
        })?;
        let dest_str = dest.display().to_string();
        git(
            parent,
            &["clone", "--quiet", "--no-checkout", url, &dest_str],
            token,
        )?;
        let repo = GitCli::open(dest)?;
        if repo.resolve(commit).is_err() {
            // Fetch by id; servers that refuse it leave the error below.
            let _ = git(dest, &["fetch", "--quiet", "origin", commit], token);
            if repo.resolve(commit).is_err() {
                return Err(GitError::UnknownRevision(commit.to_string()));
            }
        }
        git(dest, &["checkout", "--quiet", "--detach", commit], None)?;
        Ok(repo)
    }

    /// A checkout of exactly `commit` with none of its history: `git fetch
    /// --depth 1` of that one object into a new repository. What terra-run
    /// needs: it reads one commit's tree, and in a trunk of years a full clone
    /// costs seconds per unit where this costs one commit's objects. Servers
    /// that refuse to serve a commit by id (GitHub serves any reachable one)
    /// get the full clone of [`GitCli::clone_at`] instead.
    pub fn fetch_commit(
        url: &str,
        dest: &Path,
        commit: &str,
        token: Option<&str>,
    ) -> Result<GitCli, GitError> {
        let is_full_id = commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit());
        if !is_full_id || url.starts_with('-') {
            return GitCli::clone_at(url, dest, commit, token);
        }
        std::fs::create_dir_all(dest).map_err(|source| GitError::Spawn {
            dir: dest.display().to_string(),
            source,
        })?;
        git(dest, &["init", "--quiet"], None)?;
        // The fetched pack is kept as it came (unpackLimit 1), not exploded
        // into one loose file per object below git's default of 100: every
        // terra-run of the run unpacks this `.git` (`checkout_cache`), and a
        // file created costs more there than the bytes do.
        let fetched = git(
            dest,
            &[
                "-c",
                "fetch.unpackLimit=1",
                "fetch",
                "--quiet",
                "--no-tags",
                "--depth",
                "1",
                url,
                commit,
            ],
            token,
        );
        if fetched.is_err() {
            std::fs::remove_dir_all(dest).map_err(|source| GitError::Spawn {
                dir: dest.display().to_string(),
                source,
            })?;
            return GitCli::clone_at(url, dest, commit, token);
        }
        git(dest, &["checkout", "--quiet", "--detach", commit], None)?;
        GitCli::open(dest)
    }

    /// The first parent of `commit` (for a merge commit: the trunk before the merge).
    pub fn first_parent(&self, commit: &str) -> Result<String, GitError> {
        self.resolve(&format!("{commit}^1"))
    }

    /// How many commits the first-parent chain from `commit` holds (itself
    /// included): its place on the trunk, whatever the merge style.
    pub fn first_parent_depth(&self, commit: &str) -> Result<u64, GitError> {
        let commit = self.resolve(commit)?;
        let out = self.run(&["rev-list", "--first-parent", "--count", &commit])?;
        let text = String::from_utf8_lossy(&out).trim().to_string();
        text.parse().map_err(|_| GitError::Command {
            dir: self.dir().display().to_string(),
            args: format!("rev-list --first-parent --count {commit}"),
            stderr: format!("printed {text:?}, not a count"),
        })
    }

    /// Whether `ancestor` is a strict ancestor of `commit`. A revision this
    /// clone does not have (history rewritten since) is no ancestor.
    pub fn is_ancestor(&self, ancestor: &str, commit: &str) -> Result<bool, GitError> {
        let (Ok(a), Ok(c)) = (self.resolve(ancestor), self.resolve(commit)) else {
            return Ok(false);
        };
        if a == c {
            return Ok(false);
        }
        match self.run(&["merge-base", "--is-ancestor", &a, &c]) {
            Ok(_) => Ok(true),
            // Exit status 1 is git's "no"; anything else prints an error.
            Err(GitError::Command { stderr, .. }) if stderr.is_empty() => Ok(false),
            Err(e) => Err(e),
        }
    }
}
