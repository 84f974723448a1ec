//! The lock's life after the metadb decides it: the parameter the receiver
//! reads mirrors the row, and open pull requests show it as a status. Every
//! caller makes one call here, so what is required and what is advisory is
//! decided once:
//! - reading ([`read_confirmed`], the receiver): a "locked" parameter is
//!   confirmed against the row, so a lost write cannot outlive the run;
//! - publishing ([`Publisher::publish`], trigger-sf and the operator's
//!   controls; [`Publisher::publish_new_run`], create-deploy-stack): the
//!   parameter write is REQUIRED (its failure fails the caller: the receiver
//!   would answer a stale lock), the statuses are ADVISORY (a failure is a
//!   warning: the parameter already says the truth and the receiver posts it
//!   on every pull-request event);
//! - reconciling ([`Publisher::reconcile`], trigger-sf's sweep): a parameter
//!   out of step with the row is rewritten and the statuses refreshed.

use std::collections::BTreeSet;
use std::future::Future;

use super::units::{PLAN_COMMENT_MARKER, PullRequestUnits};
use super::{MergeLock, Scope};
use crate::deploy::CreatedRun;
use crate::port::{Classify, ErrorKind, GitHost, ParamStore, PortError, PortResultExt, RunStore};
use crate::webhook::FilePattern;

/// The required part of reading or publishing the lock failed.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Reading the metadb's row or the parameter failed, or the parameter
    /// holds no lock ([`Unreadable`], a permanent "parameter store" failure).
    #[error(transparent)]
    Read(PortError),
    /// Writing the parameter failed: the receiver would answer a stale lock.
    #[error("writing the merge lock {param:?}: {source}")]
    Write {
        /// The parameter's name.
        param: String,
        /// The parameter store's error.
        #[source]
        source: PortError,
    },
}

/// The port failure alone, as callers reported it before the lock had one
/// owner ("parameter store: …", "metadb: …").
impl From<LockError> for PortError {
    fn from(e: LockError) -> Self {
        match e {
            LockError::Read(e) | LockError::Write { source: e, .. } => e,
        }
    }
}

/// A parameter value that is neither "none" nor a pull request number: the
/// same value fails the same way again.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Unreadable(pub String);

impl Classify for Unreadable {
    fn kind(&self) -> ErrorKind {
        ErrorKind::Permanent
    }
}

/// Where publishing posts the "Merge Lock" status of open pull requests.
#[derive(Debug)]
pub enum Advisory<'a, H> {
    /// On the head of every open pull request into `trunk` that touches files
    /// matching `pattern`, decided by `scope`; a failure is a warning.
    Refresh {
        /// The git host the statuses are posted through.
        host: &'a H,
        /// Which pull requests the lock holds (module variable `merge_lock_scope`).
        scope: Scope,
        /// The trunk branch pull requests merge into.
        trunk: &'a str,
        /// The changed files that make a pull request an infrastructure one.
        pattern: &'a FilePattern,
    },
    /// Nowhere: the caller holds no GitHub client (the operator's controls,
    /// run from the CLI with AWS and metadb credentials only). Open pull
    /// requests keep the status they show until their next event, when the
    /// receiver posts the lock read from the parameter and confirmed against
    /// the row; trigger-sf's sweep does not refresh them, since the parameter
    /// is in step with the row.
    NotPosted,
}

/// What publishing did: the lock mirrored, and the advisory statuses'
/// failure, as the warning the caller reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// The lock written into the parameter.
    pub lock: MergeLock,
    /// Why the advisory statuses were not all posted; `None` when they were.
    pub warning: Option<String>,
}

/// What reconciling did: the lock written when the parameter was out of step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reconciled {
    /// The lock written; `None` when the parameter was in step.
    pub repaired: Option<MergeLock>,
    /// Why the advisory statuses were not all posted; `None` when they were.
    pub warning: Option<String>,
}

/// Publishes the metadb's lock: the parameter the receiver reads, then the
/// open pull requests' statuses ([`Advisory`]).
#[derive(Debug)]
pub struct Publisher<'a, M, P, H> {
    /// The metadb whose lock row is the truth.
    pub metadb: &'a M,
    /// The parameter store holding the receiver's copy.
    pub params: &'a P,
    /// The parameter the receiver reads (module variable `merge_lock_ssm_key`).
    pub param: &'a str,
    /// Where and how the open pull requests' statuses are posted.
    pub advisory: Advisory<'a, H>,
}

