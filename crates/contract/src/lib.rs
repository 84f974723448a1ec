//! A static reading of the Terraform module (`infra/*.tf`) for the contract tests
//! in `tests/`: which environment variable names a resource sets, which IAM
//! actions a policy document allows, which variables a `templatefile` call
//! passes. Nothing is evaluated: the module is read as written, following
//! `local.*` references, `merge(...)`, conditionals (both branches) and `for`
//! expressions, so a name set in either branch counts as set.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use hcl::expr::{Expression, ObjectKey, TraversalOperator};
use hcl::{Block, Body};

/// What can go wrong reading the module; each names the file and the field.
#[derive(Debug, thiserror::Error)]
pub enum ContractError {
    /// The module directory or one of its files could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The directory or file.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// A `.tf` file is not HCL.
    #[error("{path}: not valid HCL: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The HCL parser's message.
        message: String,
    },
    /// The module has no such block, local or file.
    #[error("{dir}: no {what}")]
    NotFound {
        /// The module directory searched.
        dir: PathBuf,
        /// What was looked for (`resource aws_lambda_function.receiver`, `local.env`, `*.tf file`).
        what: String,
    },
    /// The module writes something this static reading does not follow.
    #[error("{path}: {field}: {detail}")]
    Unsupported {
        /// The file holding it.
        path: PathBuf,
        /// The attribute path or the expression, as written.
        field: String,
        /// Why it is not followed.
        detail: String,
    },
}

/// The result of every reading of the module.
pub type Result<T> = std::result::Result<T, ContractError>;

/// The `.tf` files of one module directory, parsed.
#[derive(Debug)]
pub struct Module {
    dir: PathBuf,
    files: Vec<(PathBuf, Body)>,
}

/// A block found in the module, with the file it came from.
#[derive(Debug, Clone, Copy)]
pub struct Found<'a, T> {
    /// The `.tf` file it is written in (error messages name it).
    pub path: &'a Path,
    /// The block or expression itself.
    pub item: &'a T,
}

