//! One terragrunt config file evaluated for one unit: its `include` blocks
//! (followed and merged the way terragrunt merges them), `locals`, `dependency`
//! and `dependencies` blocks, `terraform.source`, and every file its functions
//! read anywhere in the file.

use std::collections::{BTreeMap, BTreeSet};

use hcl::template::{Directive, Element};
use hcl::{Block, BlockLabel, Body, Expression, ObjectKey, Structure, Template};

use super::eval::{FileEval, IncludeCtx, Scope};
use super::functions::{ROOT, is_read_function, resolve};
use super::value::V;
use super::{Shared, Sink};
use crate::error::EngineError;
use live_ci_core::path::RepoPath;

/// The role of the evaluated file.
#[derive(Debug, Clone)]
pub(crate) enum Mode {
    /// A `terragrunt.hcl` evaluated as a unit.
    Unit,
    /// A file included by the unit, evaluated in the unit's context.
    Included,
    /// A file read by `read_terragrunt_config`, evaluated in its own directory.
    Read,
}

/// A `terraform { source }` as discovery classifies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    Local(RepoPath),
    Remote,
    Unknown,
}

/// What one config (with what it includes) contributes to a unit.
#[derive(Debug, Default)]
pub(crate) struct ConfigOutcome {
    /// `dependency` blocks by name; `None` when the path did not resolve
    /// (reported in the sink). Later definitions of a name override earlier ones.
    pub deps: BTreeMap<String, Option<RepoPath>>,
    /// `dependencies { paths }`, concatenated across includes as terragrunt
    /// has done since v0.35.
    pub dep_paths: BTreeSet<RepoPath>,
    pub source: Option<Source>,
    /// Files included, transitively.
    pub included: BTreeSet<RepoPath>,
    /// The config as `read_terragrunt_config` / an exposed include sees it.
    pub value: V,
    pub sink: Sink,
}

impl ConfigOutcome {
    /// Every dependency directory, resolved.
    pub(super) fn dependency_dirs(&self) -> impl Iterator<Item = &RepoPath> {
        self.deps.values().flatten().chain(self.dep_paths.iter())
    }
}

fn label(block: &Block) -> String {
    match block.labels.first() {
        Some(BlockLabel::String(s)) => s.clone(),
        Some(BlockLabel::Identifier(i)) => i.as_str().to_string(),
        None => String::new(),
    }
}

fn attr<'b>(body: &'b Body, key: &str) -> Option<&'b Expression> {
    body.attributes()
        .find(|a| a.key.as_str() == key)
        .map(|a| &a.expr)
}

/// Evaluates `file` with `dir` as its terragrunt directory, for the unit in
/// `original_dir`. `stack` holds the files already being evaluated above it.
pub(crate) fn evaluate(
    shared: &Shared<'_>,
    file: &RepoPath,
    dir: &RepoPath,
    original_dir: &RepoPath,
    mode: Mode,
    stack: &[RepoPath],
    want_value: bool,
) -> ConfigOutcome {
    let mut out = ConfigOutcome {
        value: V::Null,
        ..Default::default()
    };
    let parsed = match if matches!(mode, Mode::Unit) {
        shared.parse_unit(file)
    } else {
        shared.parse(file)
    } {
        Ok(p) => p,
        Err(e) => {
            out.value = V::Unknown(super::value::Unknown::failing(e.to_string()).reported());
            out.sink.errors.push(e);
            return out;
        }
    };
    let mut stack = stack.to_vec();
    stack.push(file.clone());
    let include_ctx = match mode {
        Mode::Included => IncludeCtx::Included(file.clone()),
        Mode::Unit | Mode::Read => IncludeCtx::Child(Vec::new()),
    };
    let mut fe = FileEval::new(
        shared,
        file.clone(),
        parsed.clone(),
        dir.clone(),
        original_dir.clone(),
        include_ctx,
        stack,
    );
    let body = &parsed.body;
    // 1. include blocks, before locals exist.
    let include_list = includes(&mut fe, body, &mut out);
    if !matches!(mode, Mode::Included) {
        fe.include_ctx = IncludeCtx::Child(include_list);
    }
    // 2. locals, all of them.
    fe.locals_ready = true;
    fe.dependency_names = body
        .blocks()
        .filter(|b| b.identifier.as_str() == "dependency")
        .map(label)
        .collect();
    let locals = fe.all_locals();
    // 3. dependency blocks; 4. dependencies { paths }.
    dependency_blocks(&mut fe, body, &mut out);
    dependencies_paths(&mut fe, body, &mut out);
    // 5. terraform { source } and the var files terraform will be handed.
    terraform_blocks(&mut fe, body, &mut out);
    // 6. files read anywhere else (inputs, remote_state, generate...).
    for structure in body.iter() {
        match structure {
            Structure::Attribute(a) => {
                fe.field = a.key.as_str().to_string();
                scan(&mut fe, &a.expr);
            }
            Structure::Block(b) => match b.identifier.as_str() {
                "locals" | "include" | "dependencies" => {}
                _ => scan_block(&mut fe, b, b.identifier.as_str()),
            },
        }
    }
    if want_value {
        out.value = file_value(&mut fe, body, locals);
    }
    out.sink.absorb(fe.sink);
    out
}

