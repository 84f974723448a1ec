//! The deployment plan: the affected units as the pipeline would run them, each
//! with its account, what it waits for, and its place in the runner pool's order.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use crate::change::Affected;
use crate::error::{EngineError, Result};
use crate::graph::Graph;
use crate::scheduler::{
    Pacing, PoolConfig, Priority, TaskGraph, critical_path_priorities, simulate_paced,
};
use crate::unit::Unit;
use live_ci_core::account::Accounts;
use live_ci_core::deploy::Action;
use live_ci_core::path::RepoPath;

/// One unit of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedUnit {
    /// The unit's directory.
    pub path: RepoPath,
    /// Whether it is applied or destroyed.
    pub action: Action,
    /// The account it deploys to (`None` when no account configuration was given).
    pub account: Option<String>,
    /// Planned units it waits for through directory dependencies. For a
    /// destroy: the units that depended on it at base (the edges reversed), the
    /// removed ones destroyed first and the kept ones, which stopped depending
    /// on it, applied first.
    pub dependencies: Vec<RepoPath>,
    /// Accounts all of whose planned units must finish first.
    pub waits_for_accounts: Vec<String>,
    /// Longest remaining path to the end of the plan, in seconds (1 per unit
    /// without a recorded duration): the pool starts the highest first.
    pub priority: f64,
    /// 1-based position in the order the runner pool starts units.
    pub position: usize,
    /// Simulated start, in the same units as `priority`.
    pub start: f64,
}

/// The deployment a change would run: every unit in the order the runner
/// pool starts them, with a simulated schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeploymentPlan {
    /// How many units run at once at most, over all accounts (at least 1).
    pub max_parallel: usize,
    /// Each capped account's `max_parallel` (of the accounts with planned
    /// units): at most that many of its units run at once.
    #[serde(default)]
    pub account_caps: BTreeMap<String, u32>,
    /// Units in pool order.
    pub units: Vec<PlannedUnit>,
    /// Simulated end of the last unit.
    pub makespan: f64,
}

/// Inputs that shape a plan besides the affected set.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions<'a> {
    /// The account configuration, when given: accounts, their waits and caps.
    pub accounts: Option<&'a Accounts>,
    /// How many units run at once at most, over all accounts (0 counts as 1).
    pub max_parallel: usize,
    /// Recorded durations (seconds) by unit; others count 1.
    pub durations: HashMap<RepoPath, f64>,
}

/// Orders `affected` for deployment. Applies follow `head`'s dependencies,
/// destroys run dependents-first along `base`'s (after the applies of kept
/// units that depended on them at base); a unit of account A waits for
/// every planned unit of the accounts A depends on (destroys: the reverse). A
/// unit outside every account path, or a cycle through account edges, is an error.
pub fn build_plan(
    affected: &Affected,
    head: &Graph,
    base: Option<&Graph>,
    options: &PlanOptions<'_>,
) -> Result<DeploymentPlan> {
    let max_parallel = options.max_parallel.max(1);
    let units: Vec<(RepoPath, Action)> = affected
        .units
        .iter()
        .map(|u| (u.path.clone(), u.action))
        .collect();
    let n = units.len();
    let account_of = accounts_of(&units, options.accounts)?;
    let dir_deps = directory_dependencies(&units, head, base);
    let (anchors, waits_for_accounts) = account_anchors(&units, &account_of, options.accounts);
    let (tasks, durations) = task_graph(
        &units,
        &dir_deps,
        &account_of,
        &anchors,
        &waits_for_accounts,
        &options.durations,
    );
    if tasks.validate().is_err() {
        return Err(cycle_error(&units, &anchors, &tasks));
    }
    let priorities = critical_path_priorities(&tasks);
    let config = PoolConfig {
        max_parallel,
        fail_fast: false,
        priority: Priority::CriticalPath,
    };
    let (pacing, account_caps) = pacing(&account_of, &anchors, n, options.accounts);
    let schedule = simulate_paced(&tasks, &config, &pacing, &durations)?;
    let mut planned: Vec<PlannedUnit> = Vec::with_capacity(n);
    for &t in schedule.order.iter().filter(|&&t| t < n) {
        let (path, action) = &units[t];
        planned.push(PlannedUnit {
            path: path.clone(),
            action: *action,
            account: account_of[t].clone(),
            dependencies: dir_deps[t].iter().map(|&d| units[d].0.clone()).collect(),
            waits_for_accounts: waits_for_accounts[t].clone(),
            priority: priorities[t],
            position: planned.len() + 1,
            start: schedule.start[t],
        });
    }
    Ok(DeploymentPlan {
        max_parallel,
        account_caps,
        units: planned,
        makespan: schedule.makespan,
    })
}

