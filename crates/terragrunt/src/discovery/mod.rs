//! Terragrunt discovery: which directories are units, what each depends on, and
//! which files (included, read, local modules) must redeploy it when they change.
//!
//! Every `terragrunt.hcl` is evaluated as a candidate unit in parallel; the ones
//! other units include turn out to be shared parents and are dropped (with the
//! errors their stand-alone evaluation produced). Shared files are parsed once,
//! and `read_terragrunt_config` results (which terragrunt evaluates in the read
//! file's own directory) are computed once per file, not once per unit.

mod bounds;
mod config;
mod eval;
mod functions;
mod stack;
mod value;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

use hcl::{Body, Expression};
use rayon::prelude::*;

use crate::error::EngineError;
use crate::graph::Graph;
use crate::unit::{Unit, Unresolved};
use live_ci_core::path::RepoPath;
use live_ci_core::port::FileTree;
use live_ci_core::tree::in_hidden_dir;

pub(crate) use stack::STACK_FILE;
pub use stack::{
    GENERATED_DIR, GeneratedFile, GeneratedKind, GeneratedUnit, Generation, Origin, Overlay, Stack,
    VALUES_FILE, in_generated_dir,
};

use config::{ConfigOutcome, Mode, Source};
use value::V;

/// The result of [`discover`]: units sorted by path, shared parent configs, and
/// every problem found (one broken file does not stop the others).
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// Every unit found, sorted by path.
    pub units: Vec<Unit>,
    /// Config files that are only shared parent configs: files some unit
    /// includes, and every `root.hcl`. Sorted.
    pub parents: Vec<RepoPath>,
    /// Every problem found, in discovery order.
    pub errors: Vec<EngineError>,
    /// The same problems by the unit they break (a broken shared file is
    /// listed under every unit that includes or reads it), so a listing can
    /// keep a broken unit and say what is wrong with it.
    pub unit_errors: BTreeMap<RepoPath, Vec<EngineError>>,
    /// Directories holding a `terragrunt.stack.hcl`, sorted by path.
    pub stacks: Vec<Stack>,
    /// What the stacks generate: the units above include the generated ones,
    /// discovered as if `terragrunt stack generate` had run.
    pub generation: Generation,
}

/// How discovery walks the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiscoverOptions {
    /// Whether units in hidden directories (`.name/`) are discovered. True by
    /// default, as in terragrunt; `.git`, `.terraform` and `.terragrunt-cache`
    /// are never walked (see [`live_ci_core::tree::is_skipped_dir`]).
    pub hidden: bool,
}

impl Default for DiscoverOptions {
    fn default() -> Self {
        DiscoverOptions { hidden: true }
    }
}

impl Discovery {
    /// Builds the unit graph; the errors are discovery's followed by the
    /// graph's (dependencies on non-units, cycles).
    pub fn into_graph(self) -> (Graph, Vec<EngineError>) {
        let (graph, graph_errors) = Graph::build(self.units);
        let mut errors = self.errors;
        errors.extend(graph_errors);
        (graph, errors)
    }
}

/// Discovers every unit of `tree`, hidden directories included.
pub fn discover(tree: &dyn FileTree) -> Discovery {
    discover_with(tree, &DiscoverOptions::default())
}

/// Discovers every unit of `tree` as `options` say, the units its stacks
/// generate included.
pub fn discover_with(tree: &dyn FileTree, options: &DiscoverOptions) -> Discovery {
    let files = match tree.files() {
        Ok(f) => f,
        Err(e) => {
            return Discovery {
                errors: vec![e.into()],
                ..Default::default()
            };
        }
    };
    let (mut stacks, generation) = stack::generate(tree, &files);
    stacks.sort_by(|a, b| a.path.cmp(&b.path));
    if generation.is_empty() {
        return discover_files(tree, &files, options, stacks, generation);
    }
    let overlay = Overlay::new(tree, &generation);
    match overlay.files() {
        Ok(all) => discover_files(&overlay, &all, options, stacks, generation.clone()),
        Err(e) => Discovery {
            errors: vec![e.into()],
            stacks,
            ..Default::default()
        },
    }
}

