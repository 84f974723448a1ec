//! Terragrunt's functions as discovery evaluates them: the path functions that
//! depend on the unit (`get_terragrunt_dir`, `find_in_parent_folders`...), the
//! functions that read files (recorded as the unit's reads), the ones that can
//! only be known at run time (`get_env`, `run_cmd`: unknown, never guessed),
//! and a handful of pure terraform functions that path expressions use.

use hcl::{Expression, FuncCall, Value};

use super::eval::{FileEval, IncludeCtx, Scope};
use super::value::V;
use crate::error::EngineError;
use live_ci_core::path::RepoPath;

/// How discovery spells absolute paths inside evaluated strings: the repository
/// root mapped to a marker, so `"${get_repo_root()}/modules//vpc"` keeps its
/// `//` subdirectory separator and a hard-coded absolute path outside the
/// repository is recognised as such.
pub(crate) const ROOT: &str = "/__repo__";

/// The absolute spelling of a repository path.
pub(crate) fn abs(p: &RepoPath) -> String {
    if p.is_root() {
        ROOT.to_string()
    } else {
        format!("{ROOT}/{}", p.as_str())
    }
}

/// Resolves an evaluated path string against `base` (a directory).
pub(crate) fn resolve(base: &RepoPath, s: &str) -> Result<RepoPath, EngineError> {
    if let Some(rest) = s.strip_prefix(ROOT)
        && (rest.is_empty() || rest.starts_with('/'))
    {
        return Ok(RepoPath::new(rest.trim_start_matches('/'))?);
    }
    if s.starts_with('/') {
        return Err(EngineError::Core(live_ci_core::CoreError::InvalidPath {
            path: s.to_string(),
            reason: "absolute path outside the repository".into(),
        }));
    }
    Ok(base.join(s)?)
}

/// `to` relative to `from` (both directories), `.` when equal.
fn relative(from: &RepoPath, to: &RepoPath) -> String {
    let f: Vec<&str> = from.as_str().split('/').filter(|s| !s.is_empty()).collect();
    let t: Vec<&str> = to.as_str().split('/').filter(|s| !s.is_empty()).collect();
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = vec![".."; f.len() - common];
    parts.extend(&t[common..]);
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}

const READ_FUNCTIONS: &[&str] = &[
    "read_terragrunt_config",
    "file",
    "templatefile",
    "read_tfvars_file",
    "sops_decrypt_file",
    "mark_as_read",
    "mark_glob_as_read",
];

/// True for the functions whose argument is a file the unit depends on.
pub(crate) fn is_read_function(name: &str) -> bool {
    READ_FUNCTIONS.contains(&name)
}

/// Functions whose value exists only when terragrunt runs.
const RUNTIME_FUNCTIONS: &[&str] = &[
    "get_env",
    "run_cmd",
    "get_aws_account_id",
    "get_aws_account_alias",
    "get_aws_caller_identity_arn",
    "get_aws_caller_identity_user_id",
    "get_platform",
    "get_terraform_command",
    "get_terraform_cli_args",
    "get_working_dir",
    "get_terragrunt_source_cli_flag",
    "get_default_retryable_errors",
    "get_terraform_commands_that_need_vars",
    "get_terraform_commands_that_need_input",
    "get_terraform_commands_that_need_locking",
    "get_terraform_commands_that_need_parallelism",
    "local_exec",
    "timestamp",
    "uuid",
];

