//! The run's units: the affected units of the deployed range (graph scan or
//! plan scan) with the units left pending by a failure, narrowed by the
//! filters; then the deployment plan and each unit's execution.

use std::collections::{BTreeMap, BTreeSet};

use live_ci_core::account::Accounts;
use live_ci_core::deploy::{Action, NewExecution};
use live_ci_core::path::RepoPath;
use live_ci_core::port::{PortResultExt, RoleAssumer, RunStore, Vcs};
use live_ci_core::terraform::new_providers;
use live_ci_terragrunt::change::{
    Affected, AffectedUnit, Reason, detect, graph_at, refuse_changed_stacks_between,
};
use live_ci_terragrunt::executions::{RunContext, executions_from_plan};
use live_ci_terragrunt::plan::{DeploymentPlan, PlanOptions, build_plan};
use live_ci_terragrunt::providers::ProviderIndex;
use live_ci_terragrunt::{Graph, discover};

use super::DeployPorts;
use super::place::Placed;
use crate::checkout::Checkout;
use crate::config::{CreateDeployStackConfig, ScanType};
use crate::error::{Result, TaskError};
use crate::output::say;
use crate::plans::{PlanRequest, plan_with_plan_roles};

/// The units the run deploys, and what was said about the others.
pub(super) struct Found {
    pub(super) affected: Affected,
    pub(super) head: Graph,
    /// The graph at the range's start, when detection needed it.
    pub(super) base_graph: Option<Graph>,
    pub(super) warnings: Vec<String>,
    /// Units the range removes that are not destroyed (`ALLOW_DESTROY` off).
    pub(super) not_destroyed: Vec<RepoPath>,
}

/// The affected units of the range, the pending ones added, narrowed by the
/// filters (pending units too).
pub(super) async fn find<Ports: DeployPorts>(
    config: &CreateDeployStackConfig,
    ports: &Ports,
    placed: &Placed,
) -> Result<Found> {
    let (checkout, base, commit) = (&placed.checkout, &placed.base, &placed.commit);
    let mut warnings = Vec::new();
    let mut not_destroyed = Vec::new();
    let (mut affected, head, base_graph) = match config.common.scan_type {
        ScanType::Graph => {
            let d = detect(
                &checkout.git,
                base,
                Some(commit),
                config.common.allow_destroy,
            )?;
            warnings.extend(d.affected.skipped.iter().map(|s| s.reason.clone()));
            not_destroyed.extend(
                d.affected
                    .skipped
                    .iter()
                    .filter(|s| s.action == Action::Destroy)
                    .map(|s| s.path.clone()),
            );
            (d.affected, d.head, d.base)
        }
        ScanType::Plan => {
            refuse_changed_stacks_between(&checkout.git, base, commit)?;
            let head = graph_at(&checkout.git, Some(commit))?;
            let affected =
                plan_scan(config, &placed.accounts, checkout, &head, ports.roles()).await?;
            (affected, head, None)
        }
    };
    let pending = ports.metadb().pending_units().await.port("metadb")?;
    add_pending(&mut affected, &head, pending.iter().map(|p| &p.cfg_path));
    let narrowed = crate::filters::narrow_affected(
        &checkout.git,
        checkout.dir(),
        affected,
        &head,
        base_graph.as_ref(),
        &placed.filters,
    )?;
    let affected = narrowed.affected;
    not_destroyed.retain(|p| affected.skipped.iter().any(|s| &s.path == p));
    warnings.extend(
        narrowed
            .excluded
            .iter()
            .map(|e| format!("{} is left out by {}", e.path, e.describe())),
    );
    Ok(Found {
        affected,
        head,
        base_graph,
        warnings,
        not_destroyed,
    })
}

/// The deployment plan (critical-path priorities weigh each unit by how long
/// it took before) and each unit's execution with its new providers.
pub(super) async fn build<Ports: DeployPorts>(
    config: &CreateDeployStackConfig,
    ports: &Ports,
    placed: &Placed,
    found: &mut Found,
) -> Result<(DeploymentPlan, Vec<NewExecution>)> {
    let paths: Vec<RepoPath> = found
        .affected
        .units
        .iter()
        .map(|u| u.path.clone())
        .collect();
    let durations = ports.metadb().unit_durations(&paths).await.port("metadb")?;
    let plan = build_plan(
        &found.affected,
        &found.head,
        found.base_graph.as_ref(),
        &PlanOptions {
            accounts: Some(&placed.accounts),
            max_parallel: config.common.max_parallel as usize,
            durations: durations.into_iter().collect(),
        },
    )?;
    let providers = unit_new_providers(
        &placed.checkout,
        &placed.base,
        &placed.commit,
        &found.head,
        &plan,
        &mut found.warnings,
    )?;
    let executions = executions_from_plan(
        &plan,
        &RunContext {
            pr_id: placed.pr_id,
            commit_id: &placed.commit,
            accounts: &placed.accounts,
            plan_command: &config.common.plan_command,
            apply_command: &config.common.apply_command,
            new_providers: &providers,
        },
    )?;
    for w in &found.warnings {
        say!("live-ci: warning: {w}");
    }
    for e in &executions {
        say!(
            "live-ci: {} {} ({}) waits for {:?}, accounts {:?}, new providers {:?}",
            e.execution_id,
            e.cfg_path,
            e.account_name,
            e.wait_for,
            e.wait_accounts,
            e.new_providers
        );
    }
    Ok((plan, executions))
}

