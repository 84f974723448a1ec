//! Text renderings for people: aligned tables, Graphviz DOT and Mermaid.

use std::fmt::Write;

use live_ci_core::deploy::Action;
use live_ci_terragrunt::Graph;
use live_ci_terragrunt::change::Reason;
use live_ci_terragrunt::plan::DeploymentPlan;

pub(crate) fn action(a: Action) -> &'static str {
    match a {
        Action::Apply => "apply",
        Action::Destroy => "destroy",
    }
}

pub(crate) fn reason(r: Reason) -> &'static str {
    match r {
        Reason::Changed => "changed",
        Reason::ReadFileChanged => "read-file-changed",
        Reason::ModuleChanged => "module-changed",
        Reason::DependencyAffected => "dependency-affected",
        Reason::Removed => "removed",
        Reason::Pending => "pending",
    }
}

/// Columns padded to their widest cell; hand-written because a dependency for
/// twenty lines of padding is not worth its build time.
pub(crate) fn table(headers: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let last = cells.len().saturating_sub(1);
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i == last {
                out.push_str(cell);
            } else {
                let _ = write!(out, "{cell:<w$}  ");
            }
        }
        out.push('\n');
    };
    line(headers.to_vec());
    for row in &rows {
        line(row.iter().map(String::as_str).collect());
    }
    out
}

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Edges point from a unit to what it depends on.
pub(crate) fn graph_dot(graph: &Graph) -> String {
    let mut out = String::from("digraph units {\n  rankdir = LR;\n  node [shape = box];\n");
    for (i, u) in graph.units().iter().enumerate() {
        let _ = writeln!(out, "  {};", quote(u.path.display()));
        for &d in graph.dependencies(i) {
            let _ = writeln!(
                out,
                "  {} -> {};",
                quote(u.path.display()),
                quote(graph.path(d).display())
            );
        }
    }
    out.push_str("}\n");
    out
}

pub(crate) fn graph_mermaid(graph: &Graph) -> String {
    let mut out = String::from("flowchart LR\n");
    for (i, u) in graph.units().iter().enumerate() {
        let _ = writeln!(
            out,
            "  u{i}[\"{}\"]",
            u.path.display().replace('"', "#quot;")
        );
    }
    for i in 0..graph.len() {
        for &d in graph.dependencies(i) {
            let _ = writeln!(out, "  u{i} --> u{d}");
        }
    }
    out
}

/// The plan as a DOT graph, clustered by account, labelled with pool positions.
pub(crate) fn plan_dot(plan: &DeploymentPlan) -> String {
    let mut out = String::from("digraph plan {\n  rankdir = LR;\n  node [shape = box];\n");
    let mut accounts: Vec<Option<&str>> = plan.units.iter().map(|u| u.account.as_deref()).collect();
    accounts.sort();
    accounts.dedup();
    for (k, account) in accounts.iter().enumerate() {
        if let Some(a) = account {
            let _ = writeln!(out, "  subgraph cluster_{k} {{\n    label = {};", quote(a));
        }
        for u in plan
            .units
            .iter()
            .filter(|u| u.account.as_deref() == *account)
        {
            let _ = writeln!(
                out,
                "    {} [label = {}];",
                quote(u.path.display()),
                quote(&format!("#{} {} {}", u.position, action(u.action), u.path))
            );
        }
        if account.is_some() {
            out.push_str("  }\n");
        }
    }
    for u in &plan.units {
        for d in &u.dependencies {
            let _ = writeln!(
                out,
                "  {} -> {};",
                quote(u.path.display()),
                quote(d.display())
            );
        }
    }
    out.push_str("}\n");
    out
}