impl FileEval<'_> {
    pub(crate) fn call(&mut self, f: &FuncCall, scope: &Scope) -> V {
        let name = f.name.name.as_str();
        if !f.name.namespace.is_empty() {
            return V::unknown(format!(
                "provider function {}::{name}() is not evaluated by discovery",
                f.name
                    .namespace
                    .iter()
                    .map(|i| i.as_str())
                    .collect::<Vec<_>>()
                    .join("::")
            ));
        }
        if f.expand_final {
            return V::unknown(format!(
                "{name}(...) with expanded arguments is not evaluated by discovery"
            ));
        }
        match name {
            "try" => return self.try_call(&f.args, scope),
            "can" => {
                return match f.args.first().map(|a| self.eval(a, scope)) {
                    Some(v) => match v.first_unknown() {
                        None => V::Bool(true),
                        Some(u) if u.fails => V::Bool(false),
                        Some(u) => V::Unknown(u.clone()),
                    },
                    None => V::failing("can() needs an argument"),
                };
            }
            _ => {}
        }
        let args: Vec<V> = f.args.iter().map(|a| self.eval(a, scope)).collect();
        if RUNTIME_FUNCTIONS.contains(&name) {
            let shown = show_args(&args);
            return V::unknown(format!("{name}({shown}) is known only at run time"));
        }
        match name {
            "get_terragrunt_dir" => V::String(abs(&self.dir)),
            "get_original_terragrunt_dir" => {
                self.sink.used_original = true;
                V::String(abs(&self.original_dir))
            }
            "get_repo_root" => V::String(abs(&RepoPath::root())),
            "get_path_from_repo_root" => V::String(relative(&RepoPath::root(), &self.dir)),
            "get_path_to_repo_root" => V::String(relative(&self.dir, &RepoPath::root())),
            "get_parent_terragrunt_dir" => match self.selected_include(&args) {
                Ok(Some(file)) => V::String(abs(&file.parent().unwrap_or_else(RepoPath::root))),
                Ok(None) => V::String(abs(&self.dir)),
                Err(v) => v,
            },
            "path_relative_to_include" => match self.selected_include(&args) {
                Ok(Some(file)) => V::String(relative(
                    &file.parent().unwrap_or_else(RepoPath::root),
                    &self.dir,
                )),
                Ok(None) => V::String(".".into()),
                Err(v) => v,
            },
            "path_relative_from_include" => match self.selected_include(&args) {
                Ok(Some(file)) => V::String(relative(
                    &self.dir,
                    &file.parent().unwrap_or_else(RepoPath::root),
                )),
                Ok(None) => V::String(".".into()),
                Err(v) => v,
            },
            "find_in_parent_folders" => self.find_in_parent_folders(&args),
            "read_terragrunt_config" => self.read_terragrunt_config(&args),
            "mark_as_read" => self.mark_as_read(&args),
            "mark_glob_as_read" => self.mark_glob_as_read(&args),
            "file" | "templatefile" | "read_tfvars_file" | "sops_decrypt_file" => {
                self.read_file(name, &args)
            }
            "fileexists" => match self.path_arg(name, &args) {
                Ok(p) => V::Bool(self.shared.files.contains(&p)),
                Err(v) => v,
            },
            _ => pure(name, args),
        }
    }

    /// `try(a, b, ...)`: the first argument terragrunt could compute. An argument
    /// that is merely unknown here might succeed at run time, so it stops the search.
    fn try_call(&mut self, args: &[Expression], scope: &Scope) -> V {
        let mut last = V::failing("try() found no argument without errors");
        for a in args {
            let v = self.eval(a, scope);
            match v.first_unknown() {
                None => return v,
                Some(u) if u.fails => last = V::Unknown(u.clone()),
                Some(_) => return v,
            }
        }
        last
    }

    /// The include a `get_parent_terragrunt_dir(name?)` style call refers to:
    /// the included file itself when evaluating one, else the named (or only)
    /// include of the unit, `None` without includes.
    fn selected_include(&mut self, args: &[V]) -> Result<Option<RepoPath>, V> {
        match &self.include_ctx {
            IncludeCtx::Included(file) => Ok(Some(file.clone())),
            IncludeCtx::Child(list) => {
                if let Some(arg) = args.first() {
                    let name = arg.as_string().map_err(V::Unknown)?;
                    match list.iter().find(|(n, _)| *n == name) {
                        Some((_, f)) => Ok(Some(f.clone())),
                        None => Err(V::failing(format!("no include block named {name:?}"))),
                    }
                } else {
                    match list.as_slice() {
                        [] => Ok(None),
                        [(_, f)] => Ok(Some(f.clone())),
                        _ => Err(V::failing(
                            "several include blocks: name the one meant, e.g. path_relative_to_include(\"root\")",
                        )),
                    }
                }
            }
        }
    }

    /// Terragrunt starts in the parent of the config's directory and climbs; the
    /// optional second argument is returned when nothing is found.
    fn find_in_parent_folders(&mut self, args: &[V]) -> V {
        let name = match args.first() {
            None => "terragrunt.hcl".to_string(),
            Some(v) => match v.as_string() {
                Ok(s) if s.is_empty() => "terragrunt.hcl".to_string(),
                Ok(s) => s,
                Err(u) => return V::Unknown(u),
            },
        };
        let mut dir = self.dir.parent();
        while let Some(d) = dir {
            if let Ok(candidate) = d.join(&name)
                && (self.shared.files.contains(&candidate) || self.shared.dirs.contains(&candidate))
            {
                return V::String(abs(&candidate));
            }
            dir = d.parent();
        }
        if let Some(fallback) = args.get(1) {
            return fallback.clone();
        }
        let message = format!(
            "{}: find_in_parent_folders({name:?}): no {name:?} in any parent folder of {:?}",
            self.field_or_file(),
            self.dir.display()
        );
        self.error(EngineError::Config {
            file: self.file.clone(),
            message,
        })
    }

    /// The first argument as a repository path, resolved against the unit's
    /// directory; unknowns become unresolved paths, bad paths errors.
    fn path_arg(&mut self, function: &str, args: &[V]) -> Result<RepoPath, V> {
        let raw = match args.first() {
            None => return Err(V::failing(format!("{function}() needs a path"))),
            Some(v) => v.as_string(),
        };
        match raw {
            Ok(s) => match resolve(&self.dir, &s) {
                Ok(p) => Ok(p),
                Err(e) => Err(self.path_error(e)),
            },
            Err(mut u) => {
                u.reason =
                    format!("the path given to {function}() is unknown: {}", u.reason).into();
                Err(V::Unknown(self.unresolved(u)))
            }
        }
    }

    fn missing(&mut self, function: &str, missing: RepoPath) -> V {
        self.error(EngineError::MissingFile {
            file: self.file.clone(),
            function: function.to_string(),
            missing,
        })
    }

    fn read_file(&mut self, function: &str, args: &[V]) -> V {
        let path = match self.path_arg(function, args) {
            Ok(p) => p,
            Err(v) => return v,
        };
        if !self.shared.files.contains(&path) {
            return self.missing(function, path);
        }
        self.sink.reads.insert(path.clone());
        match function {
            "file" => match self.shared.text(&path) {
                Ok(text) => V::String(text.to_string()),
                Err(e) => self.error(e),
            },
            "read_tfvars_file" => match self.shared.text(&path) {
                Ok(text) => tfvars_as_json(&path, &text),
                Err(e) => self.error(e),
            },
            other => V::unknown(format!(
                "{other}({:?}) output is not computed by discovery",
                path.as_str()
            )),
        }
    }

    /// Terragrunt records the path whether or not the file exists (so a later
    /// change creating it selects the unit) and returns the argument unchanged.
    fn mark_as_read(&mut self, args: &[V]) -> V {
        let path = match self.path_arg("mark_as_read", args) {
            Ok(p) => p,
            Err(v) => return v,
        };
        self.sink.reads.insert(path);
        args.first().cloned().unwrap_or(V::Null)
    }

    /// `mark_glob_as_read([--terragrunt-boundary=DIR,] glob)`: every file the
    /// glob (relative to the unit) matches now counts as read; the value is the
    /// list of matches as absolute paths, as terragrunt returns it. A git-range
    /// filter expands the glob again at the range's head, so files added later
    /// count too.
    fn mark_glob_as_read(&mut self, args: &[V]) -> V {
        const F: &str = "mark_glob_as_read";
        const BOUNDARY: &str = "--terragrunt-boundary";
        let mut rest = args;
        if let Some(V::String(first)) = args.first()
            && first.starts_with(BOUNDARY)
        {
            // The boundary only limits terragrunt's walk; discovery never walks
            // outside the repository anyway.
            rest = if first == BOUNDARY {
                args.get(2..).unwrap_or(&[])
            } else {
                &args[1..]
            };
        }
        if rest.len() != 1 {
            return V::failing(format!(
                "{F}() takes one glob (after an optional {BOUNDARY}), found {} arguments",
                rest.len()
            ));
        }
        let pattern = match self.path_arg(F, rest) {
            Ok(p) => p,
            Err(v) => return v,
        };
        let matcher = match globset::GlobBuilder::new(pattern.as_str())
            .literal_separator(true)
            .build()
        {
            Ok(g) => g.compile_matcher(),
            Err(e) => {
                let message = format!(
                    "{}: {F}({:?}): invalid glob: {}",
                    self.field_or_file(),
                    pattern.as_str(),
                    e.kind()
                );
                return self.error(EngineError::Config {
                    file: self.file.clone(),
                    message,
                });
            }
        };
        let mut matches: Vec<&RepoPath> = self
            .shared
            .files
            .iter()
            .filter(|f| matcher.is_match(f.as_str()))
            .collect();
        matches.sort();
        let value = V::List(matches.iter().map(|m| V::String(abs(m))).collect());
        self.sink.reads.extend(matches.into_iter().cloned());
        value
    }

    fn read_terragrunt_config(&mut self, args: &[V]) -> V {
        const F: &str = "read_terragrunt_config";
        let mut path = match self.path_arg(F, args) {
            Ok(p) => p,
            Err(v) => return v,
        };
        // Like terragrunt, a directory means the terragrunt.hcl inside it.
        if self.shared.dirs.contains(&path) || path.is_root() {
            path = path.child("terragrunt.hcl");
        }
        if !self.shared.files.contains(&path) {
            return match args.get(1) {
                Some(default) => default.clone(),
                None => self.missing(F, path),
            };
        }
        if self.stack.contains(&path) || path == self.file {
            let message = format!(
                "{}: read_terragrunt_config({:?}) reads a file that is already being read or included (a cycle)",
                self.field_or_file(),
                path.as_str()
            );
            return self.error(EngineError::Config {
                file: self.file.clone(),
                message,
            });
        }
        if self.stack.len() >= super::bounds::MAX_CHAIN {
            let message = format!(
                "{}: read_terragrunt_config({:?}) would be the {}th file included or read in a chain; at most {} are",
                self.field_or_file(),
                path.as_str(),
                self.stack.len() + 1,
                super::bounds::MAX_CHAIN
            );
            return self.error(EngineError::Config {
                file: self.file.clone(),
                message,
            });
        }
        self.sink.reads.insert(path.clone());
        let outcome = self
            .shared
            .read_config(&path, &self.original_dir, &self.stack);
        self.sink.absorb_ref(&outcome.sink);
        outcome.value.clone()
    }
}