/// Each unit's account; a unit outside every account path is an error.
fn accounts_of(
    units: &[(RepoPath, Action)],
    accounts: Option<&Accounts>,
) -> Result<Vec<Option<String>>> {
    let Some(accts) = accounts else {
        return Ok(vec![None; units.len()]);
    };
    units
        .iter()
        .map(|(path, _)| {
            accts
                .account_of(path)
                .map(|a| Some(a.name.clone()))
                .ok_or_else(|| EngineError::Plan {
                    unit: path.clone(),
                    message: "matches no account path in the account configuration".into(),
                })
        })
        .collect()
}

/// Each planned unit's planned directory dependencies: an apply's along
/// `head`, a destroy's dependents along `base`. Edges are followed through
/// units that are not planned, so a filter that leaves out a middle unit does
/// not lose the ordering around it.
fn directory_dependencies(
    units: &[(RepoPath, Action)],
    head: &Graph,
    base: Option<&Graph>,
) -> Vec<BTreeSet<usize>> {
    let task_of: HashMap<(&RepoPath, Action), usize> = units
        .iter()
        .enumerate()
        .map(|(i, (p, a))| ((p, *a), i))
        .collect();
    let mut dir_deps: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); units.len()];
    for (t, (path, action)) in units.iter().enumerate() {
        let (graph, forward) = match action {
            Action::Apply => (Some(head), true),
            Action::Destroy => (base, false),
        };
        let Some(graph) = graph else { continue };
        let Some(start) = graph.index_of(path) else {
            continue;
        };
        let mut stack = vec![start];
        let mut seen = BTreeSet::from([start]);
        while let Some(n) = stack.pop() {
            let next = if forward {
                graph.dependencies(n)
            } else {
                graph.dependents(n)
            };
            for &m in next {
                if !seen.insert(m) {
                    continue;
                }
                match task_of.get(&(graph.path(m), *action)) {
                    Some(&other) => {
                        dir_deps[t].insert(other);
                    }
                    None => {
                        // A kept unit that depended on the removed one at base
                        // and is applied in this run no longer does at head:
                        // its apply goes first, so the destroy never removes
                        // what a live unit still refers to.
                        if *action == Action::Destroy
                            && let Some(&apply) = task_of.get(&(graph.path(m), Action::Apply))
                        {
                            dir_deps[t].insert(apply);
                        }
                        stack.push(m);
                    }
                }
            }
        }
    }
    dir_deps
}

/// One zero-length anchor task per (account, action) with planned units,
/// numbered after the units, and each unit's accounts to wait for. Account
/// edges go through the anchors, so 5,000 units waiting on 5,000 others cost
/// 10,000 edges, not 25 million.
#[allow(clippy::type_complexity)]
fn account_anchors(
    units: &[(RepoPath, Action)],
    account_of: &[Option<String>],
    accounts: Option<&Accounts>,
) -> (BTreeMap<(String, Action), usize>, Vec<Vec<String>>) {
    let n = units.len();
    let mut anchors: BTreeMap<(String, Action), usize> = BTreeMap::new();
    let mut waits_for_accounts: Vec<Vec<String>> = vec![Vec::new(); n];
    let Some(accts) = accounts else {
        return (anchors, waits_for_accounts);
    };
    for (t, (_, action)) in units.iter().enumerate() {
        if let Some(name) = &account_of[t] {
            let len = n + anchors.len();
            anchors.entry((name.clone(), *action)).or_insert(len);
        }
    }
    for (t, (_, action)) in units.iter().enumerate() {
        let Some(name) = &account_of[t] else { continue };
        let waits: Vec<String> = match action {
            // An apply waits for the accounts this one depends on...
            Action::Apply => accts.transitive_dependencies(name).into_iter().collect(),
            // ...a destroy for the accounts that depend on this one.
            Action::Destroy => accts
                .all()
                .iter()
                .filter(|a| accts.transitive_dependencies(&a.name).contains(name))
                .map(|a| a.name.clone())
                .collect(),
        };
        waits_for_accounts[t] = waits
            .into_iter()
            .filter(|w| anchors.contains_key(&(w.clone(), *action)))
            .collect();
    }
    (anchors, waits_for_accounts)
}