impl Module {
    /// Parses every `*.tf` file directly in `dir` (not the examples below it).
    pub fn load(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        let io = |path: &Path, source| ContractError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(|e| io(&dir, e))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "tf"))
            .collect();
        paths.sort();
        let mut files = Vec::with_capacity(paths.len());
        for path in paths {
            let text = std::fs::read_to_string(&path).map_err(|e| io(&path, e))?;
            let body = hcl::parse(&text).map_err(|e| ContractError::Parse {
                path: path.clone(),
                message: e.to_string(),
            })?;
            files.push((path, body));
        }
        if files.is_empty() {
            return Err(ContractError::NotFound {
                dir,
                what: "*.tf file".into(),
            });
        }
        Ok(Module { dir, files })
    }

    /// The top-level block `kind "label0" "label1"…`, e.g. `resource
    /// "aws_lambda_function" "receiver"`.
    pub fn block(&self, kind: &str, labels: &[&str]) -> Result<Found<'_, Block>> {
        self.files
            .iter()
            .flat_map(|(path, body)| body.blocks().map(move |b| (path, b)))
            .find(|(_, b)| {
                b.identifier() == kind
                    && b.labels().len() == labels.len()
                    && b.labels()
                        .iter()
                        .zip(labels)
                        .all(|(l, want)| l.as_str() == *want)
            })
            .map(|(path, item)| Found { path, item })
            .ok_or_else(|| self.not_found(format!("{kind} {}", labels.join("."))))
    }

    /// The expression of `local.<name>`.
    pub fn local(&self, name: &str) -> Result<Found<'_, Expression>> {
        self.files
            .iter()
            .flat_map(|(path, body)| {
                body.blocks()
                    .filter(|b| b.identifier() == "locals")
                    .flat_map(move |b| b.body().attributes().map(move |a| (path, a)))
            })
            .find(|(_, a)| a.key.as_str() == name)
            .map(|(path, a)| Found {
                path,
                item: &a.expr,
            })
            .ok_or_else(|| self.not_found(format!("local.{name}")))
    }

    /// The expression at `path` inside `block`: nested block names, then the
    /// attribute (`["environment", "variables"]`).
    pub fn attr<'a>(
        &self,
        block: Found<'a, Block>,
        path: &[&str],
    ) -> Result<Found<'a, Expression>> {
        let (last, blocks) = path
            .split_last()
            .ok_or_else(|| self.not_found("empty path"))?;
        let mut body = block.item.body();
        for name in blocks {
            body = &body
                .blocks()
                .find(|b| b.identifier() == *name)
                .ok_or_else(|| self.field(block.path, path, "no such block"))?
                .body;
        }
        body.attributes()
            .find(|a| a.key.as_str() == *last)
            .map(|a| Found {
                path: block.path,
                item: &a.expr,
            })
            .ok_or_else(|| self.field(block.path, path, "no such attribute"))
    }

    /// The keys of the object `expr` evaluates to, whichever branch is taken.
    pub fn object_keys(&self, expr: Found<'_, Expression>) -> Result<BTreeSet<String>> {
        let mut keys = BTreeSet::new();
        self.collect_keys(expr.path, expr.item, &mut keys, 0)?;
        Ok(keys)
    }

    fn collect_keys(
        &self,
        path: &Path,
        expr: &Expression,
        keys: &mut BTreeSet<String>,
        depth: usize,
    ) -> Result<()> {
        if depth > 32 {
            return Err(self.unsupported(path, expr, "local references nest too deep (a cycle?)"));
        }
        match expr {
            Expression::Object(object) => {
                for key in object.keys() {
                    match key {
                        ObjectKey::Identifier(id) => keys.insert(id.to_string()),
                        ObjectKey::Expression(Expression::String(s)) => keys.insert(s.clone()),
                        ObjectKey::Expression(other) => {
                            return Err(self.unsupported(
                                path,
                                other,
                                "object key is not a literal",
                            ));
                        }
                        other => {
                            return Err(ContractError::Unsupported {
                                path: path.to_path_buf(),
                                field: format!("{other:?}"),
                                detail: "unknown object key kind".into(),
                            });
                        }
                    };
                }
                Ok(())
            }
            Expression::FuncCall(call) if call.name.name.as_str() == "merge" => call
                .args
                .iter()
                .try_for_each(|arg| self.collect_keys(path, arg, keys, depth + 1)),
            Expression::Conditional(c) => {
                self.collect_keys(path, &c.true_expr, keys, depth + 1)?;
                self.collect_keys(path, &c.false_expr, keys, depth + 1)
            }
            Expression::Parenthesis(inner) => self.collect_keys(path, inner, keys, depth + 1),
            // `{ for k, v in … : k => { … } }`: the keys of each value.
            Expression::ForExpr(f) if f.key_expr.is_some() => {
                self.collect_keys(path, &f.value_expr, keys, depth + 1)
            }
            Expression::Traversal(_) => match local_name(expr) {
                Some(name) => {
                    let found = self.local(name)?;
                    self.collect_keys(found.path, found.item, keys, depth + 1)
                }
                None => Err(self.unsupported(path, expr, "only local.* references are followed")),
            },
            other => {
                Err(self.unsupported(path, other, "not an object, merge, conditional or local"))
            }
        }
    }

    /// The string `name` attributes of a list of objects (ECS `secrets`,
    /// `environment`), whichever branch is taken.
    pub fn list_names(&self, expr: Found<'_, Expression>) -> Result<BTreeSet<String>> {
        let mut names = BTreeSet::new();
        self.collect_names(expr.path, expr.item, &mut names, 0)?;
        Ok(names)
    }

    fn collect_names(
        &self,
        path: &Path,
        expr: &Expression,
        names: &mut BTreeSet<String>,
        depth: usize,
    ) -> Result<()> {
        if depth > 32 {
            return Err(self.unsupported(path, expr, "local references nest too deep (a cycle?)"));
        }
        match expr {
            Expression::Array(items) => {
                for item in items {
                    let Expression::Object(object) = item else {
                        return Err(self.unsupported(path, item, "list item is not an object"));
                    };
                    let name = object.iter().find_map(|(k, v)| match (k, v) {
                        (ObjectKey::Identifier(id), Expression::String(s))
                            if id.as_str() == "name" =>
                        {
                            Some(s.clone())
                        }
                        _ => None,
                    });
                    match name {
                        Some(name) => names.insert(name),
                        None => return Err(self.unsupported(path, item, "no literal name")),
                    };
                }
                Ok(())
            }
            Expression::Conditional(c) => {
                self.collect_names(path, &c.true_expr, names, depth + 1)?;
                self.collect_names(path, &c.false_expr, names, depth + 1)
            }
            Expression::Traversal(_) => match local_name(expr) {
                Some(name) => {
                    let found = self.local(name)?;
                    self.collect_names(found.path, found.item, names, depth + 1)
                }
                None => Err(self.unsupported(path, expr, "only local.* references are followed")),
            },
            other => Err(self.unsupported(path, other, "not a list of objects")),
        }
    }

    /// Every action an `aws_iam_policy_document` allows: its `Allow`
    /// statements (plain and `dynamic`) and those of the documents it names in
    /// `source_policy_documents`.
    pub fn policy_actions(&self, document: &str) -> Result<BTreeSet<String>> {
        self.policy_actions_except(document, &[])
    }

    /// The same, leaving out the statements whose `sid` is in `skip_sids`
    /// (what a runtime needs rather than the binary's code, e.g. a Lambda's
    /// own log group).
    pub fn policy_actions_except(
        &self,
        document: &str,
        skip_sids: &[&str],
    ) -> Result<BTreeSet<String>> {
        let mut actions = BTreeSet::new();
        self.collect_actions(document, skip_sids, &mut actions, 0)?;
        Ok(actions)
    }

    fn collect_actions(
        &self,
        document: &str,
        skip_sids: &[&str],
        actions: &mut BTreeSet<String>,
        depth: usize,
    ) -> Result<()> {
        let doc = self.block("data", &["aws_iam_policy_document", document])?;
        if depth > 8 {
            return Err(self.field(
                doc.path,
                &["source_policy_documents"],
                "sources nest too deep (a cycle?)",
            ));
        }
        for statement in self.statement_blocks(&doc)? {
            let attr = |name: &str| {
                statement
                    .body()
                    .attributes()
                    .find(|a| a.key.as_str() == name)
            };
            if let Some(sid) = attr("sid")
                && matches!(&sid.expr, Expression::String(s) if skip_sids.contains(&s.as_str()))
            {
                continue;
            }
            if let Some(effect) = attr("effect") {
                match &effect.expr {
                    Expression::String(s) if s == "Allow" => {}
                    Expression::String(s) if s == "Deny" => continue,
                    other => {
                        return Err(self.unsupported(
                            doc.path,
                            other,
                            "effect is not Allow or Deny",
                        ));
                    }
                }
            }
            let Some(list) = attr("actions") else {
                return Err(self.field(
                    doc.path,
                    &["statement", "actions"],
                    "missing (not_actions is not supported)",
                ));
            };
            let Expression::Array(items) = &list.expr else {
                return Err(self.unsupported(
                    doc.path,
                    &list.expr,
                    "actions is not a literal list",
                ));
            };
            for item in items {
                let Expression::String(action) = item else {
                    return Err(self.unsupported(doc.path, item, "action is not a literal string"));
                };
                actions.insert(action.clone());
            }
        }
        if let Some(sources) = doc
            .item
            .body()
            .attributes()
            .find(|a| a.key.as_str() == "source_policy_documents")
        {
            for source in self.document_refs(doc.path, &sources.expr)? {
                self.collect_actions(&source, skip_sids, actions, depth + 1)?;
            }
        }
        Ok(())
    }

    /// The statement blocks of a policy document: plain ones and the `content`
    /// of `dynamic "statement"` ones (not those of its source documents).
    fn statement_blocks<'a>(&self, doc: &Found<'a, Block>) -> Result<Vec<&'a Block>> {
        let mut out = Vec::new();
        for block in doc.item.body().blocks() {
            match block.identifier() {
                "statement" => out.push(block),
                "dynamic" if block.labels().first().map(|l| l.as_str()) == Some("statement") => out
                    .push(
                        block
                            .body()
                            .blocks()
                            .find(|b| b.identifier() == "content")
                            .ok_or_else(|| {
                                self.field(doc.path, &["dynamic statement", "content"], "missing")
                            })?,
                    ),
                _ => {}
            }
        }
        Ok(out)
    }

    /// The statements written in one `aws_iam_policy_document` (plain and
    /// `dynamic`; not those of its `source_policy_documents`), for checks that
    /// need more than the actions: whom a key policy names, which resource a
    /// statement covers.
    pub fn statements(&self, document: &str) -> Result<Vec<Statement>> {
        let doc = self.block("data", &["aws_iam_policy_document", document])?;
        let mut out = Vec::new();
        for statement in self.statement_blocks(&doc)? {
            let attr = |name: &str| {
                statement
                    .body()
                    .attributes()
                    .find(|a| a.key.as_str() == name)
                    .map(|a| &a.expr)
            };
            let literal = |name: &str| match attr(name) {
                Some(Expression::String(s)) => Some(s.clone()),
                _ => None,
            };
            let mut actions = BTreeSet::new();
            if let Some(Expression::Array(items)) = attr("actions") {
                for item in items {
                    let Expression::String(action) = item else {
                        return Err(self.unsupported(
                            doc.path,
                            item,
                            "action is not a literal string",
                        ));
                    };
                    actions.insert(action.clone());
                }
            }
            let principals = statement
                .body()
                .blocks()
                .filter(|b| b.identifier() == "principals")
                .filter_map(|b| {
                    b.body()
                        .attributes()
                        .find(|a| a.key.as_str() == "identifiers")
                })
                .map(|a| one_line(&a.expr))
                .collect();
            out.push(Statement {
                sid: literal("sid"),
                deny: literal("effect").as_deref() == Some("Deny"),
                actions,
                resources: attr("resources").map(one_line).unwrap_or_default(),
                principals,
            });
        }
        Ok(out)
    }

    /// The names of every `data "aws_iam_policy_document"` in the module.
    pub fn policy_documents(&self) -> Vec<String> {
        self.labelled("data")
            .filter(|b| b.labels().first().map(|l| l.as_str()) == Some("aws_iam_policy_document"))
            .filter_map(|b| b.labels().get(1).map(|l| l.as_str().to_string()))
            .collect()
    }

    /// The policy documents an expression names (`data.aws_iam_policy_document.X[…].json`),
    /// through lists, `concat` and both branches of conditionals.
    pub fn document_refs(&self, path: &Path, expr: &Expression) -> Result<Vec<String>> {
        match expr {
            Expression::Array(items) => {
                let mut all = Vec::new();
                for item in items {
                    all.extend(self.document_refs(path, item)?);
                }
                Ok(all)
            }
            Expression::Conditional(c) => {
                let mut all = self.document_refs(path, &c.true_expr)?;
                all.extend(self.document_refs(path, &c.false_expr)?);
                Ok(all)
            }
            // `concat(always, cond ? [optional] : [])`: every list's documents.
            Expression::FuncCall(call) if call.name.name.as_str() == "concat" => {
                let mut all = Vec::new();
                for arg in &call.args {
                    all.extend(self.document_refs(path, arg)?);
                }
                Ok(all)
            }
            Expression::Traversal(t) => {
                let attrs: Vec<&str> = t
                    .operators
                    .iter()
                    .filter_map(|op| match op {
                        TraversalOperator::GetAttr(id) => Some(id.as_str()),
                        _ => None,
                    })
                    .collect();
                match (&t.expr, attrs.as_slice()) {
                    (Expression::Variable(v), ["aws_iam_policy_document", name, "json"])
                        if v.as_str() == "data" =>
                    {
                        Ok(vec![name.to_string()])
                    }
                    _ => Err(self.unsupported(
                        path,
                        expr,
                        "not data.aws_iam_policy_document.<name>.json",
                    )),
                }
            }
            other => Err(self.unsupported(path, other, "not a policy document reference")),
        }
    }

    /// The template path and the variable names of the `templatefile(…)` call
    /// that `expr` is.
    pub fn templatefile_vars(
        &self,
        expr: Found<'_, Expression>,
    ) -> Result<(String, BTreeSet<String>)> {
        let Expression::FuncCall(call) = expr.item else {
            return Err(self.unsupported(expr.path, expr.item, "not a function call"));
        };
        if call.name.name.as_str() != "templatefile" || call.args.len() != 2 {
            return Err(self.unsupported(expr.path, expr.item, "not templatefile(path, vars)"));
        }
        let template = format_expr(&call.args[0]);
        let vars = self.object_keys(Found {
            path: expr.path,
            item: &call.args[1],
        })?;
        Ok((template, vars))
    }

    fn not_found(&self, what: impl Into<String>) -> ContractError {
        ContractError::NotFound {
            dir: self.dir.clone(),
            what: what.into(),
        }
    }

    fn field(&self, path: &Path, field: &[&str], detail: &str) -> ContractError {
        ContractError::Unsupported {
            path: path.to_path_buf(),
            field: field.join("."),
            detail: detail.into(),
        }
    }

    fn unsupported(&self, path: &Path, expr: &Expression, detail: &str) -> ContractError {
        ContractError::Unsupported {
            path: path.to_path_buf(),
            field: format_expr(expr),
            detail: detail.into(),
        }
    }
}

