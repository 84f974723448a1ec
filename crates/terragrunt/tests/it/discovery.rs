//! Discovery against in-memory repositories: every extraction case, include
//! semantics, parent classification, unresolved reporting, errors, and a
//! generated 2,000-unit repository checked unit by unit.

// Helpers outside `#[test]` functions panic on bad fixtures, like the tests.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use live_ci_core::{MemTree, RepoPath};
use live_ci_terragrunt::EngineError;
use live_ci_terragrunt::Unit;
use live_ci_terragrunt::{Discovery, discover};
use proptest::prelude::*;

fn tree(files: &[(&str, &str)]) -> MemTree {
    let mut t = MemTree::new();
    for (p, c) in files {
        t.insert(p, c).unwrap();
    }
    t
}

fn unit<'d>(d: &'d Discovery, path: &str) -> &'d Unit {
    d.units
        .iter()
        .find(|u| u.path.as_str() == path)
        .unwrap_or_else(|| {
            panic!(
                "no unit {path:?} in {:?}",
                d.units.iter().map(|u| u.path.as_str()).collect::<Vec<_>>()
            )
        })
}

fn set(items: &[&str]) -> BTreeSet<RepoPath> {
    items.iter().map(|p| RepoPath::new(p).unwrap()).collect()
}

fn paths(d: &Discovery) -> Vec<&str> {
    d.units.iter().map(|u| u.path.as_str()).collect()
}

fn messages(d: &Discovery) -> Vec<String> {
    d.errors.iter().map(ToString::to_string).collect()
}

const ROOT: &str = r#"
locals {
  acct = read_terragrunt_config(find_in_parent_folders("account.hcl"))
}
remote_state {
  backend = "s3"
  config = {
    key    = "${path_relative_to_include()}/tf.tfstate"
    bucket = "state-${local.acct.locals.id}"
  }
}
"#;

#[test]
fn dependency_blocks_in_every_spelling() {
    let t = tree(&[
        ("root.hcl", ROOT),
        ("prod/account.hcl", "locals {\n  id = \"1\"\n}\n"),
        ("prod/vpc/terragrunt.hcl", ""),
        ("prod/db/terragrunt.hcl", ""),
        ("prod/dns/terragrunt.hcl", ""),
        ("prod/kms/terragrunt.hcl", ""),
        ("prod/iam/terragrunt.hcl", ""),
        ("shared/net/terragrunt.hcl", ""),
        (
            "prod/app/terragrunt.hcl",
            r#"
include "root" {
  path = find_in_parent_folders("root.hcl")
}
locals {
  name    = "db"
  sibling = "${get_terragrunt_dir()}/.."
}
dependency "vpc" {
  config_path = "../vpc"
}
dependency "db" {
  config_path = "${get_terragrunt_dir()}/../${local.name}"
}
dependency "net" {
  config_path = "${get_repo_root()}/shared/net"
}
dependency "dns" {
  config_path = "${local.sibling}/dns/terragrunt.hcl"
}
dependency "off" {
  config_path = "../iam"
  enabled     = false
}
dependencies {
  paths = ["../kms", format("%s/%s", "..", "vpc")]
}
inputs = {
  vpc_id = dependency.vpc.outputs.vpc_id
}
"#,
        ),
    ]);
    let d = discover(&t);
    assert!(d.errors.is_empty(), "{:?}", messages(&d));
    let app = unit(&d, "prod/app");
    assert_eq!(
        app.dependencies,
        set(&["prod/vpc", "prod/db", "shared/net", "prod/dns", "prod/kms"])
    );
    assert_eq!(app.reads, set(&["root.hcl", "prod/account.hcl"]));
    // A dependency output used in inputs is no path: nothing unresolved.
    assert!(app.unresolved.is_empty(), "{:?}", app.unresolved);
    assert_eq!(
        d.parents,
        set(&["root.hcl"]).into_iter().collect::<Vec<_>>()
    );
}