/// The scheduler's task graph of the units and anchors, and each task's
/// duration (recorded, else 1; anchors 0).
fn task_graph(
    units: &[(RepoPath, Action)],
    dir_deps: &[BTreeSet<usize>],
    account_of: &[Option<String>],
    anchors: &BTreeMap<(String, Action), usize>,
    waits_for_accounts: &[Vec<String>],
    recorded: &HashMap<RepoPath, f64>,
) -> (TaskGraph, Vec<f64>) {
    let n = units.len();
    let mut tasks = TaskGraph::new(n + anchors.len());
    for (t, deps) in dir_deps.iter().enumerate() {
        for &d in deps {
            tasks.add_dependency(t, d);
        }
        if let Some(name) = &account_of[t] {
            let action = units[t].1;
            if let Some(&anchor) = anchors.get(&(name.clone(), action)) {
                tasks.add_dependency(anchor, t);
            }
            for w in &waits_for_accounts[t] {
                if let Some(&anchor) = anchors.get(&(w.clone(), action)) {
                    tasks.add_dependency(t, anchor);
                }
            }
        }
    }
    let mut durations = vec![1.0; n + anchors.len()];
    for (t, (path, _)) in units.iter().enumerate() {
        if let Some(&d) = recorded.get(path) {
            durations[t] = d;
        }
        tasks.set_duration(t, durations[t]);
    }
    for &anchor in anchors.values() {
        durations[anchor] = 0.0;
        tasks.set_duration(anchor, 0.0);
    }
    (tasks, durations)
}

/// The metadb's claim, simulated: an account's units within its cap, and the
/// account anchors taking no runner (the claim sees an account's waiters
/// ready the moment its last unit succeeded). With the caps of the accounts
/// that have planned units.
fn pacing(
    account_of: &[Option<String>],
    anchors: &BTreeMap<(String, Action), usize>,
    n: usize,
    accounts: Option<&Accounts>,
) -> (Pacing, BTreeMap<String, u32>) {
    let mut group_of_account: BTreeMap<&str, usize> = BTreeMap::new();
    let mut pacing = Pacing {
        milestones: vec![false; n + anchors.len()],
        ..Pacing::default()
    };
    let mut account_caps = BTreeMap::new();
    for name in account_of.iter().flatten() {
        if !group_of_account.contains_key(name.as_str()) {
            let cap = accounts
                .and_then(|a| a.get(name))
                .and_then(|a| a.max_parallel);
            if let Some(cap) = cap {
                account_caps.insert(name.clone(), cap);
            }
            group_of_account.insert(name, pacing.caps.len());
            pacing.caps.push(cap.map(|c| c as usize));
        }
    }
    pacing.group = account_of
        .iter()
        .map(|a| {
            a.as_deref()
                .and_then(|name| group_of_account.get(name).copied())
        })
        .collect();
    for &anchor in anchors.values() {
        pacing.milestones[anchor] = true;
    }
    (pacing, account_caps)
}