/// Adds the units whose last deployment failed (and that still exist) to the
/// affected set: a failure leaves them pending until a run applies them.
fn add_pending<'a>(
    affected: &mut Affected,
    head: &Graph,
    pending: impl Iterator<Item = &'a RepoPath>,
) {
    let mut added = false;
    for path in pending {
        if head.index_of(path).is_none() {
            continue;
        }
        match affected.units.iter_mut().find(|u| &u.path == path) {
            Some(u) if u.action == Action::Apply => {
                if !u.reasons.contains(&Reason::Pending) {
                    u.reasons.push(Reason::Pending);
                }
            }
            Some(_) => {}
            None => {
                affected.units.push(AffectedUnit {
                    path: path.clone(),
                    action: Action::Apply,
                    reasons: vec![Reason::Pending],
                });
                added = true;
            }
        }
    }
    if added {
        affected.units.sort_by(|a, b| a.path.cmp(&b.path));
    }
}

/// The plan scan: every unit planned with `-detailed-exitcode`; those with
/// changes and their dependents are affected. A failed plan fails the scan.
async fn plan_scan<R: RoleAssumer>(
    config: &CreateDeployStackConfig,
    accounts: &Accounts,
    checkout: &Checkout,
    head: &Graph,
    roles: &R,
) -> Result<Affected> {
    let units: Vec<RepoPath> = head.units().iter().map(|u| u.path.clone()).collect();
    let request = PlanRequest {
        common: &config.common,
        checkout,
        accounts: Some(accounts),
        scratch: "scan",
        // Merged code: the deploy key, through an agent.
        key_use: crate::git_ssh::KeyUse::Allowed,
        session: format!(
            "scan-{}",
            checkout
                .commit
                .get(..12)
                .unwrap_or(checkout.commit.as_str())
        ),
        with_text: false,
        // The deploy stack's scan only selects units; terra-run judges each plan.
        policies: None,
    };
    let results = plan_with_plan_roles(request, roles, &units).await?;
    let mut changed = BTreeSet::new();
    for r in results {
        match r.outcome {
            Ok(o) if o.has_changes => {
                changed.insert(r.path);
            }
            Ok(_) => {}
            Err(message) => {
                return Err(TaskError::Unit {
                    unit: r.path.to_string(),
                    message,
                });
            }
        }
    }
    let seeds: Vec<usize> = changed.iter().filter_map(|p| head.index_of(p)).collect();
    let mut units: Vec<AffectedUnit> = head
        .dependents_closure(seeds, None)
        .into_iter()
        .map(|i| {
            let path = head.path(i).clone();
            let reason = if changed.contains(&path) {
                Reason::Changed
            } else {
                Reason::DependencyAffected
            };
            AffectedUnit {
                path,
                action: Action::Apply,
                reasons: vec![reason],
            }
        })
        .collect();
    units.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Affected {
        units,
        skipped: Vec::new(),
    })
}

/// Providers each planned apply uses at the merge commit and did not at the
/// first parent. A `.tf` that does not parse at head fails the run; at base it
/// only costs the comparison (nothing is called new, so a rollback never
/// destroys what it cannot prove this change added).
fn unit_new_providers(
    checkout: &Checkout,
    base: &str,
    commit: &str,
    head: &Graph,
    plan: &DeploymentPlan,
    warnings: &mut Vec<String>,
) -> Result<BTreeMap<RepoPath, Vec<String>>> {
    let head_tree = checkout.git.tree_at(Some(commit))?;
    let base_tree = checkout.git.tree_at(Some(base))?;
    let head_index = ProviderIndex::new(&*head_tree)?;
    let base_index = ProviderIndex::new(&*base_tree)?;
    let (base_graph, _) = discover(&*base_tree).into_graph();
    let mut out = BTreeMap::new();
    for u in plan.units.iter().filter(|u| u.action == Action::Apply) {
        let Some(i) = head.index_of(&u.path) else {
            continue;
        };
        let at_head = head_index.providers(head.unit(i))?;
        let at_base = match base_graph.index_of(&u.path) {
            None => None,
            Some(b) => match base_index.providers(base_graph.unit(b)) {
                Ok(p) => Some(p),
                Err(e) => {
                    warnings.push(format!("providers at the first parent: {e}"));
                    Some(at_head.clone())
                }
            },
        };
        let new = new_providers(&at_head, at_base.as_ref());
        if !new.is_empty() {
            out.insert(u.path.clone(), new);
        }
    }
    Ok(out)
}