#[test]
fn include_path_spellings_and_parent_functions() {
    let t = tree(&[
        ("terragrunt.hcl", "locals {\n  top = true\n}\n"),
        (
            "_envcommon/app.hcl",
            r#"
dependency "vpc" {
  config_path = "../vpc"
}
locals {
  common = file("${get_parent_terragrunt_dir()}/common.json")
}
terraform {
  source = "${get_parent_terragrunt_dir()}/../modules//app"
}
"#,
        ),
        ("_envcommon/common.json", "{}"),
        ("modules/app/main.tf", ""),
        ("env/common.hcl", "inputs = {}\n"),
        ("env/sub/region.hcl", "inputs = {}\n"),
        ("env/local.hcl", "inputs = {}\n"),
        (
            "env/vpc/terragrunt.hcl",
            "include {\n  path = find_in_parent_folders()\n}\n",
        ),
        (
            "env/app/terragrunt.hcl",
            r#"
include "root" {
  path = find_in_parent_folders()
}
include "app" {
  path = "${get_repo_root()}/_envcommon/app.hcl"
}
include "common" {
  path = "${get_terragrunt_dir()}/../common.hcl"
}
include "plain" {
  path = "../local.hcl"
}
"#,
        ),
    ]);
    let d = discover(&t);
    assert!(d.errors.is_empty(), "{:?}", messages(&d));
    assert_eq!(paths(&d), ["env/app", "env/vpc"]);
    let app = unit(&d, "env/app");
    // The included file's relative config_path is relative to the unit.
    assert_eq!(app.dependencies, set(&["env/vpc"]));
    assert_eq!(
        app.reads,
        set(&[
            "terragrunt.hcl",
            "_envcommon/app.hcl",
            "_envcommon/common.json",
            "env/common.hcl",
            "env/local.hcl"
        ])
    );
    assert_eq!(app.module_sources, set(&["modules"]));
    assert_eq!(
        d.parents,
        vec![
            RepoPath::new("_envcommon/app.hcl").unwrap(),
            RepoPath::new("env/common.hcl").unwrap(),
            RepoPath::new("env/local.hcl").unwrap(),
            RepoPath::new("terragrunt.hcl").unwrap(),
        ]
    );
}

#[test]
fn path_relative_to_include_evaluates_in_the_unit_context() {
    let t = tree(&[
        (
            "root.hcl",
            r#"
locals {
  cfg = file("${get_parent_terragrunt_dir()}/cfg/${path_relative_to_include()}.json")
}
"#,
        ),
        ("cfg/a/b.json", "{}"),
        (
            "a/b/terragrunt.hcl",
            "include \"root\" {\n  path = find_in_parent_folders(\"root.hcl\")\n}\n",
        ),
    ]);
    let d = discover(&t);
    assert!(d.errors.is_empty(), "{:?}", messages(&d));
    assert_eq!(unit(&d, "a/b").reads, set(&["root.hcl", "cfg/a/b.json"]));
}

#[test]
fn every_reading_function_anywhere_in_the_file() {
    let t = tree(&[
        (
            "env.hcl",
            "locals {\n  region = \"eu-west-1\"\n  vars = \"common.tfvars\"\n}\n",
        ),
        ("common.tfvars", "size = 3\n"),
        ("app/policy.json", "{}"),
        ("app/user_data.tpl", "#!/bin/sh\n"),
        ("app/secrets.yaml", "a: b\n"),
        ("app/eu-west-1/extra.json", "{}"),
        ("app/marked.txt", "x"),
        ("app/inputs.txt", "y"),
        (
            "app/terragrunt.hcl",
            r#"
locals {
  env     = read_terragrunt_config(find_in_parent_folders("env.hcl"))
  tfvars  = jsondecode(read_tfvars_file("${get_terragrunt_dir()}/../${local.env.locals.vars}"))
  secrets = yamldecode(sops_decrypt_file("secrets.yaml"))
  extra   = file("${get_terragrunt_dir()}/${local.env.locals.region}/extra.json")
  size    = local.tfvars.size
}
inputs = {
  policy    = file("policy.json")
  user_data = templatefile("user_data.tpl", { size = local.size })
  nested    = [for f in ["inputs.txt"] : file(f)]
}
generate "x" {
  path     = "x.tf"
  contents = "${mark_as_read("marked.txt")}"
}
"#,
        ),
    ]);
    let d = discover(&t);
    assert!(d.errors.is_empty(), "{:?}", messages(&d));
    let app = unit(&d, "app");
    assert_eq!(
        app.reads,
        set(&[
            "env.hcl",
            "common.tfvars",
            "app/secrets.yaml",
            "app/eu-west-1/extra.json",
            "app/policy.json",
            "app/user_data.tpl",
            "app/inputs.txt",
            "app/marked.txt",
        ])
    );
    assert!(app.unresolved.is_empty(), "{:?}", app.unresolved);
}