/// What the stacks of `tree` generate, without discovering units: for
/// writing the generated directories into a checkout. Stacks live-ci cannot
/// generate are returned with their errors and generate nothing.
pub fn generate_stacks(tree: &dyn FileTree) -> Result<(Vec<Stack>, Generation), EngineError> {
    let files = tree.files()?;
    Ok(stack::generate(tree, &files))
}

/// Discovery over `files`, the listing of `tree` (generated files included).
fn discover_files(
    tree: &dyn FileTree,
    files: &[RepoPath],
    options: &DiscoverOptions,
    stacks: Vec<Stack>,
    generation: Generation,
) -> Discovery {
    let shared = Shared::new(tree, files);
    let candidates = candidates(files, options, &generation);
    let outcomes: Vec<(RepoPath, ConfigOutcome)> = candidates
        .par_iter()
        .map(|file| {
            let dir = file.parent().unwrap_or_else(RepoPath::root);
            let out = config::evaluate(&shared, file, &dir, &dir, Mode::Unit, &[], false);
            (dir, out)
        })
        .collect();

    let included: BTreeSet<RepoPath> = outcomes
        .iter()
        .flat_map(|(_, o)| o.included.iter().cloned())
        .collect();
    let mut parents: BTreeSet<RepoPath> = included.clone();
    parents.extend(
        files
            .iter()
            .filter(|f| f.file_name() == "root.hcl")
            .cloned(),
    );

    let mut units = Vec::new();
    let mut errors = Vec::new();
    let mut unit_errors = BTreeMap::new();
    for (dir, out) in outcomes {
        let config_file = dir.child("terragrunt.hcl");
        if included.contains(&config_file) {
            continue;
        }
        let mut unit = to_unit(dir.clone(), &config_file, &out);
        if let Some(origin) = generation.units.get(&dir) {
            // Generated files are in no diff: the unit changes when its stack
            // file or a source copied into it changes.
            unit.reads.extend(origin.stack_file.iter().cloned());
            unit.module_sources.extend(origin.sources.iter().cloned());
        }
        units.push(unit);
        if !out.sink.errors.is_empty() {
            let mut own = out.sink.errors.clone();
            let mut seen = HashSet::new();
            own.retain(|e| seen.insert(e.to_string()));
            unit_errors.insert(dir, own);
        }
        errors.extend(out.sink.errors);
    }
    units.sort_by(|a, b| a.path.cmp(&b.path));
    // Many units include the same broken parent: report each problem once.
    let mut seen = HashSet::new();
    errors.retain(|e| seen.insert(e.to_string()));
    errors.sort_by_cached_key(ToString::to_string);
    Discovery {
        units,
        parents: parents.into_iter().collect(),
        errors,
        unit_errors,
        stacks,
        generation,
    }
}

/// The `terragrunt.hcl` files discovery evaluates as units: visible ones
/// (or generated ones) that are not a stack block's template.
fn candidates<'a>(
    files: &'a [RepoPath],
    options: &DiscoverOptions,
    generation: &Generation,
) -> Vec<&'a RepoPath> {
    // `--no-hidden` only stops units being found there: a unit may still read
    // or include a file under a hidden directory, as in terragrunt. Generated
    // units live under `.terragrunt-stack` and are found regardless: hiding
    // them would hide the stack.
    let visible = |f: &&RepoPath| {
        options.hidden
            || !in_hidden_dir(f)
            || f.parent()
                .is_some_and(|d| generation.units.contains_key(&d))
    };
    // A block's source directory is a template terragrunt copies; evaluated
    // in place its `values.*` do not exist, and it deploys nothing there.
    let template = |f: &&RepoPath| {
        f.parent()
            .is_some_and(|d| generation.templates.contains(&d))
    };
    files
        .iter()
        .filter(|f| f.file_name() == "terragrunt.hcl")
        .filter(visible)
        .filter(|f| !template(f))
        .collect()
}

