//! What both phases do before their command: the execution's record and the
//! command and role it allows, an apply's authorisation, the checkout with
//! the account's role, and the child's working environment.

use std::path::PathBuf;

use live_ci_core::deploy::{Action, ExecutionRecord};
use live_ci_core::path::RepoPath;
use live_ci_core::plan_view;
use live_ci_core::port::{
    ArtifactStore, ExecutionStore, GitHost, PortResultExt, RoleAssumer, RunStore, sha256_hex,
};
use live_ci_core::status::StatusState;
use live_ci_core::terraform::{Phase, with_plan_file};

use super::{TerraRunPorts, apply, post_status, status_link};
use crate::checkout::{Checkout, Repo};
use crate::config::{PhaseInput, TerraRunConfig};
use crate::error::{Result, TaskError};
use crate::git_ssh::SshAccess;
use crate::output::say;
use crate::policy::{Policies, Rego};
use crate::{sandbox, timeline};

/// The execution's record: the one the task's start read, or read now.
pub(super) async fn execution<M: ExecutionStore, A, T, G, R>(
    config: &TerraRunConfig,
    ports: &TerraRunPorts<'_, M, A, T, G, R>,
    prefetched: Option<ExecutionRecord>,
) -> Result<ExecutionRecord> {
    let execution_id = &config.execution_id;
    match prefetched.filter(|r| r.execution_id == *execution_id) {
        Some(record) => Ok(record),
        None => ports
            .metadb
            .execution(execution_id)
            .await
            .port("metadb")?
            .ok_or_else(|| TaskError::UnknownExecution(execution_id.clone())),
    }
}

/// Only what the metadb approved is applied, whatever the execution's input
/// says: the voters' decision at its threshold, on a running execution of a
/// running run (`ExecutionRecord::apply_refusal`).
pub(super) async fn authorise_apply<M: RunStore, A, T, G, R>(
    ports: &TerraRunPorts<'_, M, A, T, G, R>,
    record: &ExecutionRecord,
) -> Result<()> {
    let refused = |reason: String| TaskError::Refused {
        phase: Phase::Apply.as_str(),
        execution_id: record.execution_id.clone(),
        reason,
    };
    let run = ports
        .metadb
        .run(record.run_id)
        .await
        .port("metadb")?
        .ok_or_else(|| refused(format!("its run #{} is not in the metadb", record.run_id)))?;
    match record.apply_refusal(run.status) {
        Some(reason) => Err(refused(reason)),
        None => Ok(()),
    }
}

/// What a phase starts from: the checkout with the role's credentials, an
/// apply's approved plan, a plan's judges.
pub(super) struct Started {
    pub(super) prepared: Prepared,
    pub(super) approved: Option<(Vec<u8>, plan_view::ForApply)>,
    pub(super) policies: Option<std::sync::Arc<Policies>>,
}

/// The pending status, the checkout with the role, an apply's approved plan
/// and a plan's policies are independent round trips: they go at once. An
/// apply refuses a plan that is not the approved one before anything else;
/// a policy that does not load stops the plan before it runs.
pub(super) async fn start<
    M: RunStore + ExecutionStore,
    A: ArtifactStore,
    T,
    G: GitHost,
    R: RoleAssumer,
>(
    config: &TerraRunConfig,
    repo: &Repo,
    logs_url: Option<&str>,
    ports: &TerraRunPorts<'_, M, A, T, G, R>,
    record: &ExecutionRecord,
    key: &str,
) -> Result<Started> {
    let phase = config.phase.phase();
    let pending = async {
        post_status(
            ports,
            status_link(config, record.run_id, logs_url).as_deref(),
            phase,
            &record.commit_id,
            &record.cfg_path,
            StatusState::Pending,
            match phase {
                Phase::Plan => "planning",
                Phase::Apply => "applying the approved plan",
            },
            None,
        )
        .await;
        timeline::mark("pending_status");
    };
    let approved = async {
        match &config.phase {
            PhaseInput::Plan => Ok(None),
            PhaseInput::Apply { plan_artifact } => {
                apply::approved_plan(ports, record, plan_artifact, key)
                    .await
                    .map(Some)
            }
        }
    };
    // A plan's judges: the policies of the run's base commit, never of the
    // commit being planned.
    let policies = async {
        match (&config.phase, &config.common.policy_dir) {
            (PhaseInput::Plan, Some(dir)) => {
                base_policies(repo, ports, record, dir).await.map(Some)
            }
            _ => Ok(None),
        }
    };
    let ((), prepared, approved, policies) = tokio::join!(
        pending,
        prepare(config, repo, ports, record, phase),
        approved,
        policies
    );
    let approved = approved?;
    let prepared = prepared?;
    let policies = match &config.phase {
        PhaseInput::Plan => Policies::new(
            policies?,
            config.common.policy_command.clone(),
            config.common.policy_override,
        ),
        PhaseInput::Apply { .. } => None,
    };
    Ok(Started {
        prepared,
        approved,
        policies,
    })
}

