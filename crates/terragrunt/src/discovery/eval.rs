//! Static evaluation of terragrunt expressions in the context of one unit.
//!
//! Why not `hcl::eval::Context` alone: its functions are plain `fn` pointers, so
//! `get_terragrunt_dir()`, `find_in_parent_folders()` or `read_terragrunt_config()`
//! could not see which unit they are evaluated for, nor record the files they
//! read, nor yield "unknown" for one leaf while its neighbours stay known. This
//! walker owns variables, traversals, function calls, `for` expressions and
//! template interpolations, and hands the pure parts (operators, template
//! rendering with strip markers) to hcl-rs with literal operands.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use hcl::eval::{Context, Evaluate};
use hcl::template::{Directive, Element};
use hcl::{
    BinaryOp, Expression, ForExpr, ObjectKey, Operation, Template, TemplateExpr, Traversal,
    TraversalOperator, UnaryOp,
};

use super::bounds;
use super::value::{Unknown, V};
use super::{ParsedFile, Shared, Sink};
use crate::error::EngineError;
use crate::unit::Unresolved;
use live_ci_core::path::RepoPath;

/// Variables bound by enclosing `for` expressions, innermost first.
#[derive(Debug, Default)]
pub(crate) struct Scope<'p> {
    vars: Vec<(String, V)>,
    parent: Option<&'p Scope<'p>>,
}

impl Scope<'_> {
    fn get(&self, name: &str) -> Option<&V> {
        self.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
            .or_else(|| self.parent.and_then(|p| p.get(name)))
    }
}

/// Which include relationship the evaluated file is in, for
/// `get_parent_terragrunt_dir()` and `path_relative_*_include()`.
#[derive(Debug, Clone)]
pub(crate) enum IncludeCtx {
    /// A unit's own config or a config read by `read_terragrunt_config`, with
    /// the files its `include` blocks named (label, file).
    Child(Vec<(String, RepoPath)>),
    /// An included file, evaluated for the including unit.
    Included(RepoPath),
}

#[derive(Debug)]
enum Slot {
    Busy,
    Done(V),
}

/// Evaluates expressions of one file for one unit, collecting what they read.
pub(crate) struct FileEval<'a> {
    pub shared: &'a Shared<'a>,
    /// The file holding the expressions (named in errors and unresolved paths).
    pub file: RepoPath,
    pub parsed: Arc<ParsedFile>,
    /// What `get_terragrunt_dir()` returns, and what relative paths are relative to.
    pub dir: RepoPath,
    /// The unit the evaluation is for (`get_original_terragrunt_dir()`).
    pub original_dir: RepoPath,
    pub include_ctx: IncludeCtx,
    /// Values of `include` blocks with `expose = true`, by label.
    pub exposed: BTreeMap<String, V>,
    /// Terragrunt decodes `include` blocks before `locals`.
    pub locals_ready: bool,
    locals: HashMap<String, Slot>,
    pub dependency_names: Vec<String>,
    /// Where the expression being evaluated sits, e.g. `dependency.vpc.config_path`.
    pub field: String,
    pub sink: Sink,
    /// Files being included or read, outermost first: a file met again is a cycle.
    pub stack: Vec<RepoPath>,
    /// Set while computing values nobody asked a path of (a read config's inputs):
    /// unknowns there are not the unit's unresolved paths.
    pub quiet: bool,
    /// What this file's expressions produced so far ([`bounds::MAX_WORK`]).
    work: usize,
    /// Set once a bound was hit: nothing more of the file is evaluated.
    exhausted: bool,
}

