//! Evaluates parsed filters against the unit graph: which units a set of
//! `--filter` flags and a filters file select.

use std::collections::{BTreeSet, HashMap};
use std::fmt;

use globset::{GlobBuilder, GlobMatcher};

use super::ast::{GraphExpr, Kind, Query, Target, Term};
use super::parser::parse_query;
use crate::error::{EngineError, Result};
use crate::graph::Graph;
use live_ci_core::path::RepoPath;

/// What a git range selects, as terragrunt's `[a...b]` does: the units whose
/// files changed in the range, never their dependents (those come only from
/// an explicit `...`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeChanges {
    /// Units at the range's head whose files changed: a file in the unit's own
    /// directory, or a file it includes, reads or marks as read.
    pub changed: BTreeSet<RepoPath>,
    /// Units that existed at the base and no longer do at the head.
    pub removed: BTreeSet<RepoPath>,
    /// Stacks whose `terragrunt.stack.hcl` (or anything below them) changed.
    pub stacks: BTreeSet<RepoPath>,
}

/// Answers git ranges; implemented outside this module (change detection).
pub trait GitRanges {
    /// What changed between `base` and `head` (merge-base semantics), or
    /// between `base` and the working tree when `head` is `None`.
    fn changed(&self, base: &str, head: Option<&str>) -> Result<RangeChanges>;
}

/// What filters are evaluated over: the unit graph and the stacks found next
/// to it, and where the repository is (for `reading=/absolute/path`).
#[derive(Debug, Clone, Copy)]
pub struct Components<'a> {
    /// The unit graph.
    pub graph: &'a Graph,
    /// The stacks' directories.
    pub stacks: &'a [RepoPath],
    /// The repository root as an absolute filesystem path, when there is one.
    pub root: Option<&'a str>,
}

impl<'a> Components<'a> {
    /// Just the units of `graph`.
    pub fn units(graph: &'a Graph) -> Self {
        Components {
            graph,
            stacks: &[],
            root: None,
        }
    }
}

/// What a set of filters selected, each part sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Indices into the graph.
    pub units: Vec<usize>,
    /// The stacks selected.
    pub stacks: Vec<RepoPath>,
    /// Units a git range removed (not in the graph: they exist at its base).
    pub removed: Vec<RepoPath>,
}

/// One parsed query, with the text it came from for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    source: String,
    query: Query,
}

impl Filter {
    /// Parses one query; a syntax error names the column.
    pub fn parse(source: &str) -> Result<Filter> {
        Ok(Filter {
            source: source.to_string(),
            query: parse_query(source)?,
        })
    }

    /// The query as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The parsed query.
    pub fn query(&self) -> &Query {
        &self.query
    }
}

/// Prints the canonical spelling, which parses back to the same query.
impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.query)
    }
}

/// A parsed set of queries (several `--filter` flags plus a filters file).
///
/// Positive queries are unioned; negative ones (`!q`) then remove what they
/// match. With only negative queries the selection starts from every unit, and
/// with no queries at all every unit is selected.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filters {
    filters: Vec<Filter>,
}