/// One statement of a policy document, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// The `sid`, when a literal string.
    pub sid: Option<String>,
    /// Whether `effect = "Deny"` (otherwise the statement allows).
    pub deny: bool,
    /// The `actions` list's literal strings, as written (wildcards unexpanded).
    pub actions: BTreeSet<String>,
    /// The `resources` expression on one line (empty when absent).
    pub resources: String,
    /// Each `principals` block's `identifiers` expression on one line.
    pub principals: Vec<String>,
}

/// One `variable` block, as the README's inputs table shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    /// The variable's label (`var.<name>`).
    pub name: String,
    /// The `description`: its text when a literal, else the expression on one line.
    pub description: Option<String>,
    /// The type constraint as written, on one line.
    pub type_expr: Option<String>,
    /// The default as written, on one line; `None` when the variable is required.
    pub default: Option<String>,
    /// Whether `sensitive = true` (the README hides its default).
    pub sensitive: bool,
}

/// One `output` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// The output's label (`module.<m>.<name>`).
    pub name: String,
    /// The `description`: its text when a literal, else the expression on one line.
    pub description: Option<String>,
}

impl Module {
    /// Every `variable`, in file order.
    pub fn variables(&self) -> Vec<Variable> {
        self.labelled("variable")
            .map(|b| {
                let get = |k: &str| {
                    b.body()
                        .attributes()
                        .find(|a| a.key.as_str() == k)
                        .map(|a| &a.expr)
                };
                Variable {
                    name: label0(b),
                    description: get("description").map(literal_or_hcl),
                    type_expr: get("type").map(one_line),
                    default: get("default").map(one_line),
                    sensitive: matches!(get("sensitive"), Some(Expression::Bool(true))),
                }
            })
            .collect()
    }

