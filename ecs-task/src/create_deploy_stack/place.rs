//! A merge placed on the trunk against the runs already recorded: superseded
//! by a queued or started run that covers it, or deploying the range from the
//! newest started run's commit (or the pull request's base, or the first
//! parent). A filter that does not parse and a change to a stack live-ci
//! cannot generate fail here, before anything is written.

use live_ci_core::account::Accounts;
use live_ci_core::deploy::{NewRun, RunId, TrunkPlace, place_on_trunk};
use live_ci_core::port::{PortResultExt, RunStore};
use live_ci_terragrunt::change::refuse_changed_stacks_between;
use live_ci_terragrunt::filter::RunFilters;
use live_ci_terragrunt::plan::DeploymentPlan;

use super::{DeployPorts, DeployReport, NO_PULL_REQUEST, TRUNK_WINDOW};
use crate::checkout::{Checkout, Repo};
use crate::config::CreateDeployStackConfig;
use crate::error::Result;
use crate::output::say;
use crate::timeline;

/// A merge to deploy: its checkout and the range the run deploys.
pub(super) struct Placed {
    pub(super) pr_id: u64,
    pub(super) checkout: Checkout,
    /// The merge commit, resolved.
    pub(super) commit: String,
    /// The range's start: terra-run checks a destroy out there.
    pub(super) base: String,
    pub(super) trunk_seq: u64,
    pub(super) filters: RunFilters,
    pub(super) accounts: Accounts,
}

pub(super) enum Placement {
    /// A queued or started run covers the merge: recorded, never applied.
    Superseded(DeployReport),
    Deploy(Placed),
}

/// Places the merge on the trunk.
pub(super) async fn place<Ports: DeployPorts>(
    config: &CreateDeployStackConfig,
    repo: &Repo,
    ports: &Ports,
) -> Result<Placement> {
    // trigger_sf's sweep launches a trunk head no webhook announced: it knows
    // no pull request, and the run is recorded under PR 0.
    let pr_id = config.pr_number.unwrap_or(NO_PULL_REQUEST);
    let accounts = Accounts::from_json("ACCOUNT_PARENT_CFG", &config.accounts_json)?;
    let checkout = Checkout::new(repo, &config.commit)?;
    timeline::mark("checkout");
    let commit = checkout.commit.clone();
    // First, before the trunk placement can record anything: a filter that
    // does not parse fails the run with nothing written.
    let filters = crate::filters::load(&checkout.git, &commit, &config.common.deploy_filters)?;
    // The pull request's base when it is on this line of history (it spans
    // every commit of a rebase-merge), else the first parent.
    let merged_onto = match &config.base_sha {
        Some(b) if checkout.git.is_ancestor(b, &commit)? => checkout.git.resolve(b)?,
        _ => checkout.git.first_parent(&commit)?,
    };
    // Likewise a change to a stack live-ci cannot generate (its units would
    // silently be missing from the run): the merge's own changes are checked
    // here; the whole deployed range again when the units are found.
    refuse_changed_stacks_between(&checkout.git, &merged_onto, &commit)?;
    let trunk_seq = checkout.git.first_parent_depth(&commit)?;
    let runs = ports
        .metadb()
        .trunk_runs(TRUNK_WINDOW)
        .await
        .port("metadb")?;
    let place = place_on_trunk(&commit, &runs, |a, b| checkout.git.is_ancestor(a, b))?;
    let base = match &place {
        TrunkPlace::Superseded { by, commit: cover } => {
            say!(
                "live-ci create-deploy-stack: PR #{pr_id}, merge commit {commit} is already in \
                 run #{by} (commit {cover}): superseded, not applied"
            );
            let report = record_superseded(config, ports, pr_id, &commit, trunk_seq, *by).await?;
            return Ok(Placement::Superseded(report));
        }
        TrunkPlace::After { commit: from, .. } => from.clone(),
        TrunkPlace::Existing { base, .. } => base.clone(),
        // Nothing deployed yet.
        TrunkPlace::First => merged_onto,
    };
    say!(
        "live-ci create-deploy-stack: PR #{pr_id}, merge commit {commit} (trunk position \
         {trunk_seq}), deploying the range from {base}"
    );
    Ok(Placement::Deploy(Placed {
        pr_id,
        checkout,
        commit,
        base,
        trunk_seq,
        filters,
        accounts,
    }))
}

/// Records a merge a queued or started run covers; nothing is applied.
async fn record_superseded<Ports: DeployPorts>(
    config: &CreateDeployStackConfig,
    ports: &Ports,
    pr_id: u64,
    commit: &str,
    trunk_seq: u64,
    by: RunId,
) -> Result<DeployReport> {
    let run = NewRun {
        pr_id,
        commit_id: commit.to_string(),
        base_ref: config
            .base_ref
            .clone()
            .unwrap_or_else(|| config.common.trunk_branch.clone()),
        head_ref: config.head_ref.clone().unwrap_or_default(),
        base_sha: commit.to_string(),
        head_sha: commit.to_string(),
        max_parallel: config.common.max_parallel,
        fail_fast: config.common.fail_fast,
        trunk_seq,
        checkout: None,
        executions: Vec::new(),
    };
    let run_id = ports
        .metadb()
        .record_superseded(&run, by)
        .await
        .port("metadb")?;
    Ok(DeployReport {
        run_id,
        created: run_id.is_some(),
        started: false,
        plan: DeploymentPlan {
            max_parallel: config.common.max_parallel as usize,
            account_caps: Default::default(),
            units: Vec::new(),
            makespan: 0.0,
        },
        execution_ids: Vec::new(),
        warnings: Vec::new(),
        superseded_by: Some(by),
        not_destroyed: Vec::new(),
    })
}