fn to_unit(dir: RepoPath, config_file: &RepoPath, out: &ConfigOutcome) -> Unit {
    let mut unit = Unit::new(dir);
    unit.dependencies = out
        .dependency_dirs()
        .chain(out.sink.read_deps.iter())
        .cloned()
        .collect();
    unit.reads = out
        .sink
        .reads
        .iter()
        .filter(|r| *r != config_file)
        .cloned()
        .collect();
    if let Some(Source::Local(m)) = &out.source {
        unit.module_sources.insert(m.clone());
    }
    let mut unresolved = out.sink.unresolved.clone();
    unresolved.sort();
    unresolved.dedup();
    unit.unresolved = unresolved;
    unit
}

/// What evaluations collect along the way.
#[derive(Debug, Default, Clone)]
pub(crate) struct Sink {
    pub reads: BTreeSet<RepoPath>,
    pub unresolved: Vec<Unresolved>,
    pub errors: Vec<EngineError>,
    /// Dependencies declared by configs read through `read_terragrunt_config`
    /// (terragrunt adds them to the reading unit's run graph).
    pub read_deps: BTreeSet<RepoPath>,
    /// Whether `get_original_terragrunt_dir()` was called, which makes a read
    /// config's value depend on the reading unit.
    pub used_original: bool,
}

impl Sink {
    pub(crate) fn absorb(&mut self, other: Sink) {
        self.reads.extend(other.reads);
        self.unresolved.extend(other.unresolved);
        self.errors.extend(other.errors);
        self.read_deps.extend(other.read_deps);
        self.used_original |= other.used_original;
    }

    pub(crate) fn absorb_ref(&mut self, other: &Sink) {
        self.reads.extend(other.reads.iter().cloned());
        self.unresolved.extend(other.unresolved.iter().cloned());
        self.errors.extend(other.errors.iter().cloned());
        self.read_deps.extend(other.read_deps.iter().cloned());
        self.used_original |= other.used_original;
    }
}

/// A parsed config with its locals pulled out.
#[derive(Debug)]
pub(crate) struct ParsedFile {
    pub body: Body,
    pub locals: Vec<(String, Expression)>,
}

/// The result of `read_terragrunt_config` for one file.
#[derive(Debug)]
pub(crate) struct ReadOutcome {
    pub value: V,
    pub sink: Sink,
}

type ParseCell = Arc<OnceLock<Result<Arc<ParsedFile>, EngineError>>>;
type TextCell = Arc<OnceLock<Result<Arc<str>, EngineError>>>;
/// (read file, reading unit when the value depends on it).
type ReadKey = (RepoPath, Option<RepoPath>);

/// State shared by all units' evaluations: the file listing and the caches.
pub(crate) struct Shared<'t> {
    tree: &'t dyn FileTree,
    pub files: HashSet<RepoPath>,
    pub dirs: HashSet<RepoPath>,
    parsed: Mutex<HashMap<RepoPath, ParseCell>>,
    texts: Mutex<HashMap<RepoPath, TextCell>>,
    /// Keyed by (file, reading unit) only when the value depends on the unit.
    reads: Mutex<HashMap<ReadKey, Arc<ReadOutcome>>>,
}

