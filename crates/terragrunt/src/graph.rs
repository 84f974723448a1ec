//! The unit dependency graph: indices, both edge directions, closures, cycle
//! detection with the full cycle path, and a topological order.

use std::collections::{BTreeSet, HashMap, VecDeque};

use crate::error::EngineError;
use crate::unit::Unit;
use live_ci_core::path::RepoPath;

/// Units sorted by path with dependency edges as indices. Edges to directories
/// that are not units are dropped and reported by [`Graph::build`].
#[derive(Debug, Clone, Default)]
pub struct Graph {
    units: Vec<Unit>,
    index: HashMap<RepoPath, usize>,
    deps: Vec<Vec<usize>>,
    dependents: Vec<Vec<usize>>,
}

impl Graph {
    /// Builds the graph and returns it with every problem found: dependencies on
    /// directories that are not units (both named) and dependency cycles (the
    /// full path, first unit repeated at the end).
    pub fn build(mut units: Vec<Unit>) -> (Graph, Vec<EngineError>) {
        units.sort_by(|a, b| a.path.cmp(&b.path));
        units.dedup_by(|a, b| a.path == b.path);
        let index: HashMap<RepoPath, usize> = units
            .iter()
            .enumerate()
            .map(|(i, u)| (u.path.clone(), i))
            .collect();
        let mut errors = Vec::new();
        let mut deps = vec![Vec::new(); units.len()];
        let mut dependents = vec![Vec::new(); units.len()];
        for (i, unit) in units.iter().enumerate() {
            for dep in &unit.dependencies {
                match index.get(dep) {
                    Some(&j) => {
                        deps[i].push(j);
                        dependents[j].push(i);
                    }
                    None => errors.push(EngineError::NotAUnit {
                        unit: unit.path.clone(),
                        dependency: dep.display().to_string(),
                    }),
                }
            }
        }
        for list in dependents.iter_mut() {
            list.sort_unstable();
        }
        let graph = Graph {
            units,
            index,
            deps,
            dependents,
        };
        errors.extend(graph.find_cycles().into_iter().map(EngineError::Cycle));
        (graph, errors)
    }

    /// How many units the graph holds.
    pub fn len(&self) -> usize {
        self.units.len()
    }

    /// Whether the graph holds no unit.
    pub fn is_empty(&self) -> bool {
        self.units.is_empty()
    }

    /// Every unit; a unit's index here is its index everywhere in the graph.
    pub fn units(&self) -> &[Unit] {
        &self.units
    }

    /// Unit `i`; panics when out of range.
    pub fn unit(&self, i: usize) -> &Unit {
        &self.units[i]
    }

    /// Unit `i`'s directory; panics when out of range.
    pub fn path(&self, i: usize) -> &RepoPath {
        &self.units[i].path
    }

    /// The index of the unit at directory `path`, if it is one.
    pub fn index_of(&self, path: &RepoPath) -> Option<usize> {
        self.index.get(path).copied()
    }

    /// Direct dependencies of unit `i` (the units it waits for), sorted.
    pub fn dependencies(&self, i: usize) -> &[usize] {
        &self.deps[i]
    }

    /// Direct dependents of unit `i` (the units that wait for it), sorted.
    pub fn dependents(&self, i: usize) -> &[usize] {
        &self.dependents[i]
    }

    /// Every unit reachable from `seeds` along dependency edges, within `depth`
    /// hops (`None`: unbounded). Seeds are included.
    pub fn dependencies_closure(
        &self,
        seeds: impl IntoIterator<Item = usize>,
        depth: Option<usize>,
    ) -> BTreeSet<usize> {
        self.closure(seeds, depth, &self.deps)
    }

    /// Every unit that reaches `seeds` along dependency edges (its dependents,
    /// transitively), within `depth` hops. Seeds are included.
    pub fn dependents_closure(
        &self,
        seeds: impl IntoIterator<Item = usize>,
        depth: Option<usize>,
    ) -> BTreeSet<usize> {
        self.closure(seeds, depth, &self.dependents)
    }