impl<M: RunStore, P: ParamStore, H: GitHost> Publisher<'_, M, P, H> {
    /// Writes `lock` into the parameter (required), then posts the statuses
    /// (advisory).
    pub async fn publish(&self, lock: MergeLock) -> Result<Published, LockError> {
        self.write(lock).await?;
        let warning = self.refresh(lock).await;
        Ok(Published { lock, warning })
    }

    /// Reads the row (the truth) and publishes it.
    pub async fn publish_row(&self) -> Result<Published, LockError> {
        let lock = self.read_row().await?;
        self.publish(lock).await
    }

    /// create-deploy-stack's publish after writing a run: the parameter only
    /// when the run took the lock (a row read as free then means the run is
    /// already done with it: it is still shown held by its pull request
    /// until trigger-sf publishes the end); the statuses also when a queued
    /// run made its units busy under `units` (pull requests that touch them
    /// must show the lock before they can merge). `None`: nothing to publish.
    pub async fn publish_new_run(
        &self,
        created: &CreatedRun,
        pr_id: u64,
    ) -> Result<Option<Published>, LockError> {
        if !(created.started || (created.created && self.scope() == Some(Scope::Units))) {
            return Ok(None);
        }
        let lock = match self.read_row().await? {
            MergeLock::Free if created.started => MergeLock::Held { pr: pr_id },
            other => other,
        };
        if created.started {
            self.write(lock).await?;
        }
        let warning = self.refresh(lock).await;
        Ok(Some(Published { lock, warning }))
    }

    /// Rewrites the parameter when it differs from the row (or cannot be
    /// read): a write that failed after a run finished (the retries then see
    /// the run finished and never write again) would otherwise leave the
    /// receiver answering "locked" with no run running. In step under
    /// `units` with the lock held, the statuses are refreshed anyway: a pull
    /// request planned since the lock was taken is freed, at the latest one
    /// sweep after its plan.
    pub async fn reconcile(&self) -> Result<Reconciled, LockError> {
        let truth = self.read_row().await?;
        let mirrored = self.params.get(self.param).await;
        let in_step = matches!(&mirrored, Ok(v) if MergeLock::parse(v) == Ok(truth));
        if !in_step {
            tracing::warn!(parameter = ?mirrored.as_ref().ok(), metadb = %truth,
                "merge lock parameter out of step; rewriting it");
            let published = self.publish(truth).await?;
            return Ok(Reconciled {
                repaired: Some(truth),
                warning: published.warning,
            });
        }
        let warning = if self.scope() == Some(Scope::Units) && truth != MergeLock::Free {
            self.refresh(truth).await
        } else {
            None
        };
        Ok(Reconciled {
            repaired: None,
            warning,
        })
    }

    /// The statuses' scope; `None` when none are posted.
    fn scope(&self) -> Option<Scope> {
        match self.advisory {
            Advisory::Refresh { scope, .. } => Some(scope),
            Advisory::NotPosted => None,
        }
    }

    async fn read_row(&self) -> Result<MergeLock, LockError> {
        let row = self.metadb.merge_lock().await.port("metadb");
        row.map(|row| row.lock()).map_err(LockError::Read)
    }

    async fn write(&self, lock: MergeLock) -> Result<(), LockError> {
        self.params
            .put(self.param, &lock.to_string())
            .await
            .port("parameter store")
            .map_err(|source| LockError::Write {
                param: self.param.to_string(),
                source,
            })
    }

    /// The advisory statuses: a failure is logged and returned as the warning.
    async fn refresh(&self, lock: MergeLock) -> Option<String> {
        let Advisory::Refresh {
            host,
            scope,
            trunk,
            pattern,
        } = self.advisory
        else {
            return None;
        };
        let e = publish_statuses(self.metadb, host, lock, scope, trunk, pattern)
            .await
            .err()?;
        tracing::warn!(error = %e, "refreshing merge lock statuses");
        Some(format!("merge lock statuses: {e}"))
    }
}

/// The merge lock as the metadb (the truth) has it, for [`confirm`].
pub trait LockTruth: Send + Sync {
    /// The lock the metadb's row holds now.
    fn merge_lock(&self) -> impl Future<Output = Result<MergeLock, PortError>> + Send;
}

/// The metadb's lock row, through any metadb adapter.
#[derive(Debug)]
pub struct MetadbLock<M>(pub M);

