//! The sample live repository (`examples/live-repo/build.sh`) as the git history
//! the tasks clone, and further merged pull requests on top of it for the
//! scenarios that need their own commit.

use std::path::{Path, PathBuf};

use crate::{E2eError, Merge, Result, repo_root, run_command};

/// The sample repository on disk.
#[derive(Debug, Clone)]
pub struct SampleRepo {
    /// The clone's work tree.
    pub dir: PathBuf,
}

async fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let mut cmd = tokio::process::Command::new("git");
    cmd.arg("-C")
        .arg(dir)
        .args(["-c", "commit.gpgsign=false"])
        .args(args)
        .env("GIT_AUTHOR_NAME", "Live CI E2E")
        .env("GIT_AUTHOR_EMAIL", "e2e@example.com")
        .env("GIT_COMMITTER_NAME", "Live CI E2E")
        .env("GIT_COMMITTER_EMAIL", "e2e@example.com");
    Ok(run_command(&format!("git {}", args.join(" ")), cmd, false)
        .await?
        .trim()
        .to_string())
}

impl SampleRepo {
    /// Builds the sample into `dir` (recreated); the merge of PR #42 is `main`.
    pub async fn build(dir: &Path) -> Result<(Self, Merge)> {
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg(repo_root().join("examples/live-repo/build.sh"))
            .arg(dir);
        run_command("examples/live-repo/build.sh", cmd, false).await?;
        let repo = SampleRepo {
            dir: dir.to_path_buf(),
        };
        let merge = repo.merge_at("HEAD", 42, "feature/bigger-vpc").await?;
        Ok((repo, merge))
    }

    /// A repository at `dir` (recreated) whose `main` holds `base` files, with
    /// pull request `number` adding `files` merged into it (the benchmark's repo).
    pub async fn from_files(
        dir: &Path,
        base: &[(String, String)],
        number: u64,
        files: &[(String, String)],
    ) -> Result<(Self, Merge)> {
        if dir.exists() {
            std::fs::remove_dir_all(dir).map_err(|source| E2eError::Io {
                path: dir.display().to_string(),
                source,
            })?;
        }
        std::fs::create_dir_all(dir).map_err(|source| E2eError::Io {
            path: dir.display().to_string(),
            source,
        })?;
        git(dir, &["init", "-q", "-b", "main"]).await?;
        let repo = SampleRepo {
            dir: dir.to_path_buf(),
        };
        repo.write(base)?;
        git(dir, &["add", "-A"]).await?;
        git(dir, &["commit", "-qm", "Initial live repository"]).await?;
        let borrowed: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, c)| (p.as_str(), c.as_str()))
            .collect();
        let merge = repo.merge_pull_request(number, &borrowed).await?;
        Ok((repo, merge))
    }

    fn write(&self, files: &[(String, String)]) -> Result<()> {
        for (path, content) in files {
            let full = self.dir.join(path);
            if let Some(parent) = full.parent() {
                std::fs::create_dir_all(parent).map_err(|source| E2eError::Io {
                    path: parent.display().to_string(),
                    source,
                })?;
            }
            std::fs::write(&full, content).map_err(|source| E2eError::Io {
                path: full.display().to_string(),
                source,
            })?;
        }
        Ok(())
    }

    async fn merge_at(&self, rev: &str, number: u64, head_ref: &str) -> Result<Merge> {
        Ok(Merge {
            number,
            merge_commit: git(&self.dir, &["rev-parse", rev]).await?,
            base_sha: git(&self.dir, &["rev-parse", &format!("{rev}^1")]).await?,
            head_sha: git(&self.dir, &["rev-parse", &format!("{rev}^2")]).await?,
            head_ref: head_ref.to_string(),
        })
    }

    /// The files a merge changed (what GitHub lists for its pull request).
    pub async fn files(&self, merge: &Merge) -> Result<Vec<String>> {
        let out = git(
            &self.dir,
            &["diff", "--name-only", &merge.base_sha, &merge.merge_commit],
        )
        .await?;
        Ok(out.lines().map(str::to_string).collect())
    }

    /// A new pull request `number` that writes `files` (path → content) on a
    /// branch from `main`, merged into `main` with a merge commit.
    pub async fn merge_pull_request(&self, number: u64, files: &[(&str, &str)]) -> Result<Merge> {
        self.merge_change(number, files, &[]).await
    }

    /// [`SampleRepo::merge_pull_request`] that also deletes the directories
    /// `removed` (e.g. retires units).
    pub async fn merge_change(
        &self,
        number: u64,
        files: &[(&str, &str)],
        removed: &[&str],
    ) -> Result<Merge> {
        let branch = format!("pr-{number}");
        git(&self.dir, &["checkout", "-q", "-B", &branch, "main"]).await?;
        for dir in removed {
            git(&self.dir, &["rm", "-rq", dir]).await?;
        }
        for (path, content) in files {
            let full = self.dir.join(path);
            if let Some(parent) = full.parent() {
                std::fs::create_dir_all(parent).map_err(|source| E2eError::Io {
                    path: parent.display().to_string(),
                    source,
                })?;
            }
            std::fs::write(&full, content).map_err(|source| E2eError::Io {
                path: full.display().to_string(),
                source,
            })?;
        }
        git(&self.dir, &["add", "-A"]).await?;
        git(&self.dir, &["commit", "-qm", &format!("PR #{number}")]).await?;
        git(&self.dir, &["checkout", "-q", "main"]).await?;
        git(
            &self.dir,
            &[
                "merge",
                "-q",
                "--no-ff",
                "-m",
                &format!("Merge pull request #{number} from example/{branch}"),
                &branch,
            ],
        )
        .await?;
        self.merge_at("HEAD", number, &branch).await
    }
}