    fn closure(
        &self,
        seeds: impl IntoIterator<Item = usize>,
        depth: Option<usize>,
        edges: &[Vec<usize>],
    ) -> BTreeSet<usize> {
        let mut seen = vec![false; self.units.len()];
        let mut queue = VecDeque::new();
        for s in seeds {
            if !seen[s] {
                seen[s] = true;
                queue.push_back((s, 0usize));
            }
        }
        while let Some((n, d)) = queue.pop_front() {
            if depth.is_some_and(|max| d >= max) {
                continue;
            }
            for &m in &edges[n] {
                if !seen[m] {
                    seen[m] = true;
                    queue.push_back((m, d + 1));
                }
            }
        }
        seen.iter()
            .enumerate()
            .filter_map(|(i, &s)| s.then_some(i))
            .collect()
    }

    /// Every dependency cycle, each as a concrete path that starts and ends at
    /// the same unit (e.g. `a -> b -> c -> a`). One cycle per strongly connected
    /// component, so a tangle is reported once, not once per permutation.
    pub fn find_cycles(&self) -> Vec<Vec<RepoPath>> {
        let mut cycles = Vec::new();
        for scc in self.strongly_connected() {
            let self_loop = scc.len() == 1 && self.deps[scc[0]].contains(&scc[0]);
            if scc.len() < 2 && !self_loop {
                continue;
            }
            let start = *scc.iter().min().unwrap_or(&scc[0]);
            let members: BTreeSet<usize> = scc.iter().copied().collect();
            // Breadth-first from `start` inside the component to the shortest way back.
            let mut prev: HashMap<usize, usize> = HashMap::new();
            let mut queue = VecDeque::from([start]);
            let mut closing = None;
            'bfs: while let Some(n) = queue.pop_front() {
                for &m in &self.deps[n] {
                    if m == start {
                        closing = Some(n);
                        break 'bfs;
                    }
                    if members.contains(&m) && !prev.contains_key(&m) {
                        prev.insert(m, n);
                        queue.push_back(m);
                    }
                }
            }
            let mut path = vec![start];
            if let Some(mut n) = closing {
                let mut back = Vec::new();
                while n != start {
                    back.push(n);
                    n = prev[&n];
                }
                back.reverse();
                path.extend(back);
            }
            path.push(start);
            cycles.push(path.into_iter().map(|i| self.path(i).clone()).collect());
        }
        cycles.sort();
        cycles
    }

    /// Tarjan's algorithm, iterative so a 10,000-unit chain cannot overflow the stack.
    fn strongly_connected(&self) -> Vec<Vec<usize>> {
        let n = self.units.len();
        let mut index = vec![usize::MAX; n];
        let mut low = vec![0usize; n];
        let mut on_stack = vec![false; n];
        let mut stack = Vec::new();
        let mut out = Vec::new();
        let mut next = 0usize;
        for root in 0..n {
            if index[root] != usize::MAX {
                continue;
            }
            let mut call: Vec<(usize, usize)> = vec![(root, 0)];
            index[root] = next;
            low[root] = next;
            next += 1;
            stack.push(root);
            on_stack[root] = true;
            while let Some(&mut (v, ref mut edge)) = call.last_mut() {
                if let Some(&w) = self.deps[v].get(*edge) {
                    *edge += 1;
                    if index[w] == usize::MAX {
                        index[w] = next;
                        low[w] = next;
                        next += 1;
                        stack.push(w);
                        on_stack[w] = true;
                        call.push((w, 0));
                    } else if on_stack[w] {
                        low[v] = low[v].min(index[w]);
                    }
                } else {
                    call.pop();
                    if let Some(&(parent, _)) = call.last() {
                        low[parent] = low[parent].min(low[v]);
                    }
                    if low[v] == index[v] {
                        let mut scc = Vec::new();
                        while let Some(w) = stack.pop() {
                            on_stack[w] = false;
                            scc.push(w);
                            if w == v {
                                break;
                            }
                        }
                        out.push(scc);
                    }
                }
            }
        }
        out
    }

    /// Dependencies before dependents, ties by path. `None` when the graph has a cycle.
    pub fn topo_order(&self) -> Option<Vec<usize>> {
        let mut indeg: Vec<usize> = self.deps.iter().map(Vec::len).collect();
        let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<usize>> = indeg
            .iter()
            .enumerate()
            .filter_map(|(i, &d)| (d == 0).then_some(std::cmp::Reverse(i)))
            .collect();
        let mut order = Vec::with_capacity(self.units.len());
        while let Some(std::cmp::Reverse(n)) = ready.pop() {
            order.push(n);
            for &m in &self.dependents[n] {
                indeg[m] -= 1;
                if indeg[m] == 0 {
                    ready.push(std::cmp::Reverse(m));
                }
            }
        }
        (order.len() == self.units.len()).then_some(order)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(path: &str, deps: &[&str]) -> Unit {
        let mut u = Unit::new(RepoPath::new(path).unwrap());
        u.dependencies = deps.iter().map(|d| RepoPath::new(d).unwrap()).collect();
        u
    }

    fn names(g: &Graph, set: &BTreeSet<usize>) -> Vec<String> {
        set.iter().map(|&i| g.path(i).to_string()).collect()
    }

    #[test]
    fn closures_follow_edges_and_depth() {
        let (g, errs) = Graph::build(vec![
            unit("c", &["b"]),
            unit("b", &["a"]),
            unit("a", &[]),
            unit("x", &[]),
        ]);
        assert!(errs.is_empty());
        let c = g.index_of(&RepoPath::new("c").unwrap()).unwrap();
        let a = g.index_of(&RepoPath::new("a").unwrap()).unwrap();
        assert_eq!(
            names(&g, &g.dependencies_closure([c], None)),
            ["a", "b", "c"]
        );
        assert_eq!(names(&g, &g.dependencies_closure([c], Some(1))), ["b", "c"]);
        assert_eq!(names(&g, &g.dependents_closure([a], None)), ["a", "b", "c"]);
        let order: Vec<String> = g
            .topo_order()
            .unwrap()
            .into_iter()
            .map(|i| g.path(i).to_string())
            .collect();
        assert_eq!(order, ["a", "b", "c", "x"]);
    }

    #[test]
    fn reports_missing_dependency_naming_both() {
        let (g, errs) = Graph::build(vec![unit("app", &["vpc"])]);
        assert_eq!(g.dependencies(0), &[] as &[usize]);
        assert_eq!(errs.len(), 1);
        let msg = errs[0].to_string();
        assert!(msg.contains("app") && msg.contains("\"vpc\""), "{msg}");
    }

    #[test]
    fn reports_full_cycle_path() {
        let (g, errs) = Graph::build(vec![
            unit("a", &["b"]),
            unit("b", &["c"]),
            unit("c", &["a"]),
            unit("d", &["a"]),
            unit("s", &["s"]),
        ]);
        assert!(g.topo_order().is_none());
        let msgs: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(
            msgs,
            [
                "dependency cycle: a -> b -> c -> a",
                "dependency cycle: s -> s"
            ]
        );
    }

    #[test]
    fn long_chain_does_not_overflow() {
        let n = 20_000;
        let units: Vec<Unit> = (0..n)
            .map(|i| {
                let deps: Vec<String> = if i > 0 {
                    vec![format!("u{:05}", i - 1)]
                } else {
                    vec![]
                };
                let refs: Vec<&str> = deps.iter().map(String::as_str).collect();
                unit(&format!("u{i:05}"), &refs)
            })
            .collect();
        let (g, errs) = Graph::build(units);
        assert!(errs.is_empty());
        assert_eq!(g.topo_order().unwrap().len(), n);
    }
}