impl std::fmt::Debug for Shared<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("files", &self.files.len())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic elsewhere cannot leave these caches half-written: entries are
    // inserted whole, so a poisoned lock is still consistent.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<'t> Shared<'t> {
    fn new(tree: &'t dyn FileTree, files: &[RepoPath]) -> Self {
        let mut dirs = HashSet::new();
        for f in files {
            let mut d = f.parent();
            while let Some(dir) = d {
                if !dirs.insert(dir.clone()) {
                    break;
                }
                d = dir.parent();
            }
        }
        Shared {
            tree,
            files: files.iter().cloned().collect(),
            dirs,
            parsed: Mutex::new(HashMap::new()),
            texts: Mutex::new(HashMap::new()),
            reads: Mutex::new(HashMap::new()),
        }
    }

    /// A unit's own config: parsed without caching (nobody else needs it unless
    /// it is also included or read, and then the cache already holds it), so
    /// 10,000 unit bodies are not all kept alive at once.
    pub(crate) fn parse_unit(&self, path: &RepoPath) -> Result<Arc<ParsedFile>, EngineError> {
        let cached = lock(&self.parsed).get(path).cloned();
        match cached.and_then(|cell| cell.get().cloned()) {
            Some(hit) => hit,
            None => parse_file(self.tree, path).map(Arc::new),
        }
    }

    /// Parses a config once, however many units include or read it.
    pub(crate) fn parse(&self, path: &RepoPath) -> Result<Arc<ParsedFile>, EngineError> {
        let cell = lock(&self.parsed).entry(path.clone()).or_default().clone();
        cell.get_or_init(|| parse_file(self.tree, path).map(Arc::new))
            .clone()
    }

    /// The text of a file read by `file()` and friends, read once.
    pub(crate) fn text(&self, path: &RepoPath) -> Result<Arc<str>, EngineError> {
        let cell = lock(&self.texts).entry(path.clone()).or_default().clone();
        cell.get_or_init(|| {
            self.tree
                .read(path)
                .map(Arc::from)
                .map_err(EngineError::from)
        })
        .clone()
    }

    /// `read_terragrunt_config(path)` for the unit in `original_dir`, computed
    /// once per file unless it calls `get_original_terragrunt_dir()`.
    pub(crate) fn read_config(
        &self,
        path: &RepoPath,
        original_dir: &RepoPath,
        stack: &[RepoPath],
    ) -> Arc<ReadOutcome> {
        {
            let cache = lock(&self.reads);
            if let Some(hit) = cache
                .get(&(path.clone(), None))
                .or_else(|| cache.get(&(path.clone(), Some(original_dir.clone()))))
            {
                return hit.clone();
            }
        }
        let dir = path.parent().unwrap_or_else(RepoPath::root);
        let out = config::evaluate(self, path, &dir, original_dir, Mode::Read, stack, true);
        let mut sink = out.sink;
        // The read config's dependency blocks join the reader's graph, resolved
        // relative to the read file, as terragrunt resolves them.
        let own_deps: Vec<RepoPath> = out.deps.values().flatten().cloned().collect();
        sink.read_deps.extend(own_deps);
        sink.read_deps.extend(out.dep_paths);
        let key = if sink.used_original {
            (path.clone(), Some(original_dir.clone()))
        } else {
            (path.clone(), None)
        };
        let outcome = Arc::new(ReadOutcome {
            value: out.value,
            sink,
        });
        lock(&self.reads).insert(key, outcome.clone());
        outcome
    }
}

/// Parses one HCL file; a syntax error names the file, line and column.
pub(crate) fn parse_hcl(file: &RepoPath, text: &str) -> Result<hcl::Body, EngineError> {
    bounds::check_text(file, text)?;
    hcl::parse(text).map_err(|e| match e {
        hcl::Error::Parse(pe) => EngineError::Syntax {
            file: file.clone(),
            line: pe.location().line(),
            col: pe.location().column(),
            message: pe.message().to_string(),
        },
        other => EngineError::Config {
            file: file.clone(),
            message: other.to_string(),
        },
    })
}

fn parse_file(tree: &dyn FileTree, path: &RepoPath) -> Result<ParsedFile, EngineError> {
    let text = tree.read(path)?;
    let body = parse_hcl(path, &text)?;
    // Locals move out of the body (no copy): the body is scanned without them.
    let mut locals = Vec::new();
    let mut rest = Vec::new();
    for s in body.into_inner() {
        match s {
            hcl::Structure::Block(b) if b.identifier.as_str() == "locals" => {
                for inner in b.body.into_inner() {
                    if let hcl::Structure::Attribute(a) = inner {
                        locals.push((a.key.as_str().to_string(), a.expr));
                    }
                }
            }
            other => rest.push(other),
        }
    }
    let body = Body(rest);
    Ok(ParsedFile { body, locals })
}