#[test]
fn reads_are_transitive_and_cycle_safe() {
    let t = tree(&[
        (
            "a.hcl",
            "locals {\n  b = read_terragrunt_config(\"b.hcl\")\n  x = file(\"x.txt\")\n}\n",
        ),
        (
            "b.hcl",
            "locals {\n  a = read_terragrunt_config(\"a.hcl\")\n}\n",
        ),
        ("x.txt", "x"),
        (
            "inc.hcl",
            "locals {\n  a = read_terragrunt_config(\"${get_repo_root()}/a.hcl\")\n}\n",
        ),
        (
            "u/terragrunt.hcl",
            "include {\n  path = \"../inc.hcl\"\n}\n",
        ),
    ]);
    let d = discover(&t);
    let u = unit(&d, "u");
    assert_eq!(u.reads, set(&["inc.hcl", "a.hcl", "b.hcl", "x.txt"]));
    let msgs = messages(&d);
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert!(
        msgs[0].starts_with("b.hcl: locals.a: read_terragrunt_config(\"a.hcl\")"),
        "{msgs:?}"
    );
}

#[test]
fn locals_drive_paths_through_read_configs() {
    let t = tree(&[
        (
            "live/prod/env.hcl",
            "locals {\n  region = \"us-east-1\"\n  tier = \"net\"\n}\n",
        ),
        ("live/prod/us-east-1/net/vpc/terragrunt.hcl", ""),
        (
            "live/prod/us-east-1/app/terragrunt.hcl",
            r#"
locals {
  env  = read_terragrunt_config(find_in_parent_folders("env.hcl"))
  dirs = { for k in ["vpc"] : k => "${local.env.locals.tier}/${k}" }
}
dependency "vpc" {
  config_path = "../../${local.env.locals.region}/${local.dirs["vpc"]}"
}
"#,
        ),
    ]);
    let d = discover(&t);
    assert!(d.errors.is_empty(), "{:?}", messages(&d));
    assert_eq!(
        unit(&d, "live/prod/us-east-1/app").dependencies,
        set(&["live/prod/us-east-1/net/vpc"])
    );
}

#[test]
fn local_sources_only_and_subdirectories() {
    let t = tree(&[
        ("modules/vpc/main.tf", ""),
        ("modules/db/main.tf", ""),
        (
            "a/terragrunt.hcl",
            "terraform {\n  source = \"../modules/vpc\"\n}\n",
        ),
        (
            "b/terragrunt.hcl",
            "terraform {\n  source = \"../modules//db?ref=x\"\n}\n",
        ),
        (
            "c/terragrunt.hcl",
            "terraform {\n  source = \"git::https://github.com/acme/m.git//vpc?ref=v1\"\n}\n",
        ),
        (
            "d/terragrunt.hcl",
            "terraform {\n  source = \"tfr:///terraform-aws-modules/vpc/aws?version=5.0.0\"\n}\n",
        ),
        (
            "e/terragrunt.hcl",
            "terraform {\n  source = \"github.com/acme/modules//vpc\"\n}\n",
        ),
        (
            "f/terragrunt.hcl",
            "terraform {\n  source = \"${get_repo_root()}/modules/db\"\n}\n",
        ),
        (
            "g/terragrunt.hcl",
            "terraform {\n  source = \"../modules/nope\"\n}\n",
        ),
    ]);
    let d = discover(&t);
    assert_eq!(unit(&d, "a").module_sources, set(&["modules/vpc"]));
    assert_eq!(unit(&d, "b").module_sources, set(&["modules"]));
    for remote in ["c", "d", "e"] {
        assert!(unit(&d, remote).module_sources.is_empty(), "{remote}");
    }
    assert_eq!(unit(&d, "f").module_sources, set(&["modules/db"]));
    assert!(unit(&d, "g").module_sources.is_empty());
    assert_eq!(
        messages(&d),
        [
            "g/terragrunt.hcl: terraform.source: local module directory \"modules/nope\" does not exist"
        ]
    );
}