/// Names a cycle of the plan by unit paths and account anchors, not task numbers.
fn cycle_error(
    units: &[(RepoPath, Action)],
    anchors: &BTreeMap<(String, Action), usize>,
    tasks: &TaskGraph,
) -> EngineError {
    let mut names: Vec<String> = units.iter().map(|(p, _)| p.to_string()).collect();
    names.resize(tasks.len(), String::new());
    for ((account, _), &i) in anchors {
        names[i] = format!("(every unit of account {account:?})");
    }
    let synthetic: Vec<Unit> = (0..tasks.len())
        .filter_map(|i| {
            let mut u = Unit::new(RepoPath::new(&format!("t{i}")).ok()?);
            u.dependencies = tasks
                .dependencies(i)
                .iter()
                .filter_map(|d| RepoPath::new(&format!("t{d}")).ok())
                .collect();
            Some(u)
        })
        .collect();
    let (graph, _) = Graph::build(synthetic);
    let cycle = graph.find_cycles().into_iter().next().unwrap_or_default();
    let spelled: Vec<String> = cycle
        .iter()
        .filter_map(|p| p.as_str().strip_prefix('t')?.parse::<usize>().ok())
        .map(|i| names[i].clone())
        .collect();
    EngineError::Scheduler(format!(
        "the plan's directory and account dependencies form a cycle: {}",
        spelled.join(" -> ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::change::{AffectedUnit, Reason};

    fn p(s: &str) -> RepoPath {
        RepoPath::new(s).unwrap()
    }

    fn graph(units: &[(&str, &[&str])]) -> Graph {
        let (g, errs) = Graph::build(
            units
                .iter()
                .map(|(path, deps)| {
                    let mut u = Unit::new(p(path));
                    u.dependencies = deps.iter().map(|d| p(d)).collect();
                    u
                })
                .collect(),
        );
        assert!(errs.is_empty(), "{errs:?}");
        g
    }

    fn affected(units: &[(&str, Action)]) -> Affected {
        Affected {
            units: units
                .iter()
                .map(|(path, action)| AffectedUnit {
                    path: p(path),
                    action: *action,
                    reasons: vec![Reason::Changed],
                })
                .collect(),
            skipped: vec![],
        }
    }

    fn accounts(deps: &[(&str, &[&str])]) -> Accounts {
        let list = deps
            .iter()
            .map(|(name, d)| live_ci_core::account::Account {
                name: name.to_string(),
                path: name.to_string(),
                dependencies: d.iter().map(|s| s.to_string()).collect(),
                voters: vec!["ops@example.com".into()],
                github_voters: vec![],
                min_approval_count: 1,
                min_rejection_count: 1,
                plan_role_arn: "p".into(),
                apply_role_arn: "a".into(),
                max_parallel: None,
            })
            .collect();
        Accounts::new("accounts.json", list).unwrap()
    }

    fn order(plan: &DeploymentPlan) -> Vec<String> {
        plan.units.iter().map(|u| u.path.to_string()).collect()
    }

    #[test]
    fn edges_pass_through_units_left_out_of_the_plan() {
        let head = graph(&[("a", &["b"]), ("b", &["c"]), ("c", &[])]);
        let plan = build_plan(
            &affected(&[("a", Action::Apply), ("c", Action::Apply)]),
            &head,
            None,
            &PlanOptions {
                max_parallel: 4,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(order(&plan), ["c", "a"]);
        assert_eq!(plan.units[1].dependencies, [p("c")]);
        assert_eq!(plan.makespan, 2.0);
    }

    #[test]
    fn account_dependencies_and_reverse_destroys() {
        let head = graph(&[("shared/x", &[]), ("dev/y", &[])]);
        let base = graph(&[("dev/old", &["dev/older"]), ("dev/older", &[])]);
        let accts = accounts(&[("shared", &[]), ("dev", &["shared"])]);
        let plan = build_plan(
            &affected(&[
                ("dev/y", Action::Apply),
                ("shared/x", Action::Apply),
                ("dev/old", Action::Destroy),
                ("dev/older", Action::Destroy),
            ]),
            &head,
            Some(&base),
            &PlanOptions {
                accounts: Some(&accts),
                max_parallel: 1,
                durations: HashMap::from([(p("shared/x"), 30.0)]),
            },
        )
        .unwrap();
        // shared/x has the longest remaining path (30 + dev/y), so it starts first;
        // dev/old is destroyed before dev/older, which it depended on. The
        // shared account's anchor takes no runner (as in the metadb's claim),
        // so dev/y is ready when shared/x ends and, tied with dev/older, goes
        // first by its lower index (the anchor used to hold the one runner for
        // a step and put dev/y last).
        assert_eq!(order(&plan), ["shared/x", "dev/old", "dev/y", "dev/older"]);
        let y = plan.units.iter().find(|u| u.path == p("dev/y")).unwrap();
        assert_eq!(y.waits_for_accounts, ["shared"]);
        assert_eq!(y.account.as_deref(), Some("dev"));
        let older = plan
            .units
            .iter()
            .find(|u| u.path == p("dev/older"))
            .unwrap();
        assert_eq!(older.dependencies, [p("dev/old")]);
        assert_eq!(plan.makespan, 33.0);
    }

    #[test]
    fn removed_units_are_destroyed_after_what_depended_on_them_at_base() {
        // At base: b and c depend on a. The change removes a and b, and c
        // stops depending on a (it now depends on x).
        let base = graph(&[("a", &[]), ("b", &["a"]), ("c", &["a"]), ("x", &[])]);
        let head = graph(&[("c", &["x"]), ("x", &[])]);
        let plan = build_plan(
            &affected(&[
                ("a", Action::Destroy),
                ("b", Action::Destroy),
                ("c", Action::Apply),
            ]),
            &head,
            Some(&base),
            &PlanOptions {
                max_parallel: 4,
                durations: HashMap::from([(p("c"), 5.0)]),
                ..Default::default()
            },
        )
        .unwrap();
        let unit = |path: &str| plan.units.iter().find(|u| u.path == p(path)).unwrap();
        // The dependent's destroy first (the base edge b -> a reversed)...
        assert!(unit("b").dependencies.is_empty());
        // ...and the kept unit's apply, which no longer refers to a.
        assert_eq!(unit("a").dependencies, [p("b"), p("c")]);
        assert!(unit("c").dependencies.is_empty());
        assert_eq!(
            unit("a").start,
            5.0,
            "after c's apply (5), not b's destroy (1)"
        );
        assert_eq!(order(&plan).last().map(String::as_str), Some("a"));
        assert_eq!(plan.makespan, 6.0);
    }

    #[test]
    fn unit_outside_accounts_and_account_cycles_are_errors() {
        let head = graph(&[("shared/x", &["dev/y"]), ("dev/y", &[]), ("misc/z", &[])]);
        let accts = accounts(&[("shared", &[]), ("dev", &["shared"])]);
        let opts = PlanOptions {
            accounts: Some(&accts),
            max_parallel: 2,
            ..Default::default()
        };
        let err =
            build_plan(&affected(&[("misc/z", Action::Apply)]), &head, None, &opts).unwrap_err();
        assert_eq!(
            err.to_string(),
            "misc/z: matches no account path in the account configuration"
        );
        // shared/x depends on dev/y, while account dev waits for account shared.
        let err = build_plan(
            &affected(&[("shared/x", Action::Apply), ("dev/y", Action::Apply)]),
            &head,
            None,
            &opts,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("form a cycle"), "{err}");
        assert!(err.contains("dev/y") && err.contains("shared/x"), "{err}");
        assert!(err.contains("(every unit of account \"shared\")"), "{err}");
    }

    #[test]
    fn an_accounts_cap_paces_its_units_and_the_plan_names_it() {
        let head = graph(&[
            ("prod/a", &[]),
            ("prod/b", &[]),
            ("prod/c", &[]),
            ("dev/x", &[]),
        ]);
        let mut accts = accounts(&[("prod", &[]), ("dev", &[])]).all().to_vec();
        accts[0].max_parallel = Some(1);
        let accts = Accounts::new("accounts.json", accts).unwrap();
        let plan = build_plan(
            &affected(&[
                ("prod/a", Action::Apply),
                ("prod/b", Action::Apply),
                ("prod/c", Action::Apply),
                ("dev/x", Action::Apply),
            ]),
            &head,
            None,
            &PlanOptions {
                accounts: Some(&accts),
                max_parallel: 4,
                ..Default::default()
            },
        )
        .unwrap();
        let starts: Vec<(String, f64)> = plan
            .units
            .iter()
            .map(|u| (u.path.to_string(), u.start))
            .collect();
        assert_eq!(
            starts,
            [
                ("prod/a".to_string(), 0.0),
                ("dev/x".to_string(), 0.0),
                ("prod/b".to_string(), 1.0),
                ("prod/c".to_string(), 2.0)
            ]
        );
        assert_eq!(plan.makespan, 3.0);
        assert_eq!(plan.account_caps, BTreeMap::from([("prod".to_string(), 1)]));
    }
}