/// The `include` blocks of the file under evaluation: each included file
/// evaluated in turn (what it reads, its dependencies and source merged as
/// its `merge_strategy` says, its value when exposed). Returns the includes
/// by label, for `include.<label>` in the including file.
fn includes(
    fe: &mut FileEval<'_>,
    body: &Body,
    out: &mut ConfigOutcome,
) -> Vec<(String, RepoPath)> {
    let root = Scope::default();
    let mut include_list = Vec::new();
    for block in body.blocks().filter(|b| b.identifier.as_str() == "include") {
        let name = label(block);
        let prefix = if name.is_empty() {
            "include".to_string()
        } else {
            format!("include.{name}")
        };
        let Some(target) = include_target(fe, block, &prefix) else {
            continue;
        };
        fe.field = format!("{prefix}.merge_strategy");
        let strategy = match attr(&block.body, "merge_strategy").map(|e| fe.eval(e, &root)) {
            Some(V::String(s)) => s,
            _ => "shallow".to_string(),
        };
        fe.field = format!("{prefix}.expose");
        let expose = matches!(
            attr(&block.body, "expose").map(|e| fe.eval(e, &root)),
            Some(V::Bool(true))
        );
        fe.sink.reads.insert(target.clone());
        out.included.insert(target.clone());
        let inc = evaluate(
            fe.shared,
            &target,
            &fe.dir,
            &fe.original_dir,
            Mode::Included,
            &fe.stack,
            expose,
        );
        fe.sink.absorb(inc.sink);
        out.included.extend(inc.included);
        if strategy != "no_merge" {
            out.deps.extend(inc.deps);
            out.dep_paths.extend(inc.dep_paths);
            if inc.source.is_some() {
                out.source = inc.source;
            }
        }
        if expose {
            fe.exposed.insert(name.clone(), inc.value);
        }
        include_list.push((name, target));
    }
    include_list
}

/// The file an `include` block names, when it exists, keeps the chain
/// within its bound and makes no cycle; otherwise the error is recorded.
fn include_target(fe: &mut FileEval<'_>, block: &Block, prefix: &str) -> Option<RepoPath> {
    let file = fe.file.clone();
    fe.field = format!("{prefix}.path");
    let Some(path_expr) = attr(&block.body, "path") else {
        let message = format!("{prefix}: an include block needs a path");
        fe.error(EngineError::Config { file, message });
        return None;
    };
    let v = fe.eval(path_expr, &Scope::default());
    let target = to_path(fe, v)?;
    if !fe.shared.files.contains(&target) {
        fe.error(EngineError::MissingFile {
            file,
            function: "include".into(),
            missing: target,
        });
        return None;
    }
    let message = if fe.stack.len() >= super::bounds::MAX_CHAIN {
        format!(
            "{prefix}: {:?} would be the {}th file included or read in a chain; at most {} are",
            target.as_str(),
            fe.stack.len() + 1,
            super::bounds::MAX_CHAIN
        )
    } else if fe.stack.contains(&target) {
        format!("{prefix}: {:?} includes itself (a cycle)", target.as_str())
    } else {
        return Some(target);
    };
    fe.error(EngineError::Config { file, message });
    None
}

