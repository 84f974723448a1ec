//! The writer of the deploy comment (issue 29 item 3): after an invocation's
//! metadb and Step Functions work, each run it touched (an execution ended,
//! the run advanced or ended, the sweep) is read as the run page reads it,
//! rendered by [`live_ci_core::deploy_comment`], and written on every pull
//! request the run deploys (its own, and those of the runs it superseded)
//! when the render differs from the one last written there.
//!
//! Advisory: a GitHub or metadb error is a warning naming the run and the
//! pull request, never the handler's error, and it comes after the deploy's
//! own work, so it delays no start. Bounded: a body is written only when its
//! digest changed (a compare-and-set in the metadb before the write, cleared
//! again when the write fails), so N events that change nothing write
//! nothing. The digest leaves the run page link out: the link is re-signed at
//! every render (it expires), and a new signature alone is no change.

use live_ci_core::deploy::{RunId, RunStatus};
use live_ci_core::deploy_comment::{digest, marker, render_covering};
use live_ci_core::port::{ApprovalStore, CommentTarget, DeployCommentStore, GitHost, PortError};
use live_ci_core::run_view::RunView;

use crate::handler::{Report, TriggerSf};
use crate::ports::TriggerPorts;

/// The units a comment is rendered from, as the run page reads them
/// (approval-response's `RUN_PAGE_UNITS`): past them the comment points to
/// the run page.
pub const COMMENT_UNITS: u32 = 400;

/// The most pull requests one run's comment goes to (a run that coalesced
/// more merges than this names the newest-numbered first ones only).
pub const COMMENT_TARGETS: u32 = 50;

/// What one pull request's comment needs: the marker, the body, and the
/// digest of the body without its link.
struct Rendered {
    targets: Vec<CommentTarget>,
    body: String,
    digest: String,
}

impl<Ports: TriggerPorts> TriggerSf<Ports> {
    /// Writes the deploy comments of the runs this invocation touched
    /// (`report.touched_runs`); off unless the handler was built with
    /// `deploy_comments` (a GitHub client to write with).
    pub(crate) async fn write_deploy_comments(&self, report: &mut Report) {
        let mut runs = std::mem::take(&mut report.touched_runs);
        if !self.config().deploy_comments {
            return;
        }
        runs.sort_unstable();
        runs.dedup();
        for run_id in runs {
            self.write_deploy_comment(run_id, report).await;
        }
    }

    /// One run's comment on each pull request it deploys. A second pass reads
    /// the run again after writing: a concurrent invocation that rendered an
    /// older state may have written after this one, and a pull request this
    /// invocation wrote is written again when the run has changed since.
    async fn write_deploy_comment(&self, run_id: RunId, report: &mut Report) {
        let mut written: Vec<(u64, String)> = Vec::new();
        for _pass in 0..2 {
            let rendered = match self.render_deploy_comment(run_id).await {
                Ok(Some(r)) => r,
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!(run_id, error = %e, "reading the run for its deploy comment");
                    report
                        .warnings
                        .push(format!("deploy comment of run {run_id}: {e}"));
                    return;
                }
            };
            let mut wrote = Vec::new();
            for target in &rendered.targets {
                let pr = target.pr_number;
                let ours = written.iter().find(|(p, _)| *p == pr).map(|(_, d)| d);
                // Unchanged since this invocation's own write: done.
                if ours == Some(&rendered.digest) {
                    continue;
                }
                // Unchanged since the last write (by anyone): nothing to do.
                if ours.is_none() && target.digest.as_ref() == Some(&rendered.digest) {
                    continue;
                }
                let claimed = self
                    .ports
                    .metadb()
                    .claim_deploy_comment(run_id, pr, &rendered.digest)
                    .await;
                match claimed {
                    // Another invocation holds this very render: it writes.
                    Ok(false) if ours.is_none() => continue,
                    // This invocation wrote an older render there: the stored
                    // digest may be current while the comment is not.
                    Ok(_) => {}
                    Err(e) => {
                        let e = PortError::new("metadb", e);
                        tracing::warn!(run_id, pull_request = pr, error = %e,
                            "recording the deploy comment's digest");
                        report.warnings.push(format!(
                            "deploy comment of run {run_id} on pull request #{pr}: {e}"
                        ));
                        continue;
                    }
                }
                if self
                    .upsert_deploy_comment(run_id, pr, &rendered, report)
                    .await
                {
                    wrote.push((pr, rendered.digest.clone()));
                }
            }
            if wrote.is_empty() {
                return;
            }
            written.retain(|(p, _)| !wrote.iter().any(|(w, _)| w == p));
            written.extend(wrote);
        }
    }

    /// The write itself; false (a warning, and the digest released for the
    /// next event) when GitHub refused it.
    async fn upsert_deploy_comment(
        &self,
        run_id: RunId,
        pr: u64,
        rendered: &Rendered,
        report: &mut Report,
    ) -> bool {
        let written = self
            .ports
            .github()
            .upsert_comment(pr, &marker(run_id), &rendered.body)
            .await;
        let Err(e) = written else {
            return true;
        };
        let e = PortError::new("github", e);
        tracing::warn!(run_id, pull_request = pr, error = %e, "writing the deploy comment");
        report.warnings.push(format!(
            "deploy comment of run {run_id} on pull request #{pr}: {e}"
        ));
        if let Err(e) = self
            .ports
            .metadb()
            .release_deploy_comment(run_id, pr, &rendered.digest)
            .await
        {
            let e = PortError::new("metadb", e);
            tracing::warn!(run_id, pull_request = pr, error = %e,
                "releasing the deploy comment's digest after a failed write");
        }
        false
    }

    /// The run's comment and where it goes; `None` for a run that has none:
    /// unknown, or queued (a queued run has not started, and is either
    /// started later or superseded by the run whose comment then names its
    /// pull request).
    async fn render_deploy_comment(&self, run_id: RunId) -> Result<Option<Rendered>, PortError> {
        let view: Option<RunView> = self
            .ports
            .metadb()
            .run_view(run_id, COMMENT_UNITS)
            .await
            .map_err(|e| PortError::new("metadb", e))?;
        let Some(view) = view else {
            return Ok(None);
        };
        if view.run.status == RunStatus::Queued {
            return Ok(None);
        }
        let targets = self
            .ports
            .metadb()
            .deploy_comment_targets(run_id, COMMENT_TARGETS)
            .await
            .map_err(|e| PortError::new("metadb", e))?;
        let covered: Vec<u64> = targets
            .iter()
            .map(|t| t.pr_number)
            .filter(|pr| *pr != view.run.pr_id)
            .collect();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        let link = self
            .config()
            .run_pages
            .as_ref()
            .and_then(|pages| pages.url(run_id, now));
        Ok(Some(Rendered {
            targets,
            digest: digest(&render_covering(&view, None, &covered)),
            body: render_covering(&view, link.as_deref(), &covered),
        }))
    }
}