/// Whether a raw template may call a read function: a textual pre-check that
/// saves parsing the templates of attributes that cannot read anything.
pub(crate) fn functions_in_text(raw: &str) -> bool {
    raw.contains("${")
        && [
            "read_terragrunt_config(",
            "file(",
            "read_tfvars_file(",
            "sops_decrypt_file(",
            "mark_as_read(",
            "mark_glob_as_read(",
        ]
        .iter()
        .any(|f| raw.contains(f))
}

#[cfg(test)]
mod tests {
    use super::eval::{FileEval, IncludeCtx};
    use super::functions::{ROOT, abs, resolve};
    use super::*;
    use live_ci_core::tree::MemTree;

    /// Evaluates local `x` of `src`, written as `dir/terragrunt.hcl`.
    fn local_x(extra: &[(&str, &str)], dir: &str, src: &str) -> (V, Sink) {
        let mut tree = MemTree::new();
        let file = format!("{dir}/terragrunt.hcl");
        tree.insert(&file, src).unwrap();
        for (p, c) in extra {
            tree.insert(p, c).unwrap();
        }
        let files = tree.files().unwrap();
        let shared = Shared::new(&tree, &files);
        let file = RepoPath::new(&file).unwrap();
        let dir = RepoPath::new(dir).unwrap();
        let parsed = shared.parse(&file).unwrap();
        let mut fe = FileEval::new(
            &shared,
            file.clone(),
            parsed.clone(),
            dir.clone(),
            dir,
            IncludeCtx::Child(Vec::new()),
            vec![file],
        );
        fe.locals_ready = true;
        let v = match fe.all_locals() {
            V::Object(mut m) => m.remove("x").unwrap(),
            other => panic!("{other:?}"),
        };
        (v, fe.sink)
    }

