//! Maps changed files onto units (the seed design's "graph scan"): files in a unit's
//! directory, files it reads, its local module, then every transitive dependent.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use crate::graph::Graph;
use live_ci_core::deploy::Action;
use live_ci_core::path::RepoPath;
use live_ci_core::port::{ChangeKind, FileChange};
use live_ci_core::tree::in_skipped_dir;

/// Why a unit is affected. Ordered as they are listed in output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// A file in the unit's own directory changed (or the unit is new).
    Changed,
    /// A file it includes or reads, directly or transitively, changed.
    ReadFileChanged,
    /// A file under its local `terraform { source }` module changed.
    ModuleChanged,
    /// A unit it depends on, directly or transitively, is affected.
    DependencyAffected,
    /// Its `terragrunt.hcl` exists at base and not at head, or a stack
    /// generated it at base and no longer does (a `unit` block removed or
    /// renamed, or the stack file deleted).
    Removed,
    /// Its last deployment failed or was aborted: it stays pending until a run
    /// applies it.
    Pending,
}

/// A unit the change deploys, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AffectedUnit {
    /// The unit's directory.
    pub path: RepoPath,
    /// Whether it is applied or destroyed.
    pub action: Action,
    /// Every reason it is affected.
    pub reasons: Vec<Reason>,
}

/// A unit the change touches that will not run, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// The unit's directory.
    pub path: RepoPath,
    /// What it would have done.
    pub action: Action,
    /// Why it will not run.
    pub reason: String,
}

/// The result of change detection, sorted by path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Affected {
    /// The units the change deploys.
    pub units: Vec<AffectedUnit>,
    /// The units the change touches that will not run.
    pub skipped: Vec<Skipped>,
}

impl Affected {
    /// The paths of the deployed units with `action`.
    pub fn paths(&self, action: Action) -> BTreeSet<RepoPath> {
        self.units
            .iter()
            .filter(|u| u.action == action)
            .map(|u| u.path.clone())
            .collect()
    }
}

/// Indexes from a file to the units that depend on its contents.
struct FileIndex<'g> {
    unit_dirs: HashMap<&'g RepoPath, usize>,
    readers: HashMap<&'g RepoPath, Vec<usize>>,
    module_users: HashMap<&'g RepoPath, Vec<usize>>,
}

impl<'g> FileIndex<'g> {
    fn new(graph: &'g Graph) -> Self {
        let mut unit_dirs = HashMap::with_capacity(graph.len());
        let mut readers: HashMap<&RepoPath, Vec<usize>> = HashMap::new();
        let mut module_users: HashMap<&RepoPath, Vec<usize>> = HashMap::new();
        for (i, unit) in graph.units().iter().enumerate() {
            unit_dirs.insert(&unit.path, i);
            for file in &unit.reads {
                readers.entry(file).or_default().push(i);
            }
            for dir in &unit.module_sources {
                module_users.entry(dir).or_default().push(i);
            }
        }
        FileIndex {
            unit_dirs,
            readers,
            module_users,
        }
    }

    /// The innermost unit whose directory holds `file` (a nested unit owns its files).
    fn owner(&self, file: &RepoPath) -> Option<usize> {
        let mut dir = file.parent();
        while let Some(d) = dir {
            if let Some(&i) = self.unit_dirs.get(&d) {
                return Some(i);
            }
            dir = d.parent();
        }
        None
    }

    fn record(&self, file: &RepoPath, seeds: &mut BTreeMap<usize, BTreeSet<Reason>>) {
        if let Some(i) = self.owner(file) {
            seeds.entry(i).or_default().insert(Reason::Changed);
        }
        if let Some(units) = self.readers.get(file) {
            for &i in units {
                seeds.entry(i).or_default().insert(Reason::ReadFileChanged);
            }
        }
        let mut dir = file.parent();
        while let Some(d) = dir {
            if let Some(units) = self.module_users.get(&d) {
                for &i in units {
                    seeds.entry(i).or_default().insert(Reason::ModuleChanged);
                }
            }
            dir = d.parent();
        }
    }
}