/// The unit's checkout made ready for the child: its output directory, the
/// command with the plan file in it, and its allow-listed environment.
pub(super) struct Workspace {
    pub(super) checkout: Checkout,
    pub(super) unit_dir: PathBuf,
    /// In a directory of the child's: the plan command writes the file there.
    pub(super) out_dir: PathBuf,
    pub(super) plan_file: PathBuf,
    pub(super) command: String,
    pub(super) env: Vec<(String, String)>,
    /// Merged code gets the deploy key through an agent the command may sign
    /// with, never read. Kept until the command ends: dropping it stops the
    /// agent.
    _ssh: SshAccess,
}

impl Workspace {
    pub(super) async fn new(
        config: &TerraRunConfig,
        record: &ExecutionRecord,
        prepared: Prepared,
        command: &str,
        phase: Phase,
    ) -> Result<Self> {
        let Prepared {
            checkout,
            unit_dir,
            credentials,
        } = prepared;
        let out_dir = checkout.scratch_file("out");
        sandbox::child_dirs(&[&out_dir])?;
        let plan_file = out_dir.join("unit.tfplan");
        let mut extra = vec![
            (
                "LIVE_CI_REPO_DIR".to_string(),
                checkout.dir().display().to_string(),
            ),
            ("LIVE_CI_CFG_PATH".into(), record.cfg_path.to_string()),
            ("LIVE_CI_EXECUTION_ID".into(), record.execution_id.clone()),
        ];
        let ssh = crate::git_ssh::child_env(
            config.common.git_ssh_key.as_ref(),
            &config.common.ssh_known_hosts,
            &checkout.scratch_file("ssh"),
            crate::git_ssh::KeyUse::Allowed,
        )
        .await?;
        extra.extend(ssh.env().iter().cloned());
        extra.extend(sandbox::private_dirs(&checkout.scratch_file("env"))?);
        let env = sandbox::env_for(credentials.as_ref(), &extra);
        let command = with_plan_file(command, phase, &plan_file.display().to_string());
        Ok(Workspace {
            checkout,
            unit_dir,
            out_dir,
            plan_file,
            command,
            env,
            _ssh: ssh,
        })
    }

    pub(super) fn plan_file_str(&self) -> String {
        self.plan_file.display().to_string()
    }
}

/// A unit's checkout and the credentials of its account's role for the phase.
pub(super) struct Prepared {
    checkout: Checkout,
    unit_dir: PathBuf,
    credentials: Option<live_ci_core::port::TemporaryCredentials>,
}

/// Checks out the commit the unit runs from and assumes its role.
pub(super) async fn prepare<M: RunStore, A: ArtifactStore, T, G, R: RoleAssumer>(
    config: &TerraRunConfig,
    repo: &Repo,
    ports: &TerraRunPorts<'_, M, A, T, G, R>,
    record: &ExecutionRecord,
    phase: Phase,
) -> Result<Prepared> {
    // A removed unit exists only before its removal: its destroy runs from the
    // checkout of the run's range start. A rollback is a destroy too, but of
    // what this run applied at its own commit, so it runs from that commit.
    let source = match record.action {
        Action::Apply => record.commit_id.clone(),
        Action::Destroy if record.is_rollback => record.commit_id.clone(),
        Action::Destroy => {
            ports
                .metadb
                .run(record.run_id)
                .await
                .port("metadb")?
                .ok_or_else(|| TaskError::UnknownExecution(record.execution_id.clone()))?
                .base_sha
        }
    };
    let checked_out = async {
        let checkout = check_out(ports.artifacts, repo, record, &source).await?;
        timeline::mark("checkout");
        let unit_dir = checkout.dir().join(record.cfg_path.as_str());
        if !unit_dir.is_dir() {
            return Err(TaskError::Unit {
                unit: record.cfg_path.to_string(),
                message: format!("no such directory at commit {source:?}"),
            });
        }
        Ok((checkout, unit_dir))
    };
    // The role (an STS round trip) needs only the record: it is assumed
    // while the checkout is made instead of after it. Nothing is handed the
    // credentials before both succeed, and a failed checkout still wins over
    // a refused role, as when they ran one after the other.
    let assumed = async {
        let role = unit_role(config, record, phase)?;
        let credentials = sandbox::assume(
            ports.roles,
            role,
            &format!("{}-{}", phase.as_str(), record.execution_id),
        )
        .await;
        timeline::mark("role");
        credentials
    };
    let (checked_out, credentials) = tokio::join!(checked_out, assumed);
    let (checkout, unit_dir) = checked_out?;
    let credentials = credentials?;
    Ok(Prepared {
        checkout,
        unit_dir,
        credentials,
    })
}

/// The policies (`POLICY_DIR`) at the run's base commit: a one-commit fetch
/// of it, read from git, never the checkout being planned.
pub(super) async fn base_policies<M: RunStore, A, T, G, R>(
    repo: &Repo,
    ports: &TerraRunPorts<'_, M, A, T, G, R>,
    record: &ExecutionRecord,
    dir: &RepoPath,
) -> Result<Rego> {
    let base = ports
        .metadb
        .run(record.run_id)
        .await
        .port("metadb")?
        .ok_or_else(|| TaskError::UnknownExecution(record.execution_id.clone()))?
        .base_sha;
    let (repo, dir) = (repo.clone(), dir.clone());
    tokio::task::spawn_blocking(move || {
        let checkout = Checkout::commit_only(&repo, &base)?;
        Rego::load(&checkout.git, &checkout.commit, &dir)
    })
    .await
    .map_err(|e| TaskError::Io(format!("reading the base commit's policies stopped: {e}")))?
}