/// `dependency` blocks: each enabled one's directory, by name.
fn dependency_blocks(fe: &mut FileEval<'_>, body: &Body, out: &mut ConfigOutcome) {
    let root = Scope::default();
    for block in body
        .blocks()
        .filter(|b| b.identifier.as_str() == "dependency")
    {
        let name = label(block);
        fe.field = format!("dependency.{name}.enabled");
        if let Some(e) = attr(&block.body, "enabled")
            && let V::Bool(false) = fe.eval(e, &root)
        {
            out.deps.remove(&name);
            continue;
        }
        fe.field = format!("dependency.{name}.config_path");
        let resolved = match attr(&block.body, "config_path") {
            Some(e) => {
                let v = fe.eval(e, &root);
                to_path(fe, v).map(|p| config_dir(fe.shared, p))
            }
            None => {
                let message = format!("dependency.{name}: a dependency block needs config_path");
                let file = fe.file.clone();
                fe.error(EngineError::Config { file, message });
                None
            }
        };
        out.deps.insert(name, resolved);
    }
}

/// `dependencies { paths }`: directories the unit runs after.
fn dependencies_paths(fe: &mut FileEval<'_>, body: &Body, out: &mut ConfigOutcome) {
    for block in body
        .blocks()
        .filter(|b| b.identifier.as_str() == "dependencies")
    {
        fe.field = "dependencies.paths".into();
        let Some(e) = attr(&block.body, "paths") else {
            continue;
        };
        match fe.eval(e, &Scope::default()) {
            V::List(items) => {
                for item in items {
                    if let Some(p) = to_path(fe, item) {
                        out.dep_paths.insert(config_dir(fe.shared, p));
                    }
                }
            }
            V::Unknown(u) => {
                fe.unresolved(u);
            }
            other => {
                let message = format!(
                    "dependencies.paths: expected a list, found a {}",
                    other.type_name()
                );
                let file = fe.file.clone();
                fe.error(EngineError::Config { file, message });
            }
        }
    }
}

/// `terraform { source }` and the var files of its `extra_arguments`.
fn terraform_blocks(fe: &mut FileEval<'_>, body: &Body, out: &mut ConfigOutcome) {
    for block in body
        .blocks()
        .filter(|b| b.identifier.as_str() == "terraform")
    {
        if let Some(e) = attr(&block.body, "source") {
            fe.field = "terraform.source".into();
            let v = fe.eval(e, &Scope::default());
            out.source = Some(classify_source(fe, v));
        }
        for extra in block
            .body
            .blocks()
            .filter(|b| b.identifier.as_str() == "extra_arguments")
        {
            for (key, required) in [("required_var_files", true), ("optional_var_files", false)] {
                if let Some(e) = attr(&extra.body, key) {
                    fe.field = format!("terraform.extra_arguments.{}.{key}", label(extra));
                    var_files(fe, e, required);
                }
            }
        }
    }
}

/// The file's value, as an exposed include or `read_terragrunt_config`
/// returns it: its attributes, `locals` and `dependency` outputs.
fn file_value(fe: &mut FileEval<'_>, body: &Body, locals: V) -> V {
    let root = Scope::default();
    fe.quiet = true;
    let mut map = BTreeMap::new();
    for a in body.attributes() {
        let v = fe.eval(&a.expr, &root);
        map.insert(a.key.as_str().to_string(), v);
    }
    map.insert("locals".into(), locals);
    let deps = fe.dependency_names.clone();
    let dep_values = deps
        .iter()
        .map(|n| (n.clone(), fe.dependency_value(n)))
        .collect();
    map.insert("dependency".into(), V::Object(dep_values));
    fe.quiet = false;
    V::Object(map)
}