impl Filters {
    /// Parses every query, failing on the first that does not parse.
    pub fn parse<'a>(queries: impl IntoIterator<Item = &'a str>) -> Result<Filters> {
        let filters = queries
            .into_iter()
            .map(Filter::parse)
            .collect::<Result<_>>()?;
        Ok(Filters { filters })
    }

    /// A filters file: one query per line, blank lines and lines starting with
    /// '#' ignored; errors name `file:line` and the column.
    pub fn parse_file(file_name: &str, contents: &str) -> Result<Filters> {
        let mut filters = Vec::new();
        for (i, line) in contents.lines().enumerate() {
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            // Parsing the untrimmed line keeps columns true to the file.
            let query = parse_query(line).map_err(|e| match e {
                EngineError::FilterSyntax {
                    query,
                    column,
                    message,
                } => EngineError::FilterFileSyntax {
                    file: file_name.to_string(),
                    line: i + 1,
                    column,
                    query,
                    message,
                },
                other => other,
            })?;
            filters.push(Filter {
                source: trimmed.to_string(),
                query,
            });
        }
        Ok(Filters { filters })
    }

    /// A list of queries (a module variable), each entry a line: blank entries
    /// and ones starting with '#' are ignored, as in a file; errors name
    /// `name:entry` (counted from 1) and the column.
    pub fn parse_list(name: &str, entries: &[String]) -> Result<Filters> {
        let mut out = Filters::default();
        for (i, entry) in entries.iter().enumerate() {
            // An entry is one query: a line break in it is not a second one.
            let one_line = entry.replace(['\n', '\r'], " ");
            let parsed = Filters::parse_file(name, &one_line).map_err(|e| match e {
                EngineError::FilterFileSyntax {
                    file,
                    column,
                    query,
                    message,
                    ..
                } => EngineError::FilterFileSyntax {
                    file,
                    line: i + 1,
                    column,
                    query,
                    message,
                },
                other => other,
            })?;
            out.extend(parsed);
        }
        Ok(out)
    }

    /// One query alone (to tell which query of a set decided a unit).
    pub fn single(filter: Filter) -> Filters {
        Filters {
            filters: vec![filter],
        }
    }

    /// Adds `other`'s queries after these.
    pub fn extend(&mut self, other: Filters) {
        self.filters.extend(other.filters);
    }

    /// Whether there is no query.
    pub fn is_empty(&self) -> bool {
        self.filters.is_empty()
    }

    /// The queries, in the order given.
    pub fn iter(&self) -> impl Iterator<Item = &Filter> {
        self.filters.iter()
    }

    /// Whether any query holds a git range, so the caller must supply [`GitRanges`].
    pub fn needs_git(&self) -> bool {
        self.filters.iter().any(|f| f.query.needs_git())
    }

    /// Indices (into graph) of the selected units, sorted.
    pub fn select(&self, graph: &Graph, git: Option<&dyn GitRanges>) -> Result<Vec<usize>> {
        Ok(self
            .select_components(&Components::units(graph), git)?
            .units)
    }

    /// The selected units, stacks and (through git ranges) removed units.
    pub fn select_components(
        &self,
        components: &Components<'_>,
        git: Option<&dyn GitRanges>,
    ) -> Result<Selection> {
        let mut eval = Eval::new(components, git);
        eval.prepare_git(self)?;
        let (negative, positive): (Vec<&Filter>, Vec<&Filter>) =
            self.filters.iter().partition(|f| f.query.is_negative());
        // With nothing to add, everything that exists is the start (units
        // removed by a range exist only once a range names them).
        let mut selected: Vec<bool> = eval
            .items
            .iter()
            .map(|it| positive.is_empty() && !it.removed)
            .collect();
        for filter in positive {
            let matched = eval.query(filter)?;
            for (s, m) in selected.iter_mut().zip(matched) {
                *s |= m;
            }
        }
        // A negative query's own value is already the complement of what it
        // names, so removing is intersecting with it.
        for filter in negative {
            let kept = eval.query(filter)?;
            for (s, k) in selected.iter_mut().zip(kept) {
                *s &= k;
            }
        }
        let mut out = Selection::default();
        for (item, _) in eval.items.iter().zip(&selected).filter(|(_, s)| **s) {
            match (item.node, item.kind, item.removed) {
                (Some(i), _, _) => out.units.push(i),
                (None, Kind::Stack, _) => out.stacks.push(item.path.clone()),
                (None, Kind::Unit, _) => out.removed.push(item.path.clone()),
            }
        }
        out.stacks.sort();
        out.removed.sort();
        Ok(out)
    }
}

impl<'a> IntoIterator for &'a Filters {
    type Item = &'a Filter;
    type IntoIter = std::slice::Iter<'a, Filter>;
    fn into_iter(self) -> Self::IntoIter {
        self.filters.iter()
    }
}