#[test]
fn included_dependencies_count_and_the_child_overrides_by_name() {
    let t = tree(&[
        (
            "common/deps.hcl",
            "dependency \"vpc\" {\n  config_path = \"../vpc\"\n}\ndependency \"kms\" {\n  config_path = \"../kms\"\n}\ndependencies {\n  paths = [\"../iam\"]\n}\n",
        ),
        (
            "common/nomerge.hcl",
            "dependency \"x\" {\n  config_path = \"../x\"\n}\n",
        ),
        ("env/vpc/terragrunt.hcl", ""),
        ("env/vpc2/terragrunt.hcl", ""),
        ("env/kms/terragrunt.hcl", ""),
        ("env/iam/terragrunt.hcl", ""),
        ("env/sg/terragrunt.hcl", ""),
        (
            "env/app/terragrunt.hcl",
            r#"
include "deps" {
  path = "${get_repo_root()}/common/deps.hcl"
}
include "nm" {
  path           = "../../common/nomerge.hcl"
  merge_strategy = "no_merge"
}
dependency "vpc" {
  config_path = "../vpc2"
}
dependencies {
  paths = ["../sg"]
}
"#,
        ),
    ]);
    let d = discover(&t);
    assert!(d.errors.is_empty(), "{:?}", messages(&d));
    assert_eq!(
        unit(&d, "env/app").dependencies,
        set(&["env/vpc2", "env/kms", "env/iam", "env/sg"])
    );
}

#[test]
fn a_read_configs_dependencies_join_the_reader() {
    let t = tree(&[
        (
            "env/deps.hcl",
            "dependency \"vpc\" {\n  config_path = \"./vpc\"\n}\n",
        ),
        ("env/vpc/terragrunt.hcl", ""),
        (
            "env/app/terragrunt.hcl",
            "locals {\n  d = read_terragrunt_config(find_in_parent_folders(\"deps.hcl\"))\n}\ninputs = {\n  id = local.d.dependency.vpc.outputs.id\n}\n",
        ),
    ]);
    let d = discover(&t);
    assert!(d.errors.is_empty(), "{:?}", messages(&d));
    // Resolved relative to the read file, as terragrunt does.
    assert_eq!(unit(&d, "env/app").dependencies, set(&["env/vpc"]));
}

#[test]
fn parents_are_not_units() {
    let t = tree(&[
        (
            "terragrunt.hcl",
            "remote_state {\n  backend = \"local\"\n}\n",
        ),
        ("root.hcl", ""),
        ("sub/root.hcl", ""),
        (
            "a/terragrunt.hcl",
            "include {\n  path = find_in_parent_folders()\n}\n",
        ),
        ("b/terragrunt.hcl", ""),
        ("b/.terragrunt-cache/x/terragrunt.hcl", ""),
        ("b/.terraform/modules/terragrunt.hcl", ""),
        (".git/terragrunt.hcl", ""),
    ]);
    let d = discover(&t);
    assert!(d.errors.is_empty(), "{:?}", messages(&d));
    assert_eq!(paths(&d), ["a", "b"]);
    assert_eq!(
        d.parents,
        vec![
            RepoPath::new("root.hcl").unwrap(),
            RepoPath::new("sub/root.hcl").unwrap(),
            RepoPath::new("terragrunt.hcl").unwrap(),
        ]
    );
}