/// A dependency path naming a config file means the unit directory holding it.
fn config_dir(shared: &Shared<'_>, p: RepoPath) -> RepoPath {
    if p.as_str().ends_with(".hcl") && shared.files.contains(&p) {
        p.parent().unwrap_or_else(RepoPath::root)
    } else {
        p
    }
}

/// An evaluated path string as a repository path, reporting why not.
fn to_path(fe: &mut FileEval<'_>, v: V) -> Option<RepoPath> {
    match v.as_string() {
        Ok(s) => match resolve(&fe.dir, &s) {
            Ok(p) => Some(p),
            Err(e) => {
                fe.path_error(e);
                None
            }
        },
        Err(u) => {
            fe.unresolved(u);
            None
        }
    }
}

fn var_files(fe: &mut FileEval<'_>, e: &Expression, required: bool) {
    match fe.eval(e, &Scope::default()) {
        V::List(items) => {
            for item in items {
                let Some(p) = to_path(fe, item) else { continue };
                if fe.shared.files.contains(&p) {
                    fe.sink.reads.insert(p);
                } else if required {
                    let file = fe.file.clone();
                    fe.error(EngineError::MissingFile {
                        file,
                        function: "required_var_files".into(),
                        missing: p,
                    });
                }
            }
        }
        V::Unknown(u) => {
            fe.unresolved(u);
        }
        _ => {}
    }
}

/// Terragrunt hands `source` to go-getter: anything with a forced getter, a
/// URL scheme or a known host shorthand is remote; the rest is a path. The
/// module directory is the part before `//` (terragrunt copies all of it).
fn classify_source(fe: &mut FileEval<'_>, v: V) -> Source {
    let s = match v.as_string() {
        Ok(s) => s,
        Err(u) => {
            fe.unresolved(u);
            return Source::Unknown;
        }
    };
    let remote_prefixes = [
        "git@",
        "github.com/",
        "gitlab.com/",
        "bitbucket.org/",
        "www.googleapis.com/",
    ];
    if s.contains("::")
        || s.contains("://")
        || remote_prefixes.iter().any(|p| s.starts_with(p))
        || s.contains(".amazonaws.com/")
    {
        return Source::Remote;
    }
    let no_query = s.split('?').next().unwrap_or(&s);
    let search_from = if no_query.starts_with(ROOT) {
        ROOT.len()
    } else {
        0
    };
    let root_part = match no_query[search_from..].find("//") {
        Some(i) => &no_query[..search_from + i],
        None => no_query,
    };
    match resolve(&fe.dir, root_part) {
        Ok(p) => {
            if p.is_root() || fe.shared.dirs.contains(&p) {
                Source::Local(p)
            } else {
                let message = format!(
                    "terraform.source: local module directory {:?} does not exist",
                    p.as_str()
                );
                let file = fe.file.clone();
                fe.error(EngineError::Config { file, message });
                Source::Unknown
            }
        }
        Err(e) => {
            fe.path_error(e);
            Source::Unknown
        }
    }
}

fn scan_block(fe: &mut FileEval<'_>, block: &Block, prefix: &str) {
    let mut prefix = prefix.to_string();
    for l in &block.labels {
        prefix.push('.');
        prefix.push_str(match l {
            BlockLabel::String(s) => s,
            BlockLabel::Identifier(i) => i.as_str(),
        });
    }
    let skip: &[&str] = match block.identifier.as_str() {
        "dependency" => &["config_path", "enabled"],
        "terraform" => &["source"],
        _ => &[],
    };
    for s in block.body.iter() {
        match s {
            Structure::Attribute(a) if skip.contains(&a.key.as_str()) => {}
            Structure::Attribute(a) => {
                fe.field = format!("{prefix}.{}", a.key.as_str());
                scan(fe, &a.expr);
            }
            Structure::Block(b) if b.identifier.as_str() == "extra_arguments" => {}
            Structure::Block(b) => {
                let p = format!("{prefix}.{}", b.identifier.as_str());
                scan_block(fe, b, &p);
            }
        }
    }
}