/// The checkout of `source`: the run's packed checkout when it has one of that
/// commit (downloaded, its SHA-256 checked against the record, then unpacked),
/// else a fetch of the commit from the repository. A packed checkout whose
/// content is not the recorded one is an error and nothing runs; one that is
/// missing or unreadable falls back to the fetch, with a warning.
pub(super) async fn check_out<A: ArtifactStore>(
    artifacts: &A,
    repo: &Repo,
    record: &ExecutionRecord,
    source: &str,
) -> Result<Checkout> {
    match &record.checkout {
        Some(packed) if source == record.commit_id => {
            let uri = artifacts.uri(&packed.key);
            match artifacts.get(&packed.key).await {
                Ok(Some(bytes)) => {
                    timeline::mark("checkout_download");
                    let sha256 = sha256_hex(&bytes);
                    if sha256 != packed.sha256 {
                        return Err(TaskError::CachedCheckout {
                            key: packed.key.clone(),
                            message: format!(
                                "its content (sha-256 {sha256}) is not the run's recorded checkout (sha-256 {}): refusing to unpack it; nothing was run",
                                packed.sha256
                            ),
                        });
                    }
                    let size = bytes.len();
                    let (key, commit) = (packed.key.clone(), source.to_string());
                    // Unpacking writes thousands of files: off the runtime's threads.
                    let checkout = tokio::task::spawn_blocking(move || {
                        Checkout::unpacked(&key, &bytes, &commit)
                    })
                    .await
                    .map_err(|e| TaskError::Io(format!("unpacking {uri:?} stopped: {e}")))??;
                    say!(
                        "live-ci: checkout of {source} unpacked from the run's packed checkout {uri} ({size} bytes)"
                    );
                    return Ok(checkout);
                }
                Ok(None) => {
                    tracing::warn!(%uri, "the run's packed checkout is missing: fetching the commit");
                    say!(
                        "live-ci: warning: the run's packed checkout {uri} is missing; fetching {source} from the repository"
                    );
                }
                Err(e) => {
                    tracing::warn!(%uri, error = %e, "reading the run's packed checkout: fetching the commit");
                    say!(
                        "live-ci: warning: reading the run's packed checkout {uri}: {e}; fetching {source} from the repository"
                    );
                }
            }
        }
        Some(_) => say!(
            "live-ci: a destroy of a removed unit runs from the range's start {source}, not the run's packed commit: fetching it"
        ),
        None => say!("live-ci: the run has no packed checkout: fetching {source}"),
    }
    // git runs as blocking child processes: off the runtime's threads, so the
    // status and the plan download go on meanwhile.
    let (repo, commit) = (repo.clone(), source.to_string());
    tokio::task::spawn_blocking(move || Checkout::commit_only(&repo, &commit))
        .await
        .map_err(|e| TaskError::Io(format!("the checkout of {source:?} stopped: {e}")))?
}

/// The command of this phase, from the metadb record: the state machine's
/// `LIVE_CI_COMMAND` may only repeat it, so a tampered execution input cannot
/// run another command (with the account's role) than the one recorded when
/// the run was created.
pub(super) fn unit_command(
    config: &TerraRunConfig,
    record: &ExecutionRecord,
    phase: Phase,
) -> Result<String> {
    let recorded = match phase {
        Phase::Plan => &record.plan_command,
        Phase::Apply => &record.apply_command,
    };
    match config.command.as_deref().filter(|c| !c.is_empty()) {
        Some(asked) if asked != recorded => Err(TaskError::Refused {
            phase: phase.as_str(),
            execution_id: record.execution_id.clone(),
            reason: format!(
                "LIVE_CI_COMMAND {asked:?} is not the recorded {} command {recorded:?}",
                phase.as_str()
            ),
        }),
        _ => Ok(recorded.clone()),
    }
}

/// The role of the unit's own account for this phase, from the metadb record:
/// the state machine's `LIVE_CI_ROLE_ARN` may only repeat it, so a tampered
/// execution input cannot borrow another account's role.
pub(super) fn unit_role<'r>(
    config: &TerraRunConfig,
    record: &'r ExecutionRecord,
    phase: Phase,
) -> Result<&'r str> {
    let role = match phase {
        Phase::Plan => record.plan_role_arn.as_str(),
        Phase::Apply => record.apply_role_arn.as_str(),
    };
    match config.role_arn.as_deref().filter(|r| !r.is_empty()) {
        Some(asked) if asked != role => Err(TaskError::Unit {
            unit: record.cfg_path.to_string(),
            message: format!(
                "LIVE_CI_ROLE_ARN {asked:?} is not the {} role of account {:?} ({role:?}); refusing to assume it",
                phase.as_str(),
                record.account_name
            ),
        }),
        _ => Ok(role),
    }
}