fn indices(set: &[bool]) -> Vec<usize> {
    set.iter()
        .enumerate()
        .filter_map(|(i, &b)| b.then_some(i))
        .collect()
}

/// Something a filter can select: a unit of the graph, a stack, or a unit a
/// git range removed.
struct Item {
    path: RepoPath,
    kind: Kind,
    /// The unit's index in the graph.
    node: Option<usize>,
    removed: bool,
}

/// One evaluation; sets are membership vectors indexed like `items`, whose
/// first `graph.len()` entries are the graph's units in order.
struct Eval<'a> {
    graph: &'a Graph,
    root: Option<&'a str>,
    git: Option<&'a dyn GitRanges>,
    items: Vec<Item>,
    /// Several queries often name the same range; asking git once is enough.
    git_cache: HashMap<(String, Option<String>), RangeChanges>,
}

impl<'a> Eval<'a> {
    fn new(c: &Components<'a>, git: Option<&'a dyn GitRanges>) -> Self {
        let mut items: Vec<Item> = c
            .graph
            .units()
            .iter()
            .enumerate()
            .map(|(i, u)| Item {
                path: u.path.clone(),
                kind: Kind::Unit,
                node: Some(i),
                removed: false,
            })
            .collect();
        items.extend(c.stacks.iter().map(|p| Item {
            path: p.clone(),
            kind: Kind::Stack,
            node: None,
            removed: false,
        }));
        Eval {
            graph: c.graph,
            root: c.root,
            git,
            items,
            git_cache: HashMap::new(),
        }
    }

    /// Answers every git range up front: the units they removed join the
    /// items, so that the other terms of a query (`[a...b] | ./dev/**`,
    /// `!name`) apply to them as well.
    fn prepare_git(&mut self, filters: &Filters) -> Result<()> {
        let mut ranges = Vec::new();
        for f in filters.iter() {
            for term in &f.query.terms {
                collect_git(term, f, &mut ranges);
            }
        }
        for (base, head, filter) in ranges {
            let key = (base.clone(), head.clone());
            if self.git_cache.contains_key(&key) {
                continue;
            }
            let Some(git) = self.git else {
                return Err(EngineError::Filter(format!(
                    "filter {:?} selects units changed in git ({}), but no git repository \
                     is available",
                    filter.source,
                    Target::Git { base, head }
                )));
            };
            let changes = git.changed(&base, head.as_deref())?;
            for path in &changes.removed {
                if self.graph.index_of(path).is_none()
                    && !self.items.iter().any(|it| it.removed && &it.path == path)
                {
                    self.items.push(Item {
                        path: path.clone(),
                        kind: Kind::Unit,
                        node: None,
                        removed: true,
                    });
                }
            }
            self.git_cache.insert(key, changes);
        }
        Ok(())
    }

    fn query(&mut self, filter: &Filter) -> Result<Vec<bool>> {
        let mut acc = vec![true; self.items.len()];
        for term in &filter.query.terms {
            let matched = self.term(term)?;
            for (a, m) in acc.iter_mut().zip(matched) {
                *a &= m;
            }
        }
        Ok(acc)
    }

    fn term(&mut self, term: &Term) -> Result<Vec<bool>> {
        match term {
            Term::Not(inner) => Ok(self.term(inner)?.into_iter().map(|b| !b).collect()),
            Term::Target(t) => self.target(t),
            Term::Graph(g) => self.graph_expr(g),
        }
    }