    /// Every `output`, in file order.
    pub fn outputs(&self) -> Vec<Output> {
        self.labelled("output")
            .map(|b| Output {
                name: label0(b),
                description: b
                    .body()
                    .attributes()
                    .find(|a| a.key.as_str() == "description")
                    .map(|a| literal_or_hcl(&a.expr)),
            })
            .collect()
    }

    fn labelled<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Block> + 'a {
        self.files
            .iter()
            .flat_map(|(_, body)| body.blocks())
            .filter(move |b| b.identifier() == kind)
    }
}

fn label0(b: &Block) -> String {
    b.labels()
        .first()
        .map(|l| l.as_str().to_string())
        .unwrap_or_default()
}

fn literal_or_hcl(expr: &Expression) -> String {
    match expr {
        Expression::String(s) => s.clone(),
        other => one_line(other),
    }
}

/// An expression on one line. hcl-rs's formatter drops the comma between some
/// object attributes (after `optional(…, [])`), so it is put back: every
/// `name =` not at the start of an object follows a comma.
fn one_line(expr: &Expression) -> String {
    let mut tokens: Vec<String> = format_expr(expr)
        .split_whitespace()
        .map(str::to_string)
        .collect();
    for i in 1..tokens.len().saturating_sub(1) {
        let is_key = tokens[i + 1] == "="
            && tokens[i]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if is_key && !tokens[i - 1].ends_with([',', '{', '(', '[', '=']) {
            tokens[i - 1].push(',');
        }
    }
    tokens.join(" ")
}