impl<M: RunStore> LockTruth for MetadbLock<M> {
    async fn merge_lock(&self) -> Result<MergeLock, PortError> {
        self.0
            .merge_lock()
            .await
            .map(|row| row.lock())
            .port("metadb")
    }
}

/// The type of a reader that answers from the parameter alone (it has no
/// value).
#[derive(Debug)]
pub enum NoLockCheck {}

impl LockTruth for NoLockCheck {
    async fn merge_lock(&self) -> Result<MergeLock, PortError> {
        match *self {}
    }
}

/// The lock the receiver answers: the parameter `param`, a "locked" value
/// confirmed against `truth` ([`confirm`]).
pub async fn read_confirmed<P: ParamStore, T: LockTruth>(
    params: &P,
    param: &str,
    truth: Option<&T>,
) -> Result<MergeLock, LockError> {
    let value = params
        .get(param)
        .await
        .port("parameter store")
        .map_err(LockError::Read)?;
    let mirrored = MergeLock::parse(&value)
        .map_err(|e| LockError::Read(PortError::new("parameter store", Unreadable(e))))?;
    Ok(confirm(mirrored, truth).await)
}

/// A "locked" parameter is answered only when the row agrees, so a lost
/// mirror write after a run finished cannot keep pull requests locked. An
/// unreadable row keeps the mirrored value: locked for a while is safe,
/// unlocked during a deploy not. A "free" parameter is answered as it is
/// (the publishers write it only from the row).
pub async fn confirm<T: LockTruth>(mirrored: MergeLock, truth: Option<&T>) -> MergeLock {
    let (MergeLock::Held { .. }, Some(truth)) = (mirrored, truth) else {
        return mirrored;
    };
    match truth.merge_lock().await {
        Ok(row) => {
            if row != mirrored {
                tracing::warn!(parameter = %mirrored, metadb = %row,
                    "merge lock parameter out of step with the metadb; answering the metadb's");
            }
            row
        }
        Err(e) => {
            tracing::warn!(error = %e, "reading the metadb's merge lock; answering the parameter's");
            mirrored
        }
    }
}

/// The lock's statuses on every open pull request into `trunk` that touches
/// files matching `pattern` ([`refresh_statuses`]), with the running and
/// queued runs' units read from `metadb` when the scope needs them.
pub async fn publish_statuses<M: RunStore, H: GitHost>(
    metadb: &M,
    host: &H,
    lock: MergeLock,
    scope: Scope,
    trunk: &str,
    pattern: &FilePattern,
) -> Result<Vec<u64>, PortError> {
    // "repo" (and a free lock) reads nothing more than it always did.
    let busy: BTreeSet<String> = if scope == Scope::Units && lock != MergeLock::Free {
        metadb
            .busy_units()
            .await
            .port("metadb")?
            .into_iter()
            .collect()
    } else {
        BTreeSet::new()
    };
    refresh_statuses(host, lock, scope, &busy, trunk, pattern).await
}

/// Posts the lock's status on the head of every open pull request into `trunk`
/// that touches files matching `pattern`, so no stale "free" status lets a pull
/// request merge during a deploy. Under [`Scope::Units`] with the lock held,
/// each pull request's status is decided on its recorded units and `busy`
/// (the running and queued runs' units). Returns the pull requests updated.
pub async fn refresh_statuses<H: GitHost>(
    host: &H,
    lock: MergeLock,
    scope: Scope,
    busy: &BTreeSet<String>,
    trunk: &str,
    pattern: &FilePattern,
) -> Result<Vec<u64>, PortError> {
    let scoped = scope == Scope::Units && lock != MergeLock::Free;
    let mut updated = Vec::new();
    for pr in host.open_pull_requests(trunk).await.port("github")? {
        let files = host.pull_request_files(pr.number).await.port("github")?;
        if !pattern.matches_any(&files) {
            continue;
        }
        let status = if scoped {
            // A record that cannot be read holds the lock like no record.
            let record = match host.bot_comment(pr.number, PLAN_COMMENT_MARKER).await {
                Ok(body) => body.as_deref().and_then(PullRequestUnits::from_comment),
                Err(e) => {
                    tracing::warn!(pull_request = pr.number, error = %PortError::new("github", e),
                        "reading pull request units; the lock holds for it");
                    None
                }
            };
            scope.status_for(lock, busy, record.as_ref(), &pr.head_sha)
        } else {
            lock.status_for(&pr.head_sha)
        };
        host.set_status(&status).await.port("github")?;
        updated.push(pr.number);
    }
    Ok(updated)
}