/// Evaluates each read-function call in `expr` (not the whole expression, whose
/// other parts may be unknowable and are no path). A `for` expression holding
/// such a call is evaluated whole, since the call may use its variables.
fn scan(fe: &mut FileEval<'_>, expr: &Expression) {
    if !mentions_read(expr) {
        return;
    }
    match expr {
        Expression::FuncCall(f) if is_read_function(f.name.name.as_str()) => {
            fe.eval(expr, &Scope::default());
        }
        Expression::ForExpr(_) => {
            fe.eval(expr, &Scope::default());
        }
        Expression::FuncCall(f) => f.args.iter().for_each(|a| scan(fe, a)),
        Expression::Array(items) => items.iter().for_each(|a| scan(fe, a)),
        Expression::Object(obj) => {
            for (k, v) in obj {
                if let ObjectKey::Expression(ke) = k {
                    scan(fe, ke);
                }
                scan(fe, v);
            }
        }
        Expression::TemplateExpr(t) => {
            if let Ok(tpl) = Template::from_expr(t) {
                scan_template(fe, &tpl);
            }
        }
        Expression::Traversal(t) => {
            scan(fe, &t.expr);
            for op in &t.operators {
                if let hcl::TraversalOperator::Index(e) = op {
                    scan(fe, e);
                }
            }
        }
        Expression::Parenthesis(e) => scan(fe, e),
        Expression::Conditional(c) => {
            scan(fe, &c.cond_expr);
            scan(fe, &c.true_expr);
            scan(fe, &c.false_expr);
        }
        Expression::Operation(op) => match &**op {
            hcl::Operation::Unary(u) => scan(fe, &u.expr),
            hcl::Operation::Binary(b) => {
                scan(fe, &b.lhs_expr);
                scan(fe, &b.rhs_expr);
            }
        },
        _ => {}
    }
}

fn scan_template(fe: &mut FileEval<'_>, tpl: &Template) {
    for el in tpl.elements() {
        match el {
            Element::Literal(_) => {}
            Element::Interpolation(i) => scan(fe, &i.expr),
            Element::Directive(Directive::If(d)) => {
                scan(fe, &d.cond_expr);
                scan_template(fe, &d.true_template);
                if let Some(f) = &d.false_template {
                    scan_template(fe, f);
                }
            }
            Element::Directive(Directive::For(d)) => {
                scan(fe, &d.collection_expr);
                scan_template(fe, &d.template);
            }
        }
    }
}

/// A cheap pre-check so that the common attribute (no read call) costs no
/// evaluation at all.
fn mentions_read(expr: &Expression) -> bool {
    match expr {
        Expression::FuncCall(f) => {
            is_read_function(f.name.name.as_str()) || f.args.iter().any(mentions_read)
        }
        Expression::Array(items) => items.iter().any(mentions_read),
        Expression::Object(obj) => obj.iter().any(|(k, v)| {
            matches!(k, ObjectKey::Expression(ke) if mentions_read(ke)) || mentions_read(v)
        }),
        Expression::TemplateExpr(t) => {
            let raw = match &**t {
                hcl::TemplateExpr::QuotedString(s) => s.as_str(),
                hcl::TemplateExpr::Heredoc(h) => h.template.as_str(),
            };
            super::functions_in_text(raw)
        }
        Expression::Traversal(t) => {
            mentions_read(&t.expr)
                || t.operators
                    .iter()
                    .any(|op| matches!(op, hcl::TraversalOperator::Index(e) if mentions_read(e)))
        }
        Expression::Parenthesis(e) => mentions_read(e),
        Expression::Conditional(c) => {
            mentions_read(&c.cond_expr)
                || mentions_read(&c.true_expr)
                || mentions_read(&c.false_expr)
        }
        Expression::Operation(op) => match &**op {
            hcl::Operation::Unary(u) => mentions_read(&u.expr),
            hcl::Operation::Binary(b) => mentions_read(&b.lhs_expr) || mentions_read(&b.rhs_expr),
        },
        Expression::ForExpr(f) => {
            mentions_read(&f.collection_expr)
                || mentions_read(&f.value_expr)
                || f.key_expr.as_ref().is_some_and(mentions_read)
                || f.cond_expr.as_ref().is_some_and(mentions_read)
        }
        _ => false,
    }
}