/// The README's inputs and outputs tables (Markdown), generated from the module
/// so they cannot drift from `variables.tf` and `outputs.tf`.
pub fn docs_tables(module: &Module) -> String {
    let cell = |s: &str| s.replace('|', "\\|");
    let code = |s: &str| format!("`{}`", cell(s));
    let mut out = String::from(
        "## Inputs\n\n| Name | Description | Type | Default | Required |\n|---|---|---|---|:---:|\n",
    );
    for v in module.variables() {
        let default = match (&v.default, v.sensitive) {
            (None, _) => "n/a".to_string(),
            (Some(_), true) => "(sensitive)".to_string(),
            (Some(d), false) => code(d),
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            v.name,
            cell(v.description.as_deref().unwrap_or("")),
            v.type_expr.as_deref().map(code).unwrap_or_default(),
            default,
            if v.default.is_none() { "yes" } else { "no" },
        ));
    }
    out.push_str("\n## Outputs\n\n| Name | Description |\n|---|---|\n");
    for o in module.outputs() {
        out.push_str(&format!(
            "| `{}` | {} |\n",
            o.name,
            cell(o.description.as_deref().unwrap_or(""))
        ));
    }
    out
}

/// `name` for `local.name` and `local.name[…]…`.
fn local_name(expr: &Expression) -> Option<&str> {
    let Expression::Traversal(t) = expr else {
        return None;
    };
    match (&t.expr, t.operators.first()) {
        (Expression::Variable(v), Some(TraversalOperator::GetAttr(name)))
            if v.as_str() == "local" =>
        {
            Some(name.as_str())
        }
        _ => None,
    }
}