#[test]
fn a_root_terragrunt_hcl_that_nobody_includes_is_a_unit() {
    let t = tree(&[("terragrunt.hcl", ""), ("a/terragrunt.hcl", "")]);
    let d = discover(&t);
    assert_eq!(paths(&d), ["", "a"]);
}

#[test]
fn find_in_parent_folders_starts_above_the_unit_and_falls_back() {
    let t = tree(&[
        ("x/root.hcl", "locals {\n  which = \"outer\"\n}\n"),
        ("x/outer/terragrunt.hcl", ""),
        ("x/y/root.hcl", "locals {\n  which = \"own\"\n}\n"),
        (
            "x/y/terragrunt.hcl",
            r#"
include "root" {
  path = find_in_parent_folders("root.hcl")
}
locals {
  opt = read_terragrunt_config(find_in_parent_folders("nope.hcl", "missing"), { locals = { which = "default" } })
}
dependency "d" {
  config_path = "../${local.opt.locals.which}"
}
"#,
        ),
    ]);
    let d = discover(&t);
    assert!(d.errors.is_empty(), "{:?}", messages(&d));
    let y = unit(&d, "x/y");
    assert_eq!(y.reads, set(&["x/root.hcl"]));
    assert_eq!(y.dependencies, set(&["x/default"]));
}

