//! The run recorded and handed over: its packed checkout stored, the run and
//! its executions written in one metadb transaction (which takes the merge
//! lock or queues the run), the lock mirrored, trigger-sf invoked.

use live_ci_core::deploy::{CreatedRun, NewExecution, NewRun, RunId, RunStatus};
use live_ci_core::merge_lock::{Advisory, Publisher};
use live_ci_core::port::{
    ArtifactStore, CachedCheckout, FunctionInvoker, PortError, PortResultExt, RunStore, run_payload,
};

use super::DeployPorts;
use super::place::Placed;
use crate::config::CreateDeployStackConfig;
use crate::error::{Result, TaskError};
use crate::output::say;
use crate::timeline;
use live_ci_git::GitCli;

/// The merge commit's checkout as its terra-runs need it (the commit alone,
/// work tree and `.git`, as `Checkout::commit_only` fetches it), packed from
/// the clone at `clone`, in a scratch directory of its own; and how long that
/// took.
pub(super) fn pack_commit(
    clone: &std::path::Path,
    commit: &str,
) -> std::result::Result<(Vec<u8>, std::time::Duration), String> {
    let started = std::time::Instant::now();
    let scratch = tempfile::Builder::new()
        .prefix("live-ci-pack-")
        .tempdir()
        .map_err(|e| format!("cannot create a scratch directory: {e}"))?;
    let dir = scratch.path().join("repo");
    GitCli::fetch_commit(&clone.display().to_string(), &dir, commit, None)
        .map_err(|e| e.to_string())?;
    let bytes = crate::checkout_cache::pack(&dir)?;
    Ok((bytes, started.elapsed()))
}

/// Stores the packed checkout in the plan bucket under its content's key. On
/// failure, why: the run still deploys, its terra-runs fetching the commit
/// from the repository.
async fn store_packed<A: ArtifactStore>(
    artifacts: &A,
    commit: &str,
    packing: tokio::task::JoinHandle<std::result::Result<(Vec<u8>, std::time::Duration), String>>,
) -> std::result::Result<CachedCheckout, String> {
    let (bytes, took) = packing
        .await
        .map_err(|e| format!("packing it stopped: {e}"))?
        .map_err(|e| format!("packing it: {e}"))?;
    timeline::mark("checkout_pack");
    let cached = CachedCheckout::of(commit, &bytes);
    let size = bytes.len();
    let uri = artifacts.uri(&cached.key);
    artifacts
        .put(&cached.key, bytes)
        .await
        .map_err(|e| format!("storing {uri}: {e}"))?;
    timeline::mark("checkout_upload");
    say!(
        "live-ci: checkout of {commit} packed in {} ms to {uri} ({size} bytes, sha-256 {})",
        took.as_millis(),
        cached.sha256
    );
    Ok(cached)
}

/// The packed checkout stored, or a warning: its tasks then fetch the commit.
pub(super) async fn packed<A: ArtifactStore>(
    artifacts: &A,
    commit: &str,
    packing: tokio::task::JoinHandle<std::result::Result<(Vec<u8>, std::time::Duration), String>>,
    warnings: &mut Vec<String>,
) -> Option<CachedCheckout> {
    match store_packed(artifacts, commit, packing).await {
        Ok(packed) => Some(packed),
        Err(why) => {
            let warning = format!(
                "the run's checkout is not cached ({why}); its tasks fetch {commit} from the repository"
            );
            tracing::warn!(%commit, %why, "the run has no packed checkout");
            say!("live-ci: warning: {warning}");
            warnings.push(warning);
            None
        }
    }
}

/// The run as the metadb records it, with the packed checkout, so it is
/// there before any execution can start.
pub(super) fn new_run(
    config: &CreateDeployStackConfig,
    placed: &Placed,
    checkout: Option<CachedCheckout>,
    executions: Vec<NewExecution>,
) -> NewRun {
    NewRun {
        pr_id: placed.pr_id,
        commit_id: placed.commit.clone(),
        base_ref: config
            .base_ref
            .clone()
            .unwrap_or_else(|| config.common.trunk_branch.clone()),
        head_ref: config.head_ref.clone().unwrap_or_default(),
        // The range deployed: terra-run checks a destroy out at its start.
        base_sha: placed.base.clone(),
        head_sha: placed.commit.clone(),
        max_parallel: config.common.max_parallel,
        fail_fast: config.common.fail_fast,
        trunk_seq: placed.trunk_seq,
        checkout,
        executions,
    }
}

/// A run created, then superseded in the same transaction by a newer merge
/// that started first: nothing of it will run. `Some(by)` then (the run that
/// superseded it, when recorded).
pub(super) async fn superseded_at_once<Ports: DeployPorts>(
    ports: &Ports,
    created: &CreatedRun,
) -> Result<Option<Option<RunId>>> {
    say!(
        "live-ci: run #{} {} ({})",
        created.run_id,
        if created.created {
            "created"
        } else {
            "already existed"
        },
        if created.started {
            "holds the merge lock"
        } else {
            "queued"
        }
    );
    if !created.created || created.started {
        return Ok(None);
    }
    let stored = ports.metadb().run(created.run_id).await.port("metadb")?;
    Ok(stored
        .filter(|r| r.status == RunStatus::Superseded)
        .map(|r| r.superseded_by))
}

/// Publishes the lock for the run just written, through the lock's owner
/// ([`Publisher::publish_new_run`]): the parameter when the run took the
/// lock (required), the open pull requests' statuses (advisory: a failure is
/// a warning), also for a queued run under `units`.
pub(super) async fn publish_lock<Ports: DeployPorts>(
    config: &CreateDeployStackConfig,
    ports: &Ports,
    created: &CreatedRun,
    pr_id: u64,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let publisher = Publisher {
        metadb: ports.metadb(),
        params: ports.params(),
        param: &config.merge_lock_param,
        advisory: Advisory::Refresh {
            host: ports.github(),
            scope: config.merge_lock_scope,
            trunk: &config.common.trunk_branch,
            pattern: &config.common.file_pattern,
        },
    };
    let published = publisher.publish_new_run(created, pr_id).await;
    let published = published.map_err(PortError::from)?;
    warnings.extend(published.and_then(|p| p.warning));
    Ok(())
}

/// Invokes trigger-sf with the run.
pub(super) async fn hand_over<Ports: DeployPorts>(
    config: &CreateDeployStackConfig,
    ports: &Ports,
    run_id: RunId,
) -> Result<()> {
    let function = &config.trigger_sf_function;
    ports
        .invoker()
        .invoke(function, &run_payload(run_id))
        .await
        .port("lambda")
        .map_err(|source| TaskError::Invoke {
            function: function.clone(),
            run_id,
            source,
        })?;
    Ok(())
}
