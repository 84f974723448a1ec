//! Ports the domain needs from the outside world, implemented by adapters in
//! other crates (the git CLI adapter lives in `live-ci-git`, the metadb in
//! `live-ci-metadb`, the Step Functions engine in `live-ci-stepfunctions`).
//!
//! The metadb is several ports, one per role, so each consumer names only what
//! it uses: [`RunStore`] (runs and the merge lock), [`ExecutionStore`] (the
//! scheduler's executions and what the tasks record), [`SweepStore`] (the
//! sweep's repair queries), [`ApprovalStore`] (approvals and votes) and
//! [`RunControl`] (the operator's commands), [`DeployCommentStore`] (the
//! deploy comment's targets and digests), [`DriftStore`] (drift checks and
//! their issues). [`Notifications`] publishes the
//! events teams read in chat, advisory like commit statuses. `live-ci-metadb`'s adapters
//! implement all of them over one SQL text.

mod approvals;
mod artifact;
mod cipher;
mod credentials;
mod deliveries;
mod deploy_comments;
mod drift;
mod error;
mod executions;
mod git_host;
mod invoke;
mod mailer;
mod notify;
mod params;
mod pr_authority;
mod run_control;
mod runs;
mod sweep;
mod task;
mod tree;
mod workflow;

pub use approvals::{
    ApprovalRecord, ApprovalStore, Ballot, Cast, NewApprovalRequest, RequestStored, StoredRequest,
    VoteChannel, VoteView, Voted, github_voter_id,
};
pub use artifact::{ArtifactStore, CachedCheckout, SavedPlan, checkout_key, sha256_hex};
pub use cipher::{EXECUTION_CONTEXT_KEY, TokenCipher};
pub use credentials::{RoleAssumer, TemporaryCredentials, session_name};
pub use deliveries::{DELIVERY_HORIZON, DeliveryClaim, DeliveryLog, STALE_CLAIM};
pub use deploy_comments::{CommentTarget, DeployCommentStore};
pub use drift::DriftStore;
pub use error::{Classify, ErrorKind, PERMANENT_ERROR, PortError, PortResultExt, RETRYABLE_ERROR};
pub use executions::ExecutionStore;
pub use git_host::{BranchHead, CommitPullRequest, GitHost, IssueHost, merge_that_produced};
pub use invoke::{FunctionInvoker, github_vote_payload, run_payload};
pub use mailer::{Email, Mailer, address_problem};
pub use notify::{NoNotifications, Notifications, announce};
pub use params::ParamStore;
pub use pr_authority::{PullRequestAuthority, PullRequestComment, PullRequestVotes};
pub use run_control::RunControl;
pub use runs::RunStore;
pub use sweep::SweepStore;
pub use task::TaskLauncher;
pub use tree::FileTree;
pub use workflow::{ExecutionDescription, TaskFailures, TaskTokens, TokenDelivery, WorkflowEngine};

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::path::RepoPath;

/// How a file differs between two revisions. Renames arrive as a deletion of
/// the old path and an addition of the new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// The file exists only in the newer revision.
    Added,
    /// The file's contents or mode differ.
    Modified,
    /// The file exists only in the older revision.
    Deleted,
}

/// One changed file between two revisions.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FileChange {
    /// The file's path (the new one for an addition, the old for a deletion).
    pub path: RepoPath,
    /// How the file differs.
    pub kind: ChangeKind,
}

/// A version-control system holding the live repository.
pub trait Vcs: Send + Sync {
    /// Files changed from the merge base of `base` and `head` to `head`
    /// (`git diff base...head`). `head = None` compares with the working tree.
    fn changed_files(&self, base: &str, head: Option<&str>) -> Result<Vec<FileChange>>;

    /// The repository's files at a revision (`None`: the working tree).
    fn tree_at(&self, rev: Option<&str>) -> Result<Box<dyn FileTree>>;

    /// The merge base of two revisions, as a full commit id.
    fn merge_base(&self, a: &str, b: &str) -> Result<String>;
}