fn show_args(args: &[V]) -> String {
    args.iter()
        .map(|a| match a {
            V::String(s) => format!("{s:?}"),
            V::Number(n) => n.to_string(),
            V::Bool(b) => b.to_string(),
            _ => "…".to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Terragrunt's `read_tfvars_file` returns the variables as a JSON string.
fn tfvars_as_json(path: &RepoPath, text: &str) -> V {
    let value: Result<Value, String> = if path.as_str().ends_with(".json") {
        serde_json::from_str(text).map_err(|e| e.to_string())
    } else {
        hcl::from_str(text).map_err(|e| e.to_string())
    };
    match value.and_then(|v| serde_json::to_string(&v).map_err(|e| e.to_string())) {
        Ok(json) => V::String(json),
        Err(e) => V::failing(format!("read_tfvars_file({:?}): {e}", path.as_str())),
    }
}

/// Pure terraform functions over known values. Anything not listed is unknown,
/// never approximated.
fn pure(name: &str, args: Vec<V>) -> V {
    let mut vals = Vec::with_capacity(args.len());
    for a in &args {
        match a.to_value() {
            Ok(v) => vals.push(v),
            Err(u) => return V::Unknown(u),
        }
    }
    match pure_known(name, &vals) {
        Some(Ok(v)) => V::from_value(v),
        Some(Err(msg)) => V::failing(format!("{name}(): {msg}")),
        None => V::unknown(format!("function {name}() is not evaluated by discovery")),
    }
}

fn s(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        other => Err(format!("expected a string, found {other}")),
    }
}

fn arg(vals: &[Value], i: usize) -> Result<&Value, String> {
    vals.get(i)
        .ok_or_else(|| format!("missing argument {}", i + 1))
}

fn list(v: &Value) -> Result<&Vec<Value>, String> {
    v.as_array()
        .ok_or_else(|| format!("expected a list, found {v}"))
}

/// The pure functions discovery evaluates when every argument is known:
/// strings and paths, lists, then maps and encodings.
fn pure_known(name: &str, vals: &[Value]) -> Option<Result<Value, String>> {
    string_fn(name, vals)
        .or_else(|| list_fn(name, vals))
        .or_else(|| map_fn(name, vals))
}

/// String and path functions.
fn string_fn(name: &str, vals: &[Value]) -> Option<Result<Value, String>> {
    let str1 = |f: fn(&str) -> String| -> Result<Value, String> {
        Ok(Value::String(f(&s(arg(vals, 0)?)?)))
    };
    Some(match name {
        "lower" => str1(|x| x.to_lowercase()),
        "upper" => str1(|x| x.to_uppercase()),
        "trimspace" => str1(|x| x.trim().to_string()),
        "chomp" => str1(|x| x.trim_end_matches(['\n', '\r']).to_string()),
        "basename" => str1(|x| {
            let t = x.trim_end_matches('/');
            t.rsplit('/').next().unwrap_or(t).to_string()
        }),
        "dirname" => str1(|x| match x.trim_end_matches('/').rfind('/') {
            Some(0) => "/".to_string(),
            Some(i) => x[..i].to_string(),
            None => ".".to_string(),
        }),
        "tostring" => str1(|x| x.to_string()),
        "trimprefix" | "trimsuffix" | "trim" => (|| {
            let a = s(arg(vals, 0)?)?;
            let b = s(arg(vals, 1)?)?;
            Ok(Value::String(match name {
                "trimprefix" => a.strip_prefix(b.as_str()).unwrap_or(&a).to_string(),
                "trimsuffix" => a.strip_suffix(b.as_str()).unwrap_or(&a).to_string(),
                _ => a.trim_matches(|c| b.contains(c)).to_string(),
            }))
        })(),
        "startswith" | "endswith" | "strcontains" => (|| {
            let a = s(arg(vals, 0)?)?;
            let b = s(arg(vals, 1)?)?;
            Ok(Value::Bool(match name {
                "startswith" => a.starts_with(&b),
                "endswith" => a.ends_with(&b),
                _ => a.contains(&b),
            }))
        })(),
        "replace" => {
            let from = vals.get(1).and_then(Value::as_str);
            if from.is_some_and(|f| f.len() > 1 && f.starts_with('/') && f.ends_with('/')) {
                return None; // a regular expression: not evaluated
            }
            (|| {
                let a = s(arg(vals, 0)?)?;
                let from = s(arg(vals, 1)?)?;
                let to = s(arg(vals, 2)?)?;
                Ok(Value::String(a.replace(&from, &to)))
            })()
        }
        "split" => (|| {
            let sep = s(arg(vals, 0)?)?;
            let a = s(arg(vals, 1)?)?;
            Ok(Value::Array(
                a.split(sep.as_str())
                    .map(|p| Value::String(p.to_string()))
                    .collect(),
            ))
        })(),
        "join" => (|| {
            let sep = s(arg(vals, 0)?)?;
            let mut parts = Vec::new();
            for l in &vals[1..] {
                for item in list(l)? {
                    parts.push(s(item)?);
                }
            }
            Ok(Value::String(parts.join(&sep)))
        })(),
        "format" => format_fn(vals),
        "abspath" => (|| {
            let p = s(arg(vals, 0)?)?;
            if p.starts_with('/') {
                Ok(Value::String(p))
            } else {
                Err("a relative path depends on the working directory".into())
            }
        })(),
        _ => return None,
    })
}

/// List functions.
fn list_fn(name: &str, vals: &[Value]) -> Option<Result<Value, String>> {
    Some(match name {
        "concat" => (|| {
            let mut out = Vec::new();
            for l in vals {
                out.extend(list(l)?.iter().cloned());
            }
            Ok(Value::Array(out))
        })(),
        "flatten" => (|| {
            fn flat(v: &Value, out: &mut Vec<Value>) {
                match v {
                    Value::Array(items) => items.iter().for_each(|i| flat(i, out)),
                    other => out.push(other.clone()),
                }
            }
            let mut out = Vec::new();
            for item in list(arg(vals, 0)?)? {
                flat(item, &mut out);
            }
            Ok(Value::Array(out))
        })(),
        "compact" => (|| {
            Ok(Value::Array(
                list(arg(vals, 0)?)?
                    .iter()
                    .filter(|v| !matches!(v, Value::Null) && v.as_str() != Some(""))
                    .cloned()
                    .collect(),
            ))
        })(),
        "distinct" | "toset" => (|| {
            let mut out: Vec<Value> = Vec::new();
            for v in list(arg(vals, 0)?)? {
                if !out.contains(v) {
                    out.push(v.clone());
                }
            }
            Ok(Value::Array(out))
        })(),
        "tolist" => (|| Ok(Value::Array(list(arg(vals, 0)?)?.clone())))(),
        "reverse" => (|| {
            let mut l = list(arg(vals, 0)?)?.clone();
            l.reverse();
            Ok(Value::Array(l))
        })(),
        "length" => (|| {
            Ok(Value::from(match arg(vals, 0)? {
                Value::Array(a) => a.len(),
                Value::Object(o) => o.len(),
                Value::String(x) => x.chars().count(),
                other => return Err(format!("no length for {other}")),
            }))
        })(),
        "element" => (|| {
            let l = list(arg(vals, 0)?)?;
            let i = arg(vals, 1)?
                .as_u64()
                .ok_or("index must be a non-negative number")?;
            if l.is_empty() {
                return Err("element() of an empty list".into());
            }
            Ok(l[(i as usize) % l.len()].clone())
        })(),
        "contains" => (|| Ok(Value::Bool(list(arg(vals, 0)?)?.contains(arg(vals, 1)?))))(),
        "coalesce" => vals
            .iter()
            .find(|v| !matches!(v, Value::Null) && v.as_str() != Some(""))
            .cloned()
            .ok_or_else(|| "no non-null, non-empty argument".to_string()),
        _ => return None,
    })
}

/// Map and encoding functions.
fn map_fn(name: &str, vals: &[Value]) -> Option<Result<Value, String>> {
    Some(match name {
        "tomap" => (|| match arg(vals, 0)? {
            v @ Value::Object(_) => Ok(v.clone()),
            other => Err(format!("expected a map, found {other}")),
        })(),
        "keys" | "values" => (|| match arg(vals, 0)? {
            Value::Object(o) => {
                let mut entries: Vec<(&String, &Value)> = o.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                Ok(Value::Array(
                    entries
                        .into_iter()
                        .map(|(k, v)| {
                            if name == "keys" {
                                Value::String(k.clone())
                            } else {
                                v.clone()
                            }
                        })
                        .collect(),
                ))
            }
            other => Err(format!("expected a map, found {other}")),
        })(),
        "merge" => (|| {
            let mut out = hcl::Map::new();
            for v in vals {
                match v {
                    Value::Object(o) => out.extend(o.iter().map(|(k, v)| (k.clone(), v.clone()))),
                    Value::Null => {}
                    other => return Err(format!("expected a map, found {other}")),
                }
            }
            Ok(Value::Object(out))
        })(),
        "lookup" => (|| match arg(vals, 0)? {
            Value::Object(o) => {
                let k = s(arg(vals, 1)?)?;
                match (o.get(&k), vals.get(2)) {
                    (Some(v), _) => Ok(v.clone()),
                    (None, Some(d)) => Ok(d.clone()),
                    (None, None) => Err(format!("no key {k:?}")),
                }
            }
            other => Err(format!("expected a map, found {other}")),
        })(),
        "jsonencode" => (|| {
            serde_json::to_string(arg(vals, 0)?)
                .map(Value::String)
                .map_err(|e| e.to_string())
        })(),
        "jsondecode" => (|| serde_json::from_str(&s(arg(vals, 0)?)?).map_err(|e| e.to_string()))(),
        _ => return None,
    })
}

/// `format` with the verbs paths use: `%s`, `%d`, `%v`, `%%`.
fn format_fn(vals: &[Value]) -> Result<Value, String> {
    let spec = s(arg(vals, 0)?)?;
    let mut out = String::new();
    let mut next = 1;
    let mut chars = spec.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some('s' | 'd' | 'v') => {
                out.push_str(&s(arg(vals, next)?)?);
                next += 1;
            }
            other => return Err(format!("unsupported verb %{}", other.unwrap_or(' '))),
        }
    }
    Ok(Value::String(out))
}
