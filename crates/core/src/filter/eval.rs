//! Evaluates parsed filters against the unit graph: which units a set of
//! `--filter` flags and a filters file select.

use std::collections::{BTreeSet, HashMap};
use std::fmt;

use globset::{GlobBuilder, GlobMatcher};

use super::ast::{GraphExpr, Kind, Query, Target, Term};
use super::parser::parse_query;
use crate::error::{CoreError, Result};
use crate::graph::Graph;
use crate::path::RepoPath;

/// Supplies the units affected between two revisions; implemented outside this
/// module (change detection).
pub trait GitRanges {
    /// Units affected between `base` and `head` (merge-base semantics), or
    /// between `base` and the working tree when `head` is `None`. May name units
    /// that no longer exist; [`Filters::select`] ignores those.
    fn affected(&self, base: &str, head: Option<&str>) -> Result<BTreeSet<RepoPath>>;
}

/// One parsed query, with the text it came from for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    source: String,
    query: Query,
}

impl Filter {
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
                CoreError::FilterSyntax {
                    query,
                    column,
                    message,
                } => CoreError::FilterFileSyntax {
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

    pub fn extend(&mut self, other: Filters) {
        self.filters.extend(other.filters);
    }

    pub fn is_empty(&self) -> bool {
        self.filters.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Filter> {
        self.filters.iter()
    }

    /// Whether any query holds a git range, so the caller must supply [`GitRanges`].
    pub fn needs_git(&self) -> bool {
        self.filters.iter().any(|f| f.query.needs_git())
    }

    /// Indices (into graph) of the selected units, sorted.
    pub fn select(&self, graph: &Graph, git: Option<&dyn GitRanges>) -> Result<Vec<usize>> {
        let mut eval = Eval {
            graph,
            git,
            git_cache: HashMap::new(),
        };
        let (negative, positive): (Vec<&Filter>, Vec<&Filter>) =
            self.filters.iter().partition(|f| f.query.is_negative());
        let mut selected = vec![positive.is_empty(); graph.len()];
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
        Ok(indices(&selected))
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

/// One evaluation over one graph; sets are membership vectors indexed like the graph.
struct Eval<'a> {
    graph: &'a Graph,
    git: Option<&'a dyn GitRanges>,
    /// Several queries often name the same range; asking git once is enough.
    git_cache: HashMap<(String, Option<String>), Vec<bool>>,
}

impl Eval<'_> {
    fn query(&mut self, filter: &Filter) -> Result<Vec<bool>> {
        let mut acc = vec![true; self.graph.len()];
        for term in &filter.query.terms {
            let matched = self.term(term, filter)?;
            for (a, m) in acc.iter_mut().zip(matched) {
                *a &= m;
            }
        }
        Ok(acc)
    }

    fn term(&mut self, term: &Term, filter: &Filter) -> Result<Vec<bool>> {
        match term {
            Term::Not(inner) => Ok(self.term(inner, filter)?.into_iter().map(|b| !b).collect()),
            Term::Target(t) => self.target(t, filter),
            Term::Graph(g) => self.graph_expr(g, filter),
        }
    }

    fn graph_expr(&mut self, g: &GraphExpr, filter: &Filter) -> Result<Vec<bool>> {
        let target = self.target(&g.target, filter)?;
        let seeds = indices(&target);
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
        let mut out = vec![false; self.graph.len()];
        for i in reached {
            out[i] = true;
        }
        // `^` drops every unit the target matched, even one that is also reached
        // from another target unit: "the dependents of foo*, none of the foo*s".
        if g.exclude_target {
            for i in seeds {
                out[i] = false;
            }
        }
        Ok(out)
    }

    fn target(&mut self, target: &Target, filter: &Filter) -> Result<Vec<bool>> {
        let units = self.graph.units();
        Ok(match target {
            Target::Name(pattern) => {
                let m = matcher(pattern)?;
                units.iter().map(|u| m.is_match(u.name())).collect()
            }
            Target::Path(pattern) if pattern.is_empty() => {
                units.iter().map(|u| u.path.is_root()).collect()
            }
            Target::Path(pattern) => {
                let m = matcher(pattern)?;
                units.iter().map(|u| m.is_match(u.path.as_str())).collect()
            }
            Target::Reading(pattern) => {
                let m = matcher(pattern)?;
                units
                    .iter()
                    .map(|u| u.reads.iter().any(|r| m.is_match(r.as_str())))
                    .collect()
            }
            // live-ci discovers units only; stacks are not modelled yet.
            Target::Type(Kind::Unit) => vec![true; units.len()],
            Target::Type(Kind::Stack) => vec![false; units.len()],
            Target::Git { base, head } => self.git_range(base, head.as_deref(), filter)?,
        })
    }

    fn git_range(&mut self, base: &str, head: Option<&str>, filter: &Filter) -> Result<Vec<bool>> {
        let key = (base.to_string(), head.map(str::to_string));
        if let Some(hit) = self.git_cache.get(&key) {
            return Ok(hit.clone());
        }
        let Some(git) = self.git else {
            return Err(CoreError::Filter(format!(
                "filter {:?} selects units changed in git ({}), but no git repository \
                 is available",
                filter.source,
                Target::Git {
                    base: base.to_string(),
                    head: head.map(str::to_string)
                }
            )));
        };
        let mut out = vec![false; self.graph.len()];
        // Removed units are not in the graph; change detection plans their destroys.
        for path in git.affected(base, head)? {
            if let Some(i) = self.graph.index_of(&path) {
                out[i] = true;
            }
        }
        self.git_cache.insert(key, out.clone());
        Ok(out)
    }
}

/// `*` stays within one path component, `**` crosses them.
fn matcher(pattern: &str) -> Result<GlobMatcher> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| CoreError::Filter(format!("invalid glob {pattern:?}: {}", e.kind())))
}