#[test]
fn unresolvable_paths_are_reported_naming_the_cause() {
    let t = tree(&[
        ("vpc/terragrunt.hcl", ""),
        (
            "app/terragrunt.hcl",
            r#"
locals {
  env    = get_env("ENV")
  unused = run_cmd("whoami")
}
dependency "vpc" {
  config_path = "../vpc"
}
dependency "a" {
  config_path = "../${local.env}"
}
dependency "b" {
  config_path = run_cmd("echo", "../vpc")
}
dependency "c" {
  config_path = dependency.vpc.outputs.path
}
dependency "d" {
  config_path = "../${sha256("x")}"
}
dependency "e" {
  config_path = "../${local.nope}"
}
inputs = {
  cfg = file("${get_env("CFG_DIR")}/x.json")
}
"#,
        ),
    ]);
    let d = discover(&t);
    assert!(d.errors.is_empty(), "{:?}", messages(&d));
    let app = unit(&d, "app");
    assert_eq!(app.dependencies, set(&["vpc"]));
    let got: Vec<(String, String)> = app
        .unresolved
        .iter()
        .map(|u| {
            assert_eq!(u.file.as_str(), "app/terragrunt.hcl");
            (u.field.clone(), u.reason.clone())
        })
        .collect();
    let want = [
        (
            "dependency.a.config_path",
            "get_env(\"ENV\") is known only at run time",
        ),
        (
            "dependency.b.config_path",
            "run_cmd(\"echo\", \"../vpc\") is known only at run time",
        ),
        (
            "dependency.c.config_path",
            "dependency.vpc.outputs is known only after \"vpc\" is applied",
        ),
        (
            "dependency.d.config_path",
            "function sha256() is not evaluated by discovery",
        ),
        (
            "dependency.e.config_path",
            "local.nope is not defined in app/terragrunt.hcl",
        ),
        (
            "inputs",
            "the path given to file() is unknown: get_env(\"CFG_DIR\") is known only at run time",
        ),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(f, r)| (f.to_string(), r.to_string()))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn syntax_errors_name_file_line_and_column_and_spare_the_rest() {
    let t = tree(&[
        ("ok/terragrunt.hcl", ""),
        (
            "bad/terragrunt.hcl",
            "locals {\n  x = \"a\"\n  y = [1,\n}\n",
        ),
    ]);
    let d = discover(&t);
    assert_eq!(paths(&d), ["bad", "ok"]);
    assert_eq!(d.errors.len(), 1);
    match &d.errors[0] {
        EngineError::Syntax {
            file, line, col, ..
        } => {
            assert_eq!(file.as_str(), "bad/terragrunt.hcl");
            assert_eq!((*line, *col), (4, 1));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        messages(&d)[0].starts_with("bad/terragrunt.hcl:4:1: syntax error: "),
        "{:?}",
        messages(&d)
    );
}

#[test]
fn a_broken_shared_parent_is_reported_once() {
    let mut files = vec![("root.hcl".to_string(), "locals {\n  = 1\n}\n".to_string())];
    for i in 0..20 {
        files.push((
            format!("u{i}/terragrunt.hcl"),
            "include \"root\" {\n  path = find_in_parent_folders(\"root.hcl\")\n}\n".into(),
        ));
    }
    let mut t = MemTree::new();
    for (p, c) in &files {
        t.insert(p, c).unwrap();
    }
    let d = discover(&t);
    assert_eq!(d.units.len(), 20);
    assert_eq!(d.errors.len(), 1, "{:?}", messages(&d));
    assert!(
        messages(&d)[0].starts_with("root.hcl:2:3: syntax error"),
        "{:?}",
        messages(&d)
    );
}

#[test]
fn missing_files_name_both_files() {
    let t = tree(&[
        (
            "app/terragrunt.hcl",
            "include \"root\" {\n  path = \"../root.hcl\"\n}\n",
        ),
        (
            "db/terragrunt.hcl",
            "locals {\n  e = read_terragrunt_config(\"../env.hcl\")\n  f = file(\"data.json\")\n}\n",
        ),
        (
            "web/terragrunt.hcl",
            "include \"root\" {\n  path = find_in_parent_folders(\"root.hcl\")\n}\n",
        ),
    ]);
    let d = discover(&t);
    assert_eq!(paths(&d), ["app", "db", "web"]);
    assert_eq!(
        messages(&d),
        [
            "app/terragrunt.hcl: include: no such file \"root.hcl\"",
            "db/terragrunt.hcl: file: no such file \"db/data.json\"",
            "db/terragrunt.hcl: read_terragrunt_config: no such file \"env.hcl\"",
            "web/terragrunt.hcl: include.root.path: find_in_parent_folders(\"root.hcl\"): no \"root.hcl\" in any parent folder of \"web\"",
        ]
    );
    // The errors are not also reported as unresolved paths.
    assert!(d.units.iter().all(|u| u.unresolved.is_empty()));
}

#[test]
fn paths_above_the_root_are_errors() {
    let t = tree(&[(
        "a/terragrunt.hcl",
        "dependency \"x\" {\n  config_path = \"../../outside\"\n}\nlocals {\n  f = file(\"/etc/passwd\")\n}\n",
    )]);
    let d = discover(&t);
    assert_eq!(paths(&d), ["a"]);
    assert_eq!(
        messages(&d),
        [
            "a/terragrunt.hcl: dependency.x.config_path: invalid path \"a/../../outside\": climbs above the repository root",
            "a/terragrunt.hcl: locals.f: invalid path \"/etc/passwd\": absolute path outside the repository",
        ]
    );
}

#[test]
fn dependencies_on_non_units_and_cycles_come_from_the_graph() {
    let t = tree(&[
        ("modules/vpc/main.tf", ""),
        (
            "a/terragrunt.hcl",
            "dependency \"m\" {\n  config_path = \"../modules/vpc\"\n}\n",
        ),
        (
            "b/terragrunt.hcl",
            "dependencies {\n  paths = [\"../c\"]\n}\n",
        ),
        (
            "c/terragrunt.hcl",
            "dependencies {\n  paths = [\"../b\"]\n}\n",
        ),
    ]);
    let (g, errors) = discover(&t).into_graph();
    assert_eq!(g.len(), 3);
    let msgs: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        msgs,
        [
            "a: dependency \"modules/vpc\" is not a unit (no terragrunt.hcl in \"modules/vpc\")",
            "dependency cycle: b -> c -> b",
        ]
    );
}

#[test]
fn include_cycles_are_errors_not_hangs() {
    let t = tree(&[
        // Relative include paths in included files are relative to the unit.
        (
            "x.hcl",
            "include {\n  path = \"${get_repo_root()}/y.hcl\"\n}\n",
        ),
        (
            "y.hcl",
            "include {\n  path = \"${get_repo_root()}/x.hcl\"\n}\n",
        ),
        ("u/terragrunt.hcl", "include {\n  path = \"../x.hcl\"\n}\n"),
    ]);
    let d = discover(&t);
    assert_eq!(paths(&d), ["u"]);
    assert_eq!(
        messages(&d),
        ["y.hcl: include: \"x.hcl\" includes itself (a cycle)"]
    );
}

fn check_against_generator(units: usize, seed: u64) {
    let repo = live_ci_synth::generate_repo(units, seed);
    let mut t = MemTree::new();
    for (p, c) in &repo.files {
        t.insert(p, c).unwrap();
    }
    let d = discover(&t);
    assert!(d.errors.is_empty(), "{:?}", messages(&d));
    assert_eq!(d.units.len(), units);
    assert_eq!(d.parents, vec![RepoPath::new("root.hcl").unwrap()]);
    let mut expected = repo.units.clone();
    expected.sort_by(|a, b| a.dir.cmp(&b.dir));
    for (got, want) in d.units.iter().zip(&expected) {
        assert_eq!(got.path.as_str(), want.dir);
        let deps: BTreeSet<String> = got.dependencies.iter().map(|p| p.to_string()).collect();
        assert_eq!(deps, want.dependencies, "dependencies of {}", want.dir);
        let reads: BTreeSet<String> = got.reads.iter().map(|p| p.to_string()).collect();
        assert_eq!(reads, want.reads, "reads of {}", want.dir);
        let module: Vec<String> = got.module_sources.iter().map(|p| p.to_string()).collect();
        assert_eq!(module, want.module.iter().cloned().collect::<Vec<_>>());
        assert!(got.unresolved.is_empty(), "{:?}", got.unresolved);
    }
    let (g, errors) = d.into_graph();
    assert!(errors.is_empty());
    assert!(g.topo_order().is_some());
}

#[test]
fn a_generated_2000_unit_repo_matches_what_was_generated() {
    check_against_generator(2000, 2024);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn generated_repos_of_any_seed_are_discovered_exactly(seed in any::<u64>(), units in 1usize..160) {
        check_against_generator(units, seed);
    }

    /// `find_in_parent_folders` returns the nearest ancestor's file, never the
    /// unit's own.
    #[test]
    fn find_in_parent_folders_takes_the_nearest_ancestor(
        depth in 1usize..6,
        marks in proptest::collection::vec(any::<bool>(), 6),
    ) {
        let dirs: Vec<String> = (0..depth).map(|i| (0..=i).map(|j| format!("d{j}")).collect::<Vec<_>>().join("/")).collect();
        let unit_dir = dirs[depth - 1].clone();
        let mut t = MemTree::new();
        let mut nearest = None;
        for (i, dir) in dirs.iter().enumerate() {
            if marks[i] {
                t.insert(&format!("{dir}/m.hcl"), "").unwrap();
                if i + 1 < depth {
                    nearest = Some(format!("{dir}/m.hcl"));
                }
            }
        }
        t.insert(
            &format!("{unit_dir}/terragrunt.hcl"),
            "locals {\n  m = file(find_in_parent_folders(\"m.hcl\", \"${get_repo_root()}/fallback.txt\"))\n}\n",
        ).unwrap();
        t.insert("fallback.txt", "").unwrap();
        let d = discover(&t);
        prop_assert!(d.errors.is_empty(), "{:?}", messages(&d));
        let want = nearest.unwrap_or_else(|| "fallback.txt".to_string());
        prop_assert_eq!(&unit(&d, &unit_dir).reads, &set(&[want.as_str()]));
    }
}
