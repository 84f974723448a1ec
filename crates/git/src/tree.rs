//! A repository's files at a revision, read from git's object store without a
//! checkout (discovery of the base revision finds units removed by a change).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::sync::Mutex;

use live_ci_core::path::RepoPath;
use live_ci_core::port::FileTree;
use live_ci_core::tree::in_skipped_dir;

use crate::cli::GitCli;
use crate::error::GitError;

/// The tree of one commit: the file list comes from `git ls-tree`, contents from
/// one long-lived `git cat-file --batch`, so reading 10,000 files costs one process.
#[derive(Debug)]
pub struct GitTree {
    rev: String,
    blobs: HashMap<RepoPath, String>,
    /// Contents of every `.hcl` file, read up front in one pipelined batch:
    /// discovery reads all of them, and one round trip per file costs more than
    /// the reading itself on a 10,000-unit repository.
    prefetched: HashMap<RepoPath, Vec<u8>>,
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
    /// The tree of the commit `rev` resolves to in `git`'s clone: lists it and
    /// reads every `.hcl` file up front.
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
            if !in_skipped_dir(&path) {
                files.push(path.clone());
            }
            blobs.insert(path, oid.to_string());
        }
        files.sort();
        let mut tree = GitTree {
            rev: commit,
            blobs,
            files,
            prefetched: HashMap::new(),
            batch: Mutex::new(None),
            git,
        };
        let wanted: Vec<RepoPath> = tree
            .files
            .iter()
            .filter(|p| p.as_str().ends_with(".hcl"))
            .cloned()
            .collect();
        tree.prefetched = tree.prefetch(&wanted)?;
        Ok(tree)
    }

    /// Reads many blobs with one `cat-file --batch`, a writer thread feeding ids
    /// while this thread reads, so the pipe never stalls.
    fn prefetch(&self, paths: &[RepoPath]) -> Result<HashMap<RepoPath, Vec<u8>>, GitError> {
        if paths.is_empty() {
            return Ok(HashMap::new());
        }
        let Batch {
            mut child,
            mut stdin,
            mut stdout,
        } = self.start_batch()?;
        let ids: Vec<String> = paths
            .iter()
            .filter_map(|p| self.blobs.get(p).cloned())
            .collect();
        let writer = std::thread::spawn(move || -> std::io::Result<()> {
            let mut w = std::io::BufWriter::new(&mut stdin);
            for id in ids {
                writeln!(w, "{id}")?;
            }
            w.flush()?;
            drop(w);
            drop(stdin);
            Ok(())
        });
        let mut out = HashMap::with_capacity(paths.len());
        for path in paths {
            let content = self.read_reply(&mut stdout)?;
            out.insert(path.clone(), content);
        }
        let wrote = writer.join();
        let _ = child.wait();
        match wrote {
            Ok(Ok(())) => Ok(out),
            Ok(Err(e)) => Err(self.batch_error(&e.to_string())),
            Err(_) => Err(self.batch_error("writer thread panicked")),
        }
    }

    fn read_reply(&self, stdout: &mut BufReader<ChildStdout>) -> Result<Vec<u8>, GitError> {
        let io = |e: std::io::Error| self.batch_error(&e.to_string());
        let mut header = String::new();
        stdout.read_line(&mut header).map_err(io)?;
        // "<oid> <type> <size>\n", or "<oid> missing\n"
        let size: usize = header
            .split_whitespace()
            .nth(2)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| self.batch_error(&format!("unexpected reply {header:?}")))?;
        let mut buf = vec![0u8; size + 1]; // contents and a trailing newline
        stdout.read_exact(&mut buf).map_err(io)?;
        buf.truncate(size);
        Ok(buf)
    }

    /// The commit this tree is at.
    pub fn commit(&self) -> &str {
        &self.rev
    }

    fn start_batch(&self) -> Result<Batch, GitError> {
        let mut child = crate::cli::git_command(self.git.dir())
            .args(["cat-file", "--batch"])
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
        self.read_reply(&mut batch.stdout)
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
        let bytes = match self.prefetched.get(path) {
            Some(b) => b.clone(),
            None => self.read_blob(oid)?,
        };
        String::from_utf8(bytes).map_err(|_| live_ci_core::CoreError::Io {
            path: format!("{}:{}", self.rev, path),
            message: "not valid UTF-8".into(),
        })
    }
}