/// An expression as HCL text, for error messages and reference checks.
pub fn format_expr(expr: &Expression) -> String {
    hcl::format::to_string(expr).unwrap_or_else(|_| format!("{expr:?}"))
}

/// Whether the allowed `actions` (IAM patterns, `*` and `?` wildcards,
/// case-insensitive as IAM compares them) cover `action`.
pub fn allows(actions: &BTreeSet<String>, action: &str) -> bool {
    actions
        .iter()
        .any(|pattern| wildcard(&pattern.to_ascii_lowercase(), &action.to_ascii_lowercase()))
}

fn wildcard(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => {
            pattern.len() == text.len()
                && pattern
                    .chars()
                    .zip(text.chars())
                    .all(|(p, c)| p == '?' || p == c)
        }
        Some((head, rest)) => {
            head.len() <= text.len()
                && wildcard(head, &text[..head.len()])
                && (head.len()..=text.len()).any(|i| wildcard(rest, &text[i..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(files: &[(&str, &str)]) -> (tempdir::Dir, Module) {
        let dir = tempdir::Dir::new();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let m = Module::load(dir.path()).unwrap();
        (dir, m)
    }

    // A throwaway directory without a tempfile dependency: the crate stays tiny.
    mod tempdir {
        use std::path::{Path, PathBuf};
        use std::sync::atomic::{AtomicUsize, Ordering};

        static N: AtomicUsize = AtomicUsize::new(0);

        pub(super) struct Dir(PathBuf);

        impl Dir {
            pub(super) fn new() -> Self {
                let n = N.fetch_add(1, Ordering::SeqCst);
                let p = std::env::temp_dir()
                    .join(format!("live-ci-contract-{}-{n}", std::process::id()));
                std::fs::create_dir_all(&p).unwrap();
                Dir(p)
            }
            pub(super) fn path(&self) -> &Path {
                &self.0
            }
        }

        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn keys_follow_locals_merges_conditionals_and_fors() {
        let (_d, m) = module(&[(
            "main.tf",
            r#"
locals {
  base  = { A = "1", "B-C" = var.x }
  extra = var.on ? { D = "1" } : {}
  env   = merge(local.base, local.extra, { E = local.base.A })
  by    = { for k, _ in var.kinds : k => merge(local.env, { F = k }) }
}
resource "aws_lambda_function" "f" {
  environment {
    variables = local.by[each.key]
  }
}
"#,
        )]);
        let block = m.block("resource", &["aws_lambda_function", "f"]).unwrap();
        let keys = m
            .object_keys(m.attr(block, &["environment", "variables"]).unwrap())
            .unwrap();
        let want: BTreeSet<String> = ["A", "B-C", "D", "E", "F"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(keys, want);
    }

    #[test]
    fn unresolvable_keys_name_the_file_and_expression() {
        let (_d, m) = module(&[("env.tf", "locals {\n  env = var.env\n}\n")]);
        let err = m
            .object_keys(m.local("env").unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("env.tf") && err.contains("var.env"), "{err}");
        let err = m.local("nope").unwrap_err().to_string();
        assert!(err.contains("local.nope"), "{err}");
    }

    #[test]
    fn policy_actions_include_sources_and_dynamic_statements_but_not_denies() {
        let (_d, m) = module(&[(
            "iam.tf",
            r#"
data "aws_iam_policy_document" "base" {
  statement {
    actions   = ["logs:PutLogEvents"]
    resources = ["*"]
  }
}
data "aws_iam_policy_document" "f" {
  source_policy_documents = concat([], var.x ? [] : [data.aws_iam_policy_document.base.json])
  statement {
    actions = ["ssm:GetParameter", "rds-data:*"]
  }
  statement {
    effect  = "Deny"
    actions = ["s3:DeleteObject"]
  }
  dynamic "statement" {
    for_each = [1]
    content {
      actions = ["kms:Decrypt"]
    }
  }
}
"#,
        )]);
        let actions = m.policy_actions("f").unwrap();
        assert!(allows(&actions, "logs:PutLogEvents"));
        assert!(allows(&actions, "SSM:GetParameter"));
        assert!(allows(&actions, "rds-data:ExecuteStatement"));
        assert!(allows(&actions, "kms:Decrypt"));
        assert!(!allows(&actions, "s3:DeleteObject"));
        assert!(!allows(&actions, "ssm:PutParameter"));
    }

    #[test]
    fn wildcards_match_like_iam() {
        let set = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert!(allows(&set(&["states:Send*"]), "states:SendTaskSuccess"));
        assert!(allows(&set(&["*"]), "ecs:RunTask"));
        assert!(allows(&set(&["ecs:?unTask"]), "ecs:RunTask"));
        assert!(!allows(&set(&["states:Send*"]), "states:StartExecution"));
        assert!(!allows(&set(&["ecs:RunTas"]), "ecs:RunTask"));
    }

    #[test]
    fn templatefile_vars_are_the_second_argument_keys() {
        let (_d, m) = module(&[(
            "sm.tf",
            r#"
resource "aws_sfn_state_machine" "s" {
  definition = templatefile("${path.module}/x.json", { a = 1, b = var.b })
}
"#,
        )]);
        let block = m
            .block("resource", &["aws_sfn_state_machine", "s"])
            .unwrap();
        let (template, vars) = m
            .templatefile_vars(m.attr(block, &["definition"]).unwrap())
            .unwrap();
        assert!(template.contains("x.json"), "{template}");
        assert_eq!(vars.into_iter().collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    fn docs_tables_mark_required_hide_sensitive_and_escape_pipes() {
        let (_d, m) = module(&[(
            "variables.tf",
            r#"
variable "pattern" {
  description = "a|b"
  type        = string
  default     = "x|y"
}
variable "repo" {
  description = "the repository"
  type        = object({
    a = optional(list(string), [])
    b = number
  })
}
variable "token" {
  description = "secret"
  type        = string
  default     = null
  sensitive   = true
}
output "url" {
  description = "where"
  value       = 1
}
"#,
        )]);
        let tables = docs_tables(&m);
        assert!(
            tables.contains(r#"| `pattern` | a\|b | `string` | `"x\|y"` | no |"#),
            "{tables}"
        );
        assert!(
            tables.contains(
                "| `repo` | the repository | `object({ a = optional(list(string), []), b = number })` | n/a | yes |"
            ),
            "{tables}"
        );
        assert!(
            tables.contains("| `token` | secret | `string` | (sensitive) | no |"),
            "{tables}"
        );
        assert!(tables.contains("| `url` | where |"), "{tables}");
    }

    #[test]
    fn bad_hcl_names_the_file() {
        let dir = tempdir::Dir::new();
        std::fs::write(
            dir.path().join("broken.tf"),
            "resource \"x\" {\n  a = \n}\n",
        )
        .unwrap();
        let err = Module::load(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("broken.tf") && err.contains("not valid HCL"),
            "{err}"
        );
    }
}
