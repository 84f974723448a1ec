//! What the `units` scope decides on: a pull request's units closed over their
//! dependencies and dependents ([`closure`]), as pr-plan records them in its
//! comment ([`PullRequestUnits`]) for the lock's publishers to read back.

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};

/// `seeds` closed over `dependencies` (unit → the units it depends on): the
/// seeds, everything they depend on, and everything that depends on them,
/// transitively. A unit's deploy reads its dependencies' outputs and feeds
/// its dependents', so a change to any of them is a change to it.
pub fn closure<'a>(
    seeds: impl IntoIterator<Item = &'a str>,
    dependencies: &BTreeMap<String, BTreeSet<String>>,
) -> BTreeSet<String> {
    let mut dependents: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (unit, deps) in dependencies {
        for dep in deps {
            dependents
                .entry(dep.as_str())
                .or_default()
                .push(unit.as_str());
        }
    }
    let seeds: Vec<&str> = seeds.into_iter().collect();
    let mut out: BTreeSet<String> = seeds.iter().map(|s| s.to_string()).collect();
    // Upwards and downwards separately: a dependency's other dependents are
    // not reached (they share an input, not a deploy).
    let mut up: Vec<&str> = seeds.clone();
    let mut seen_up: BTreeSet<&str> = seeds.iter().copied().collect();
    while let Some(u) = up.pop() {
        for dep in dependencies.get(u).into_iter().flatten() {
            if seen_up.insert(dep.as_str()) {
                out.insert(dep.clone());
                up.push(dep.as_str());
            }
        }
    }
    let mut down: Vec<&str> = seeds.clone();
    let mut seen_down: BTreeSet<&str> = seeds.iter().copied().collect();
    while let Some(u) = down.pop() {
        for dependent in dependents.get(u).into_iter().flatten() {
            if seen_down.insert(dependent) {
                out.insert((*dependent).to_string());
                down.push(dependent);
            }
        }
    }
    out
}

/// What pr-plan records for the lock: a head commit and its unit closure.
/// Kept in pr-plan's own comment (the one place pr-plan, which never opens
/// the metadb, may write and the lock's publishers may read back).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequestUnits {
    /// The head commit pr-plan planned.
    pub head_sha: String,
    /// The units (configuration paths) the pull request changes, closed over
    /// their dependencies and dependents ([`closure`]).
    pub units: BTreeSet<String>,
}

/// Starts the record's line in the comment; base64 keeps any unit path
/// from closing the HTML comment or reading as markdown.
const UNITS_MARKER: &str = "<!-- live-ci:lock-units ";

impl PullRequestUnits {
    /// The record as one HTML comment line (invisible on GitHub).
    pub fn to_comment_line(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        format!("{UNITS_MARKER}{} -->", BASE64.encode(json))
    }

    /// The record in a comment body, if it holds one that reads; a line that
    /// does not decode counts as no record (the lock then holds as a whole).
    pub fn from_comment(body: &str) -> Option<Self> {
        let line = body
            .lines()
            .find_map(|l| l.trim().strip_prefix(UNITS_MARKER))?;
        let encoded = line.strip_suffix("-->")?.trim();
        let json = BASE64.decode(encoded).ok()?;
        serde_json::from_slice(&json).ok()
    }
}

/// The marker of pr-plan's summary comment, which also carries the pull
/// request's [`PullRequestUnits`] record.
pub const PLAN_COMMENT_MARKER: &str = "<!-- live-ci:pr-plan -->";