    fn graph_expr(&mut self, g: &GraphExpr) -> Result<Vec<bool>> {
        let target = self.target(&g.target)?;
        let seeds: Vec<usize> = indices(&target)
            .into_iter()
            .filter_map(|i| self.items[i].node)
            .collect();
        let mut reached: BTreeSet<usize> = BTreeSet::new();
        if let Some(reach) = g.direction.dependencies() {
            reached.extend(
                self.graph
                    .dependencies_closure(seeds.iter().copied(), reach.depth()),
            );
        }
        if let Some(reach) = g.direction.dependents() {
            reached.extend(
                self.graph
                    .dependents_closure(seeds.iter().copied(), reach.depth()),
            );
        }
        // Graph units come first in `items`, so a graph index is an item index.
        let mut out = vec![false; self.items.len()];
        for i in reached {
            out[i] = true;
        }
        // Stacks and removed units have no edges here: the target itself is
        // all a traversal from them yields.
        for (i, hit) in target.iter().enumerate() {
            if *hit && self.items[i].node.is_none() {
                out[i] = true;
            }
        }
        // `^` drops every unit the target matched, even one that is also reached
        // from another target unit: "the dependents of foo*, none of the foo*s".
        if g.exclude_target {
            for (o, t) in out.iter_mut().zip(&target) {
                if *t {
                    *o = false;
                }
            }
        }
        Ok(out)
    }

    fn target(&mut self, target: &Target) -> Result<Vec<bool>> {
        let items = &self.items;
        Ok(match target {
            Target::Name(pattern) => {
                let m = matcher(pattern)?;
                items
                    .iter()
                    .map(|u| m.is_match(u.path.file_name()))
                    .collect()
            }
            Target::Path(pattern) if pattern.is_empty() => {
                items.iter().map(|u| u.path.is_root()).collect()
            }
            Target::Path(pattern) => {
                let m = matcher(pattern)?;
                items.iter().map(|u| m.is_match(u.path.as_str())).collect()
            }
            Target::Reading(pattern) => self.reading(pattern)?,
            Target::Type(kind) => items.iter().map(|u| u.kind == *kind).collect(),
            Target::Git { base, head } => {
                let key = (base.clone(), head.clone());
                let Some(changes) = self.git_cache.get(&key) else {
                    return Err(EngineError::Filter(format!(
                        "git range {target} was not prepared"
                    )));
                };
                items
                    .iter()
                    .map(|u| match u.kind {
                        Kind::Unit => {
                            changes.changed.contains(&u.path) || changes.removed.contains(&u.path)
                        }
                        Kind::Stack => changes.stacks.contains(&u.path),
                    })
                    .collect()
            }
        })
    }

    /// `reading=glob`: a relative glob matches the repo-relative paths a unit
    /// reads; an absolute one (`/home/me/live/common/*.hcl`) is a filesystem
    /// path, matched against the read files' absolute paths as terragrunt does.
    fn reading(&self, pattern: &str) -> Result<Vec<bool>> {
        let m = matcher(pattern)?;
        let absolute = pattern.starts_with('/');
        let root = match (absolute, self.root) {
            (false, _) => None,
            (true, Some(r)) => Some(r.trim_end_matches('/')),
            (true, None) => {
                return Err(EngineError::Filter(format!(
                    "reading={pattern} is an absolute path, but the repository has no \
                     location on disk to resolve it against"
                )));
            }
        };
        Ok(self
            .items
            .iter()
            .map(|it| {
                let Some(i) = it.node else { return false };
                self.graph.unit(i).reads.iter().any(|r| match root {
                    None => m.is_match(r.as_str()),
                    Some(root) => m.is_match(format!("{root}/{}", r.as_str())),
                })
            })
            .collect())
    }
}

fn collect_git<'f>(
    term: &Term,
    filter: &'f Filter,
    out: &mut Vec<(String, Option<String>, &'f Filter)>,
) {
    let target = match term {
        Term::Not(inner) => return collect_git(inner, filter, out),
        Term::Target(t) => t,
        Term::Graph(g) => &g.target,
    };
    if let Target::Git { base, head } = target {
        out.push((base.clone(), head.clone(), filter));
    }
}

/// `*` stays within one path component, `**` crosses them.
fn matcher(pattern: &str) -> Result<GlobMatcher> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| EngineError::Filter(format!("invalid glob {pattern:?}: {}", e.kind())))
}