/// The units `changes` affect. `head` is the graph at the head revision; `base`
/// the graph at the merge base, needed only when a `terragrunt.hcl` was deleted
/// (to tell a removed unit from a removed parent config). `unstacked` are the
/// units the stacks generated at the merge base: those `head` no longer has
/// are removed, though no file of theirs is in the diff (generated files are
/// not committed), so the caller finds them by generating the base side. Removed units are destroyed
/// only with `allow_destroy`; otherwise they are listed as skipped, never
/// dropped in silence.
pub fn affected_units(
    head: &Graph,
    base: Option<&Graph>,
    changes: &[FileChange],
    unstacked: &BTreeSet<RepoPath>,
    allow_destroy: bool,
) -> Affected {
    let index = FileIndex::new(head);
    let mut seeds: BTreeMap<usize, BTreeSet<Reason>> = BTreeMap::new();
    let mut removed: BTreeSet<RepoPath> = BTreeSet::new();
    for change in changes {
        if in_skipped_dir(&change.path) {
            continue;
        }
        index.record(&change.path, &mut seeds);
        if change.kind == ChangeKind::Deleted
            && change.path.file_name() == "terragrunt.hcl"
            && let Some(dir) = change.path.parent()
            && head.index_of(&dir).is_none()
            && base.is_some_and(|b| b.index_of(&dir).is_some())
        {
            removed.insert(dir);
        }
    }
    removed.extend(
        unstacked
            .iter()
            .filter(|u| head.index_of(u).is_none())
            .cloned(),
    );
    let closure = head.dependents_closure(seeds.keys().copied(), None);
    let mut units: Vec<AffectedUnit> = closure
        .iter()
        .map(|&i| {
            let mut reasons: Vec<Reason> = seeds
                .get(&i)
                .map(|r| r.iter().copied().collect())
                .unwrap_or_default();
            if head.dependencies(i).iter().any(|d| closure.contains(d)) {
                reasons.push(Reason::DependencyAffected);
            }
            reasons.sort();
            AffectedUnit {
                path: head.path(i).clone(),
                action: Action::Apply,
                reasons,
            }
        })
        .collect();
    let mut skipped = Vec::new();
    for path in removed {
        if allow_destroy {
            units.push(AffectedUnit {
                path,
                action: Action::Destroy,
                reasons: vec![Reason::Removed],
            });
        } else {
            skipped.push(Skipped {
                reason: format!(
                    "unit {:?} was removed; it is destroyed only with --allow-destroy",
                    path.display()
                ),
                path,
                action: Action::Destroy,
            });
        }
    }
    units.sort_by(|a, b| a.path.cmp(&b.path));
    Affected { units, skipped }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unit::Unit;

    fn p(s: &str) -> RepoPath {
        RepoPath::new(s).unwrap()
    }

    fn unit(path: &str, deps: &[&str], reads: &[&str], modules: &[&str]) -> Unit {
        let mut u = Unit::new(p(path));
        u.dependencies = deps.iter().map(|d| p(d)).collect();
        u.reads = reads.iter().map(|d| p(d)).collect();
        u.module_sources = modules.iter().map(|d| p(d)).collect();
        u
    }

    fn head() -> Graph {
        let (g, errs) = Graph::build(vec![
            unit("shared/vpc", &[], &["shared/account.hcl", "root.hcl"], &[]),
            unit("shared/vpc/peering", &["shared/vpc"], &["root.hcl"], &[]),
            unit(
                "dev/app",
                &["shared/vpc"],
                &["dev/account.hcl", "root.hcl"],
                &["modules/app"],
            ),
            unit("dev/db", &[], &["dev/account.hcl", "root.hcl"], &[]),
            unit("dev/dns", &["dev/app"], &["root.hcl"], &[]),
        ]);
        assert!(errs.is_empty(), "{errs:?}");
        g
    }

    fn changed(paths: &[(&str, ChangeKind)]) -> Vec<FileChange> {
        paths
            .iter()
            .map(|(f, k)| FileChange {
                path: p(f),
                kind: *k,
            })
            .collect()
    }

    fn summary(a: &Affected) -> Vec<(String, Action, Vec<Reason>)> {
        a.units
            .iter()
            .map(|u| (u.path.to_string(), u.action, u.reasons.clone()))
            .collect()
    }

    use ChangeKind::*;
    use Reason::*;

    #[test]
    fn file_in_unit_dir_affects_it_and_its_dependents_not_parent_of_nested() {
        let g = head();
        // A file in the nested unit belongs to it, not to its parent directory's unit.
        let a = affected_units(
            &g,
            None,
            &changed(&[("shared/vpc/peering/main.tf", Modified)]),
            &BTreeSet::new(),
            false,
        );
        assert_eq!(
            summary(&a),
            [("shared/vpc/peering".into(), Action::Apply, vec![Changed])]
        );
        let a = affected_units(
            &g,
            None,
            &changed(&[("shared/vpc/terragrunt.hcl", Modified)]),
            &BTreeSet::new(),
            false,
        );
        assert_eq!(
            summary(&a),
            [
                ("dev/app".into(), Action::Apply, vec![DependencyAffected]),
                ("dev/dns".into(), Action::Apply, vec![DependencyAffected]),
                ("shared/vpc".into(), Action::Apply, vec![Changed]),
                (
                    "shared/vpc/peering".into(),
                    Action::Apply,
                    vec![DependencyAffected]
                ),
            ]
        );
    }

    #[test]
    fn read_files_and_modules_affect_their_readers() {
        let g = head();
        let a = affected_units(
            &g,
            None,
            &changed(&[("dev/account.hcl", Modified)]),
            &BTreeSet::new(),
            false,
        );
        assert_eq!(
            summary(&a),
            [
                ("dev/app".into(), Action::Apply, vec![ReadFileChanged]),
                ("dev/db".into(), Action::Apply, vec![ReadFileChanged]),
                ("dev/dns".into(), Action::Apply, vec![DependencyAffected]),
            ]
        );
        let a = affected_units(
            &g,
            None,
            &changed(&[("modules/app/sub/x.tf", Added)]),
            &BTreeSet::new(),
            false,
        );
        assert_eq!(
            summary(&a),
            [
                ("dev/app".into(), Action::Apply, vec![ModuleChanged]),
                ("dev/dns".into(), Action::Apply, vec![DependencyAffected]),
            ]
        );
        // A unit both changed and downstream of a change carries both reasons.
        let a = affected_units(
            &g,
            None,
            &changed(&[("shared/vpc/x.tf", Modified), ("dev/dns/y.tf", Modified)]),
            &BTreeSet::new(),
            false,
        );
        let dns = a.units.iter().find(|u| u.path == p("dev/dns")).unwrap();
        assert_eq!(dns.reasons, [Changed, DependencyAffected]);
    }

    #[test]
    fn unrelated_and_cache_files_affect_nothing() {
        let g = head();
        let a = affected_units(
            &g,
            None,
            &changed(&[
                ("README.md", Modified),
                ("dev/app/.terraform/modules.json", Modified),
                ("dev/app/.terragrunt-cache/x/main.tf", Modified),
            ]),
            &BTreeSet::new(),
            false,
        );
        assert_eq!(a, Affected::default());
    }

    #[test]
    fn removed_units_need_allow_destroy() {
        let g = head();
        let (base, errs) = Graph::build(vec![
            unit("shared/vpc", &[], &[], &[]),
            unit("dev/old", &["shared/vpc"], &[], &[]),
            unit("dev/older", &["dev/old"], &[], &[]),
        ]);
        assert!(errs.is_empty());
        let changes = changed(&[
            ("dev/old/terragrunt.hcl", Deleted),
            ("dev/old/main.tf", Deleted),
            ("dev/older/terragrunt.hcl", Deleted),
            // a parent config deleted at base is not a unit: not a destroy
            ("dev/terragrunt.hcl", Deleted),
        ]);
        let a = affected_units(&g, Some(&base), &changes, &BTreeSet::new(), false);
        assert!(a.units.is_empty());
        assert_eq!(
            a.skipped
                .iter()
                .map(|s| s.path.to_string())
                .collect::<Vec<_>>(),
            ["dev/old", "dev/older"]
        );
        assert!(a.skipped[0].reason.contains("--allow-destroy"));
        let a = affected_units(&g, Some(&base), &changes, &BTreeSet::new(), true);
        assert_eq!(
            summary(&a),
            [
                ("dev/old".into(), Action::Destroy, vec![Removed]),
                ("dev/older".into(), Action::Destroy, vec![Removed]),
            ]
        );
        assert!(a.skipped.is_empty());
    }
}