impl std::fmt::Debug for FileEval<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileEval")
            .field("file", &self.file)
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl<'a> FileEval<'a> {
    pub(super) fn new(
        shared: &'a Shared<'a>,
        file: RepoPath,
        parsed: Arc<ParsedFile>,
        dir: RepoPath,
        original_dir: RepoPath,
        include_ctx: IncludeCtx,
        stack: Vec<RepoPath>,
    ) -> Self {
        FileEval {
            shared,
            file,
            parsed,
            dir,
            original_dir,
            include_ctx,
            exposed: BTreeMap::new(),
            locals_ready: false,
            locals: HashMap::new(),
            dependency_names: Vec::new(),
            field: String::new(),
            sink: Sink::default(),
            stack,
            quiet: false,
            work: 0,
            exhausted: false,
        }
    }

    /// Records a path that could not be resolved, once, unless it was already
    /// reported as an error. Returns the unknown marked as reported.
    pub(super) fn unresolved(&mut self, u: Unknown) -> Unknown {
        if !u.reported && !self.quiet {
            self.sink.unresolved.push(Unresolved {
                file: self.file.clone(),
                field: self.field.clone(),
                reason: u.reason.to_string(),
            });
        }
        u.reported()
    }

    /// Records an error and yields the unknown value standing in for the result.
    pub(super) fn error(&mut self, e: EngineError) -> V {
        let reason = e.to_string();
        self.sink.errors.push(e);
        V::Unknown(Unknown::failing(reason).reported())
    }

    /// A path-resolution error, naming this file and the field.
    pub(super) fn path_error(&mut self, e: EngineError) -> V {
        let message = format!("{}: {e}", self.field_or_file());
        self.error(EngineError::Config {
            file: self.file.clone(),
            message,
        })
    }

    pub(crate) fn field_or_file(&self) -> &str {
        if self.field.is_empty() {
            "expression"
        } else {
            &self.field
        }
    }

    /// Evaluates every local (terragrunt does, so reads in unused locals count).
    pub(super) fn all_locals(&mut self) -> V {
        let parsed = self.parsed.clone();
        let mut map = BTreeMap::new();
        for (name, _) in &parsed.locals {
            let v = self.local(name);
            map.insert(name.clone(), v);
        }
        V::Object(map)
    }

    fn local(&mut self, name: &str) -> V {
        if !self.locals_ready {
            return V::failing(format!(
                "local.{name} is used before locals exist (terragrunt decodes include blocks first)"
            ));
        }
        match self.locals.get(name) {
            Some(Slot::Done(v)) => return v.clone(),
            Some(Slot::Busy) => return V::failing(format!("local.{name} refers to itself")),
            None => {}
        }
        let parsed = self.parsed.clone();
        let Some((_, expr)) = parsed.locals.iter().find(|(n, _)| n == name) else {
            return V::failing(format!("local.{name} is not defined in {}", self.file));
        };
        self.locals.insert(name.to_string(), Slot::Busy);
        let saved = std::mem::replace(&mut self.field, format!("locals.{name}"));
        let v = self.eval(expr, &Scope::default());
        self.field = saved;
        self.locals.insert(name.to_string(), Slot::Done(v.clone()));
        v
    }

    pub(crate) fn dependency_value(&self, name: &str) -> V {
        if self.dependency_names.iter().any(|n| n == name) {
            let mut m = BTreeMap::new();
            m.insert(
                "outputs".to_string(),
                V::unknown(format!(
                    "dependency.{name}.outputs is known only after {name:?} is applied"
                )),
            );
            V::Object(m)
        } else {
            V::failing(format!(
                "dependency.{name} is not declared in {}",
                self.file
            ))
        }
    }

    fn include_value(&self) -> V {
        if let Some(v) = self.exposed.get("") {
            return v.clone();
        }
        V::Object(self.exposed.clone())
    }

    /// Evaluates `expr`, bounded: a result larger than [`bounds::MAX_VALUE`],
    /// or more than [`bounds::MAX_WORK`] produced by the file's expressions
    /// together, is an error naming the file, line and field, and the rest of
    /// the file is not evaluated.
    pub(super) fn eval(&mut self, expr: &Expression, scope: &Scope) -> V {
        if self.exhausted {
            return V::Unknown(
                Unknown::failing("evaluation stopped: a value was too large").reported(),
            );
        }
        let v = self.eval_expr(expr, scope);
        if matches!(
            expr,
            Expression::Null | Expression::Bool(_) | Expression::Number(_) | Expression::String(_)
        ) {
            return v;
        }
        let weight = bounds::weight(&v, bounds::MAX_VALUE);
        self.work += weight;
        let message = if weight > bounds::MAX_VALUE {
            format!(
                "{}: a value larger than {} bytes is refused",
                self.field_or_file(),
                bounds::MAX_VALUE
            )
        } else if self.work > bounds::MAX_WORK {
            format!(
                "{}: the file's expressions produce more than {} bytes together; refused",
                self.field_or_file(),
                bounds::MAX_WORK
            )
        } else {
            return v;
        };
        self.exhausted = true;
        let line = self
            .shared
            .text(&self.file)
            .ok()
            .and_then(|text| bounds::line_of(&text, &self.field));
        self.error(EngineError::TooLarge {
            file: self.file.clone(),
            line: line.unwrap_or(1),
            message,
        })
    }

    fn eval_expr(&mut self, expr: &Expression, scope: &Scope) -> V {
        match expr {
            Expression::Null => V::Null,
            Expression::Bool(b) => V::Bool(*b),
            Expression::Number(n) => V::Number(*n),
            Expression::String(s) => V::String(s.clone()),
            Expression::Array(items) => {
                V::List(items.iter().map(|e| self.eval(e, scope)).collect())
            }
            Expression::Object(obj) => {
                let mut map = BTreeMap::new();
                for (k, e) in obj {
                    let key = match k {
                        ObjectKey::Identifier(id) => id.as_str().to_string(),
                        ObjectKey::Expression(ke) => match self.eval(ke, scope).as_string() {
                            Ok(s) => s,
                            Err(u) => return V::Unknown(u),
                        },
                        #[allow(unreachable_patterns)]
                        _ => return V::failing("unsupported object key"),
                    };
                    let v = self.eval(e, scope);
                    map.insert(key, v);
                }
                V::Object(map)
            }
            Expression::TemplateExpr(t) => self.eval_template(t, scope),
            Expression::Variable(v) => self.variable(v.as_str(), scope),
            Expression::Traversal(t) => self.traversal(t, scope),
            Expression::FuncCall(f) => self.call(f, scope),
            Expression::Parenthesis(e) => self.eval(e, scope),
            Expression::Conditional(c) => match self.eval(&c.cond_expr, scope) {
                V::Bool(true) => self.eval(&c.true_expr, scope),
                V::Bool(false) => self.eval(&c.false_expr, scope),
                V::Unknown(u) => V::Unknown(u),
                other => V::failing(format!(
                    "a condition must be a bool, found a {}",
                    other.type_name()
                )),
            },
            Expression::Operation(op) => self.operation(op, scope),
            Expression::ForExpr(f) => self.for_expr(f, scope),
            #[allow(unreachable_patterns)]
            _ => V::failing("unsupported expression"),
        }
    }

    fn variable(&mut self, name: &str, scope: &Scope) -> V {
        if let Some(v) = scope.get(name) {
            return v.clone();
        }
        match name {
            "local" => self.all_locals(),
            "include" => self.include_value(),
            "dependency" => {
                let names = self.dependency_names.clone();
                V::Object(
                    names
                        .iter()
                        .map(|n| (n.clone(), self.dependency_value(n)))
                        .collect(),
                )
            }
            "values" => self.values(),
            "feature" => V::unknown(format!("{name}.* is set at run time")),
            _ => V::failing(format!("unknown variable {name:?}")),
        }
    }

    /// `values`: the attributes of the `terragrunt.values.hcl` beside the unit
    /// (or stack file) evaluated, which stack generation writes; without one
    /// they are known only at run time, as before stacks were generated.
    fn values(&mut self) -> V {
        let file = self.original_dir.child(super::VALUES_FILE);
        if !self.shared.files.contains(&file) {
            return V::unknown("values.* is set at run time");
        }
        if self.stack.contains(&file) {
            return V::failing(format!("{:?} refers to its own values", file.as_str()));
        }
        self.sink.reads.insert(file.clone());
        let parsed = match self.shared.parse(&file) {
            Ok(p) => p,
            Err(e) => return self.error(e),
        };
        let mut stack = self.stack.clone();
        stack.push(file.clone());
        let dir = self.original_dir.clone();
        let mut fe = FileEval::new(
            self.shared,
            file,
            parsed.clone(),
            dir.clone(),
            dir,
            IncludeCtx::Child(Vec::new()),
            stack,
        );
        fe.locals_ready = true;
        let root = Scope::default();
        let map: BTreeMap<String, V> = parsed
            .body
            .attributes()
            .map(|a| (a.key.as_str().to_string(), fe.eval(&a.expr, &root)))
            .collect();
        self.sink.absorb(fe.sink);
        V::Object(map)
    }

    fn traversal(&mut self, t: &Traversal, scope: &Scope) -> V {
        let ops = &t.operators[..];
        if let (Expression::Variable(var), Some(TraversalOperator::GetAttr(attr))) =
            (&t.expr, ops.first())
            && scope.get(var.as_str()).is_none()
        {
            let head = match var.as_str() {
                "local" => Some(self.local(attr.as_str())),
                "dependency" => Some(self.dependency_value(attr.as_str())),
                _ => None,
            };
            if let Some(v) = head {
                let path = format!("{}.{}", var.as_str(), attr.as_str());
                return self.apply_ops(v, &ops[1..], scope, path);
            }
        }
        let base = self.eval(&t.expr, scope);
        let path = match &t.expr {
            Expression::Variable(v) => v.as_str().to_string(),
            _ => "value".to_string(),
        };
        self.apply_ops(base, ops, scope, path)
    }

    fn apply_ops(
        &mut self,
        mut cur: V,
        ops: &[TraversalOperator],
        scope: &Scope,
        mut path: String,
    ) -> V {
        for (i, op) in ops.iter().enumerate() {
            if let V::Unknown(_) = cur {
                return cur;
            }
            cur = match op {
                TraversalOperator::GetAttr(name) => {
                    let v = get_attr(cur, name.as_str(), &path);
                    path.push('.');
                    path.push_str(name.as_str());
                    v
                }
                TraversalOperator::Index(e) => {
                    let idx = self.eval(e, scope);
                    index(cur, idx, &path)
                }
                TraversalOperator::LegacyIndex(n) => index(cur, V::Number((*n).into()), &path),
                TraversalOperator::AttrSplat | TraversalOperator::FullSplat => {
                    let rest = &ops[i + 1..];
                    return match cur {
                        V::List(items) => V::List(
                            items
                                .into_iter()
                                .map(|it| self.apply_ops(it, rest, scope, path.clone()))
                                .collect(),
                        ),
                        V::Null => V::List(Vec::new()),
                        other => V::List(vec![self.apply_ops(other, rest, scope, path)]),
                    };
                }
            };
        }
        cur
    }

    fn operation(&mut self, op: &Operation, scope: &Scope) -> V {
        let literal = match op {
            Operation::Unary(u) => match self.eval(&u.expr, scope).to_value() {
                Ok(v) => Operation::Unary(UnaryOp::new(u.operator, v)),
                Err(unk) => return V::Unknown(unk),
            },
            Operation::Binary(b) => {
                let lhs = self.eval(&b.lhs_expr, scope);
                let rhs = self.eval(&b.rhs_expr, scope);
                match (lhs.to_value(), rhs.to_value()) {
                    (Ok(l), Ok(r)) => Operation::Binary(BinaryOp::new(l, b.operator, r)),
                    (Err(unk), _) | (_, Err(unk)) => return V::Unknown(unk),
                }
            }
        };
        // Operands are literals now, so an empty context suffices.
        match Expression::Operation(Box::new(literal)).evaluate(&Context::new()) {
            Ok(v) => V::from_value(v),
            Err(e) => V::failing(e.to_string()),
        }
    }

    fn for_expr(&mut self, f: &ForExpr, scope: &Scope) -> V {
        let pairs: Vec<(V, V)> = match self.eval(&f.collection_expr, scope) {
            V::List(items) => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| (V::Number((i as u64).into()), v))
                .collect(),
            V::Object(map) => map.into_iter().map(|(k, v)| (V::String(k), v)).collect(),
            V::Unknown(u) => return V::Unknown(u),
            other => {
                return V::failing(format!(
                    "a for expression needs a collection, found a {}",
                    other.type_name()
                ));
            }
        };
        let mut list = Vec::new();
        let mut obj: BTreeMap<String, V> = BTreeMap::new();
        for (k, v) in pairs {
            let mut vars = vec![(f.value_var.as_str().to_string(), v)];
            if let Some(kv) = &f.key_var {
                vars.push((kv.as_str().to_string(), k));
            }
            let inner = Scope {
                vars,
                parent: Some(scope),
            };
            if let Some(c) = &f.cond_expr {
                match self.eval(c, &inner) {
                    V::Bool(true) => {}
                    V::Bool(false) => continue,
                    V::Unknown(u) => return V::Unknown(u),
                    other => {
                        return V::failing(format!(
                            "a for condition must be a bool, found a {}",
                            other.type_name()
                        ));
                    }
                }
            }
            match &f.key_expr {
                Some(ke) => {
                    let key = match self.eval(ke, &inner).as_string() {
                        Ok(k) => k,
                        Err(u) => return V::Unknown(u),
                    };
                    let val = self.eval(&f.value_expr, &inner);
                    if f.grouping {
                        if let V::List(items) =
                            obj.entry(key).or_insert_with(|| V::List(Vec::new()))
                        {
                            items.push(val);
                        }
                    } else if obj.insert(key.clone(), val).is_some() {
                        return V::failing(format!("duplicate key {key:?} in a for expression"));
                    }
                }
                None => list.push(self.eval(&f.value_expr, &inner)),
            }
        }
        if f.key_expr.is_some() {
            V::Object(obj)
        } else {
            V::List(list)
        }
    }

    fn eval_template(&mut self, t: &TemplateExpr, scope: &Scope) -> V {
        let mut tpl = match Template::from_expr(t) {
            Ok(tpl) => tpl,
            Err(e) => return V::failing(format!("invalid template: {e}")),
        };
        if let Err(u) = self.substitute(&mut tpl, scope) {
            return V::Unknown(u);
        }
        // Every interpolation is a literal now; hcl-rs applies strip markers.
        match tpl.evaluate(&Context::new()) {
            Ok(s) => V::String(s),
            Err(e) => V::failing(e.to_string()),
        }
    }

    /// Replaces every interpolation and `if` condition by its literal value.
    fn substitute(&mut self, tpl: &mut Template, scope: &Scope) -> Result<(), Unknown> {
        for el in tpl.elements_mut() {
            match el {
                Element::Literal(_) => {}
                Element::Interpolation(interp) => {
                    let s = self.eval(&interp.expr, scope).as_string()?;
                    interp.expr = Expression::String(s);
                }
                Element::Directive(Directive::If(d)) => match self.eval(&d.cond_expr, scope) {
                    V::Bool(b) => {
                        d.cond_expr = Expression::Bool(b);
                        if b {
                            self.substitute(&mut d.true_template, scope)?;
                            if let Some(f) = &mut d.false_template {
                                *f = Template::new();
                            }
                        } else {
                            d.true_template = Template::new();
                            if let Some(f) = &mut d.false_template {
                                self.substitute(f, scope)?;
                            }
                        }
                    }
                    V::Unknown(u) => return Err(u),
                    other => {
                        return Err(Unknown::failing(format!(
                            "a template condition must be a bool, found a {}",
                            other.type_name()
                        )));
                    }
                },
                Element::Directive(Directive::For(_)) => {
                    return Err(Unknown::new(
                        "a %{for} template directive is not evaluated by discovery",
                    ));
                }
            }
        }
        Ok(())
    }
}

fn get_attr(cur: V, name: &str, path: &str) -> V {
    match cur {
        V::Object(mut map) => map
            .remove(name)
            .unwrap_or_else(|| V::failing(format!("{path} has no attribute {name:?}"))),
        V::Unknown(u) => V::Unknown(u),
        other => V::failing(format!(
            "{path} is a {}, not an object with {name:?}",
            other.type_name()
        )),
    }
}

fn index(cur: V, idx: V, path: &str) -> V {
    match (cur, idx) {
        (V::Unknown(u), _) | (_, V::Unknown(u)) => V::Unknown(u),
        (V::List(mut items), V::Number(n)) => match n.as_u64() {
            Some(i) if (i as usize) < items.len() => items.swap_remove(i as usize),
            _ => V::failing(format!("{path}[{n}] is out of range")),
        },
        (V::Object(mut map), key) => match key.as_string() {
            Ok(k) => map
                .remove(&k)
                .unwrap_or_else(|| V::failing(format!("{path} has no key {k:?}"))),
            Err(u) => V::Unknown(u),
        },
        (other, _) => V::failing(format!("{path} is a {}, not indexable", other.type_name())),
    }
}