    fn string(src: &str) -> String {
        match local_x(&[], "a/b", src).0 {
            V::String(s) => s,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn absolute_spelling_round_trips_and_guards_the_root() {
        let p = RepoPath::new("a/b").unwrap();
        assert_eq!(abs(&p), format!("{ROOT}/a/b"));
        assert_eq!(resolve(&RepoPath::root(), &abs(&p)).unwrap(), p);
        assert_eq!(resolve(&p, "../c").unwrap().as_str(), "a/c");
        assert_eq!(
            resolve(&p, &format!("{ROOT}/a/../x")).unwrap().as_str(),
            "x"
        );
        assert!(resolve(&p, &format!("{ROOT}/..")).is_err());
        assert!(resolve(&p, "/etc/passwd").is_err());
        assert!(resolve(&p, &format!("{ROOT}x/y")).is_err());
    }

    #[test]
    fn path_functions_in_templates() {
        assert_eq!(
            string("locals {\n  x = \"${get_terragrunt_dir()}/../c\"\n}\n"),
            format!("{ROOT}/a/b/../c")
        );
        assert_eq!(
            string(
                "locals {\n  x = \"${get_path_to_repo_root()}|${get_path_from_repo_root()}\"\n}\n"
            ),
            "../..|a/b"
        );
        assert_eq!(
            string(
                "locals {\n  x = \"${dirname(get_terragrunt_dir())}-${basename(get_terragrunt_dir())}\"\n}\n"
            ),
            format!("{ROOT}/a-b")
        );
    }

    #[test]
    fn templates_conditionals_operators_and_for() {
        assert_eq!(
            string(
                "locals {\n  n = 2\n  x = \"%{ if local.n > 1 }many%{ else }one%{ endif }-${local.n * 3}\"\n}\n"
            ),
            "many-6"
        );
        assert_eq!(
            string(
                "locals {\n  x = join(\",\", [for s in [\"b\", \"a\"] : upper(s) if s != \"c\"])\n}\n"
            ),
            "B,A"
        );
        assert_eq!(
            string(
                "locals {\n  m = { k = \"v\" }\n  x = true ? lookup(local.m, \"k\", \"d\") : \"no\"\n}\n"
            ),
            "v"
        );
        assert_eq!(
            string("locals {\n  x = format(\"%s-%d%%\", \"a\", 5)\n}\n"),
            "a-5%"
        );
        assert_eq!(
            string("locals {\n  x = replace(trimprefix(\"xx/a/b\", \"xx/\"), \"/\", \"_\")\n}\n"),
            "a_b"
        );
    }

    #[test]
    fn try_falls_back_only_on_real_errors() {
        assert_eq!(
            string("locals {\n  m = {}\n  x = try(local.m.missing, \"fallback\")\n}\n"),
            "fallback"
        );
        // get_env might succeed at run time: try() cannot pick the fallback.
        let (v, _) = local_x(
            &[],
            "a",
            "locals {\n  x = try(get_env(\"X\"), \"fallback\")\n}\n",
        );
        match v {
            V::Unknown(u) => assert_eq!(&*u.reason, "get_env(\"X\") is known only at run time"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            local_x(&[], "a", "locals {\n  m = {}\n  x = can(local.m.k)\n}\n").0,
            V::Bool(false)
        );
    }

    #[test]
    fn unknown_leaves_do_not_poison_neighbours() {
        let (v, _) = local_x(
            &[(
                "env.hcl",
                "locals {\n  region = \"eu\"\n  secret = get_env(\"S\")\n}\n",
            )],
            "a",
            "locals {\n  e = read_terragrunt_config(\"../env.hcl\")\n  x = \"${local.e.locals.region}\"\n}\n",
        );
        assert_eq!(v, V::String("eu".into()));
    }

    #[test]
    fn self_referencing_locals_are_unknown_not_a_hang() {
        let (v, _) = local_x(&[], "a", "locals {\n  x = local.y\n  y = local.x\n}\n");
        match v {
            V::Unknown(u) => assert_eq!(&*u.reason, "local.x refers to itself"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn read_configs_are_evaluated_once_per_file() {
        let mut tree = MemTree::new();
        tree.insert("env.hcl", "locals {\n  e = 1\n}\n").unwrap();
        for i in 0..50 {
            tree.insert(
                &format!("u{i}/terragrunt.hcl"),
                "locals {\n  e = read_terragrunt_config(find_in_parent_folders(\"env.hcl\"))\n}\n",
            )
            .unwrap();
        }
        let files = tree.files().unwrap();
        let shared = Shared::new(&tree, &files);
        let env = RepoPath::new("env.hcl").unwrap();
        let a = shared.read_config(&env, &RepoPath::new("u1").unwrap(), &[]);
        let b = shared.read_config(&env, &RepoPath::new("u2").unwrap(), &[]);
        assert!(Arc::ptr_eq(&a, &b));
    }

    #[test]
    fn get_original_terragrunt_dir_makes_reads_per_unit() {
        let mut tree = MemTree::new();
        tree.insert(
            "common.hcl",
            "locals {\n  me = get_original_terragrunt_dir()\n}\n",
        )
        .unwrap();
        let files = tree.files().unwrap();
        let shared = Shared::new(&tree, &files);
        let f = RepoPath::new("common.hcl").unwrap();
        let a = shared.read_config(&f, &RepoPath::new("u1").unwrap(), &[]);
        let b = shared.read_config(&f, &RepoPath::new("u2").unwrap(), &[]);
        assert!(!Arc::ptr_eq(&a, &b));
        let me = |o: &ReadOutcome| match &o.value {
            V::Object(m) => match m.get("locals") {
                Some(V::Object(l)) => l.get("me").cloned(),
                _ => None,
            },
            _ => None,
        };
        assert_eq!(me(&a), Some(V::String(format!("{ROOT}/u1"))));
        assert_eq!(me(&b), Some(V::String(format!("{ROOT}/u2"))));
    }
}
