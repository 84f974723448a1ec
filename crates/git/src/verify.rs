//! Proof that a work tree holds exactly one commit's tree: for terra-run's
//! unpacked checkouts (an archive stored by another task), where `.git/HEAD`
//! naming the commit says nothing about the files beside it.

use std::ffi::OsStr;

use crate::cli::GitCli;
use crate::error::GitError;

/// The temporary index the work tree is hashed into, inside `.git` (the
/// task's, not writable by the child), removed afterwards.
const INDEX: &str = "live-ci-verify-index";

impl GitCli {
    /// Checks that the files on disk are exactly `commit`'s tree. The commit
    /// object is hashed again (so its `tree` line is the one `commit` names,
    /// whatever the object store holds), the work tree is hashed from disk into
    /// a temporary index (every file, ignored ones too) and written as a tree:
    /// the two tree ids must be equal. Otherwise the error names the paths that
    /// differ.
    pub fn verify_work_tree(&self, commit: &str) -> Result<(), GitError> {
        let mismatch = |paths: Vec<String>| GitError::TreeMismatch {
            commit: commit.to_string(),
            paths,
        };
        let object = self.run(&["cat-file", "commit", commit])?;
        let hashed = self.run_with(
            &["hash-object", "-t", "commit", "--stdin"],
            &[],
            Some(&object),
        )?;
        if String::from_utf8_lossy(&hashed).trim() != commit {
            return Err(mismatch(vec![format!(
                "(the commit object stored for {commit} hashes to {})",
                String::from_utf8_lossy(&hashed).trim()
            )]));
        }
        let expected = object
            .split(|b| *b == b'\n')
            .next()
            .and_then(|line| line.strip_prefix(b"tree "))
            .map(|id| String::from_utf8_lossy(id).into_owned())
            .ok_or_else(|| mismatch(vec![format!("(commit {commit} has no tree line)")]))?;
        let index = self.dir().join(".git").join(INDEX);
        let env = [("GIT_INDEX_FILE", index.as_os_str())];
        let result = self.hash_work_tree(&env);
        let _ = std::fs::remove_file(&index);
        let actual = result?;
        if actual == expected {
            return Ok(());
        }
        let diff = self.run(&[
            "diff-tree",
            "-r",
            "--name-only",
            "--no-renames",
            "-z",
            &expected,
            &actual,
        ]);
        let paths = match diff {
            Ok(out) => out
                .split(|b| *b == 0)
                .filter(|p| !p.is_empty())
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect(),
            Err(_) => Vec::new(),
        };
        let paths = if paths.is_empty() {
            vec![format!("(tree {actual} on disk, {expected} in the commit)")]
        } else {
            paths
        };
        Err(mismatch(paths))
    }

    fn hash_work_tree(&self, env: &[(&str, &OsStr)]) -> Result<String, GitError> {
        self.run_with(&["add", "--all", "--force", "--", ":/"], env, None)?;
        let tree = self.run_with(&["write-tree"], env, None)?;
        Ok(String::from_utf8_lossy(&tree).trim().to_string())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn repo() -> (tempfile::TempDir, GitCli, String) {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let out = crate::cli::git_command(dir.path())
                .args(args)
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@example.com")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@example.com")
                .output()
                .unwrap();
            assert!(out.status.success(), "{args:?}: {out:?}");
            String::from_utf8(out.stdout).unwrap()
        };
        git(&["init", "-q"]);
        std::fs::create_dir_all(dir.path().join("dev/vpc")).unwrap();
        std::fs::write(dir.path().join("dev/vpc/main.tf"), "# vpc\n").unwrap();
        std::fs::write(dir.path().join(".gitignore"), "*.log\n").unwrap();
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", "one"]);
        let head = git(&["rev-parse", "HEAD"]).trim().to_string();
        git(&["checkout", "-q", "--detach", &head]);
        let cli = GitCli::open(dir.path()).unwrap();
        (dir, cli, head)
    }

    #[test]
    fn the_committed_tree_passes_and_a_changed_added_or_ignored_file_is_named() {
        let (dir, git, head) = repo();
        git.verify_work_tree(&head).unwrap();
        assert!(!dir.path().join(".git").join(INDEX).exists());

        std::fs::write(dir.path().join("dev/vpc/main.tf"), "# tampered\n").unwrap();
        let err = git.verify_work_tree(&head).unwrap_err().to_string();
        assert!(err.contains("\"dev/vpc/main.tf\""), "{err}");
        assert!(err.contains(&head), "{err}");
        std::fs::write(dir.path().join("dev/vpc/main.tf"), "# vpc\n").unwrap();
        git.verify_work_tree(&head).unwrap();

        // An ignored file is still a file terraform reads.
        std::fs::write(dir.path().join("dev/vpc/extra.log"), "x").unwrap();
        let err = git.verify_work_tree(&head).unwrap_err().to_string();
        assert!(err.contains("\"dev/vpc/extra.log\""), "{err}");
        std::fs::remove_file(dir.path().join("dev/vpc/extra.log")).unwrap();

        std::fs::remove_file(dir.path().join(".gitignore")).unwrap();
        let err = git.verify_work_tree(&head).unwrap_err().to_string();
        assert!(err.contains("\".gitignore\""), "{err}");
    }
}
