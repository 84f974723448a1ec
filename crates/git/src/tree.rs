//! A repository's files at a revision, read from git's object store without a
//! checkout (discovery of the base revision finds units removed by a change).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;

use live_ci_core::path::RepoPath;
use live_ci_core::tree::{FileTree, is_skipped_dir};

use crate::cli::GitCli;
use crate::error::GitError;

/// The tree of one commit: the file list comes from `git ls-tree`, contents from
/// one long-lived `git cat-file --batch`, so reading 10,000 files costs one process.
#[derive(Debug)]
pub struct GitTree {
    rev: String,
    blobs: HashMap<RepoPath, String>,
    files: Vec<RepoPath>,
    batch: Mutex<Option<Batch>>,
    git: GitCli,
}

#[derive(Debug)]
struct Batch {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl GitTree {
    pub fn open(git: GitCli, rev: &str) -> Result<Self, GitError> {
        let commit = git.resolve(rev)?;
        let listing = git.run(&["ls-tree", "-r", "-z", "--full-tree", &commit])?;
        let mut blobs = HashMap::new();
        let mut files = Vec::new();
        for entry in listing.split(|&b| b == 0).filter(|e| !e.is_empty()) {
            let entry = std::str::from_utf8(entry)
                .map_err(|_| GitError::NonUtf8(String::from_utf8_lossy(entry).into()))?;
            // "<mode> SP <type> SP <object> TAB <path>"
            let Some((meta, path)) = entry.split_once('\t') else {
                continue;
            };
            let mut meta = meta.split(' ');
            let (Some(_mode), Some(kind), Some(oid)) = (meta.next(), meta.next(), meta.next())
            else {
                continue;
            };
            if kind != "blob" {
                continue; // submodules are not part of the live repo
            }
            let path = RepoPath::new(path)?;
            let mut dir = path.parent();
            let mut skipped = false;
            while let Some(d) = dir {
                if is_skipped_dir(d.file_name()) {
                    skipped = true;
                    break;
                }
                dir = d.parent();
            }
            if !skipped {
                files.push(path.clone());
            }
            blobs.insert(path, oid.to_string());
        }
        files.sort();
        Ok(GitTree {
            rev: commit,
            blobs,
            files,
            batch: Mutex::new(None),
            git,
        })
    }

    /// The commit this tree is at.
    pub fn commit(&self) -> &str {
        &self.rev
    }

    fn start_batch(&self) -> Result<Batch, GitError> {
        let mut child = Command::new("git")
            .args(["cat-file", "--batch"])
            .current_dir(self.git.dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|source| GitError::Spawn {
                dir: self.git.dir().display().to_string(),
                source,
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(self.batch_error("no pipes to git cat-file"));
        };
        Ok(Batch {
            child,
            stdin,
            stdout: BufReader::new(stdout),
        })
    }

    fn batch_error(&self, msg: &str) -> GitError {
        GitError::Command {
            dir: self.git.dir().display().to_string(),
            args: "cat-file --batch".into(),
            stderr: msg.to_string(),
        }
    }

    fn read_blob(&self, oid: &str) -> Result<Vec<u8>, GitError> {
        let mut guard = self
            .batch
            .lock()
            .map_err(|_| self.batch_error("reader poisoned by an earlier failure"))?;
        if guard.is_none() {
            *guard = Some(self.start_batch()?);
        }
        let Some(batch) = guard.as_mut() else {
            return Err(self.batch_error("reader not started"));
        };
        let io = |e: std::io::Error| self.batch_error(&e.to_string());
        writeln!(batch.stdin, "{oid}").map_err(io)?;
        batch.stdin.flush().map_err(io)?;
        let mut header = String::new();
        batch.stdout.read_line(&mut header).map_err(io)?;
        // "<oid> <type> <size>\n", or "<oid> missing\n"
        let size: usize = header
            .split_whitespace()
            .nth(2)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| self.batch_error(&format!("unexpected reply {header:?}")))?;
        let mut buf = vec![0u8; size + 1]; // contents and a trailing newline
        batch.stdout.read_exact(&mut buf).map_err(io)?;
        buf.truncate(size);
        Ok(buf)
    }
}

impl Drop for GitTree {
    fn drop(&mut self) {
        if let Ok(mut guard) = self.batch.lock()
            && let Some(mut batch) = guard.take()
        {
            drop(batch.stdin); // EOF ends cat-file
            let _ = batch.child.wait();
        }
    }
}

impl FileTree for GitTree {
    fn files(&self) -> live_ci_core::Result<Vec<RepoPath>> {
        Ok(self.files.clone())
    }

    fn read(&self, path: &RepoPath) -> live_ci_core::Result<String> {
        let oid = self.blobs.get(path).ok_or_else(|| GitError::MissingFile {
            rev: self.rev.clone(),
            path: path.to_string(),
        })?;
        let bytes = self.read_blob(oid)?;
        String::from_utf8(bytes).map_err(|_| live_ci_core::CoreError::Io {
            path: format!("{}:{}", self.rev, path),
            message: "not valid UTF-8".into(),
        })
    }
}
