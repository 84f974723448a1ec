//! Synthetic Terragrunt live repositories, generated deterministically from a
//! seed, shaped like real ones (accounts / regions / environments / units with a
//! `root.hcl`, shared `account.hcl`, `region.hcl`, `env.hcl`, dependencies and
//! local modules), for discovery tests and benchmarks.
//!
//! Besides the files, [`generate_repo`] returns what every unit was written to
//! depend on and read, so tests can check discovery against it.

pub mod pipeline;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const REGIONS: &[&str] = &["us-east-1", "eu-west-1"];
const ENVS: &[&str] = &["dev", "stage", "prod"];
const MODULES: &[&str] = &["vpc", "app", "db", "cache", "queue"];
const UNITS_PER_ENV: usize = 50;

/// What the generator wrote for one unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SynthUnit {
    /// The unit's directory, repository-relative.
    pub dir: String,
    /// Directories of the units it depends on (`dependency` and `dependencies`).
    pub dependencies: BTreeSet<String>,
    /// Files it includes or reads besides its own `terragrunt.hcl`.
    pub reads: BTreeSet<String>,
    /// The local module directory of its `terraform { source }`, if local.
    pub module: Option<String>,
}

/// A generated repository: its files and the expected units.
#[derive(Debug, Clone)]
pub struct SynthRepo {
    /// (repository-relative path, contents), sorted by path.
    pub files: Vec<(String, String)>,
    /// Every unit written, with what discovery should find it depends on and reads.
    pub units: Vec<SynthUnit>,
}

/// The files of a repository of `units` units.
pub fn generate(units: usize, seed: u64) -> Vec<(String, String)> {
    generate_repo(units, seed).files
}

/// Writes `files` under `dir`, creating directories as needed.
pub fn write_to(dir: &Path, files: &[(String, String)]) -> std::io::Result<()> {
    for (path, contents) in files {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(target, contents)?;
    }
    Ok(())
}

const ROOT_HCL: &str = r#"# Shared by every unit through include "root".
locals {
  account = read_terragrunt_config(find_in_parent_folders("account.hcl"))
  region  = read_terragrunt_config(find_in_parent_folders("region.hcl"))
}

remote_state {
  backend = "s3"
  config = {
    bucket  = "tfstate-${local.account.locals.account_id}"
    key     = "${path_relative_to_include()}/terraform.tfstate"
    region  = local.region.locals.region
    encrypt = true
  }
}

inputs = {
  account_id = local.account.locals.account_id
  region     = local.region.locals.region
}
"#;

/// A repository of `units` units; the same seed always gives the same files.
pub fn generate_repo(units: usize, seed: u64) -> SynthRepo {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut files: Vec<(String, String)> = Vec::with_capacity(units * 2 + 64);
    files.push(("root.hcl".into(), ROOT_HCL.into()));
    for m in MODULES {
        files.push((
            format!("modules/{m}/main.tf"),
            format!(
                "variable \"name\" {{\n  type = string\n}}\n\nresource \"terraform_data\" \"{m}\" {{\n  input = var.name\n}}\n\noutput \"id\" {{\n  value = terraform_data.{m}.id\n}}\n"
            ),
        ));
    }

    let envs_needed = units.div_ceil(UNITS_PER_ENV);
    let per_account = REGIONS.len() * ENVS.len();
    let mut env_dirs: Vec<String> = Vec::with_capacity(envs_needed);
    for e in 0..envs_needed {
        let acct = e / per_account;
        let region = REGIONS[(e / ENVS.len()) % REGIONS.len()];
        let env = ENVS[e % ENVS.len()];
        let acct_dir = format!("acct-{acct:03}");
        let region_dir = format!("{acct_dir}/{region}");
        let env_dir = format!("{region_dir}/{env}");
        if e % per_account == 0 {
            files.push((
                format!("{acct_dir}/account.hcl"),
                format!(
                    "locals {{\n  account_name = \"{acct_dir}\"\n  account_id   = \"{:012}\"\n}}\n",
                    100_000_000_000u64 + acct as u64
                ),
            ));
        }
        if e % ENVS.len() == 0 {
            files.push((
                format!("{region_dir}/region.hcl"),
                format!("locals {{\n  region = \"{region}\"\n}}\n"),
            ));
        }
        files.push((
            format!("{env_dir}/env.hcl"),
            format!("locals {{\n  env = \"{env}\"\n}}\n"),
        ));
        env_dirs.push(env_dir);
    }

    let unit_dirs: Vec<String> = (0..units)
        .map(|i| {
            format!(
                "{}/svc-{:03}",
                env_dirs[i / UNITS_PER_ENV],
                i % UNITS_PER_ENV
            )
        })
        .collect();
    let mut expected = Vec::with_capacity(units);
    for i in 0..units {
        let dir = &unit_dirs[i];
        let env_dir = &env_dirs[i / UNITS_PER_ENV];
        let region_dir = env_dir.rsplit_once('/').map_or("", |(r, _)| r);
        let acct_dir = region_dir.rsplit_once('/').map_or("", |(a, _)| a);
        let first_in_env = (i / UNITS_PER_ENV) * UNITS_PER_ENV;
        let mut text = String::with_capacity(1024);
        let mut deps = BTreeSet::new();
        let mut reads: BTreeSet<String> = [
            "root.hcl".to_string(),
            format!("{acct_dir}/account.hcl"),
            format!("{region_dir}/region.hcl"),
            format!("{env_dir}/env.hcl"),
        ]
        .into_iter()
        .collect();

        text.push_str("include \"root\" {\n  path = find_in_parent_folders(\"root.hcl\")\n}\n\n");
        let _ = write!(
            text,
            "locals {{\n  account = read_terragrunt_config(find_in_parent_folders(\"account.hcl\"))\n  region  = read_terragrunt_config(find_in_parent_folders(\"region.hcl\"))\n  env     = read_terragrunt_config(find_in_parent_folders(\"env.hcl\"))\n  name    = \"svc-{:03}\"\n  env_dir = \"${{get_terragrunt_dir()}}/..\"\n}}\n\n",
            i % UNITS_PER_ENV
        );

        // Sources: some local (two spellings), the rest remote.
        let module = MODULES[rng.random_range(0..MODULES.len())];
        let roll: f64 = rng.random();
        let local_module = if roll < 0.15 {
            let _ = write!(
                text,
                "terraform {{\n  source = \"${{get_repo_root()}}/modules//{module}\"\n}}\n\n"
            );
            Some("modules".to_string())
        } else if roll < 0.3 {
            let _ = write!(
                text,
                "terraform {{\n  source = \"../../../../modules/{module}\"\n}}\n\n"
            );
            Some(format!("modules/{module}"))
        } else if roll < 0.65 {
            let _ = write!(
                text,
                "terraform {{\n  source = \"git::https://github.com/acme/infra-modules.git//{module}?ref=v1.{}.0\"\n}}\n\n",
                rng.random_range(0..9)
            );
            None
        } else {
            let _ = write!(
                text,
                "terraform {{\n  source = \"tfr:///terraform-aws-modules/{module}/aws?version=5.0.0\"\n}}\n\n"
            );
            None
        };

        // About 40% of units depend on 1-5 earlier units (so the graph is acyclic).
        if i > 0 && rng.random_bool(0.4) {
            let n = rng.random_range(1..=5usize);
            for k in 0..n {
                let same_env = i > first_in_env && rng.random_bool(0.8);
                let target = if same_env {
                    rng.random_range(first_in_env..i)
                } else {
                    rng.random_range(0..i)
                };
                let tdir = &unit_dirs[target];
                let tname = tdir.rsplit('/').next().unwrap_or(tdir);
                let config_path = if same_env {
                    match rng.random_range(0..3) {
                        0 => format!("../{tname}"),
                        1 => format!("${{get_terragrunt_dir()}}/../{tname}"),
                        _ => format!("${{local.env_dir}}/{tname}"),
                    }
                } else if rng.random_bool(0.5) {
                    format!("${{get_repo_root()}}/{tdir}")
                } else {
                    format!("../../../../{tdir}")
                };
                let _ = write!(
                    text,
                    "dependency \"dep{k}\" {{\n  config_path = \"{config_path}\"\n  mock_outputs = {{\n    id = \"mock\"\n  }}\n}}\n\n"
                );
                deps.insert(tdir.clone());
            }
        }
        // Some units order themselves after others without reading outputs.
        if i > first_in_env + 1 && rng.random_bool(0.1) {
            let a = rng.random_range(first_in_env..i);
            let b = rng.random_range(first_in_env..i);
            let name = |t: usize| {
                let d = &unit_dirs[t];
                d.rsplit('/').next().unwrap_or(d).to_string()
            };
            let _ = write!(
                text,
                "dependencies {{\n  paths = [\"../{}\", \"${{get_terragrunt_dir()}}/../{}\"]\n}}\n\n",
                name(a),
                name(b)
            );
            deps.insert(unit_dirs[a].clone());
            deps.insert(unit_dirs[b].clone());
        }

        text.push_str("inputs = {\n  name   = \"${local.env.locals.env}-${local.name}\"\n  region = local.region.locals.region\n");
        if let Some(k) = (0..5).find(|k| text.contains(&format!("dependency \"dep{k}\""))) {
            let _ = writeln!(text, "  upstream_id = dependency.dep{k}.outputs.id");
        }
        if rng.random_bool(0.05) {
            text.push_str("  policy = file(\"${get_terragrunt_dir()}/policy.json\")\n");
            files.push((
                format!("{dir}/policy.json"),
                format!("{{\"Version\": \"2012-10-17\", \"Sid\": \"u{i}\"}}\n"),
            ));
            reads.insert(format!("{dir}/policy.json"));
        }
        text.push_str("}\n");

        files.push((format!("{dir}/terragrunt.hcl"), text));
        expected.push(SynthUnit {
            dir: dir.clone(),
            dependencies: deps,
            reads,
            module: local_module,
        });
    }
    files.sort();
    SynthRepo {
        files,
        units: expected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_repo_and_other_seed_differs() {
        let a = generate(300, 7);
        assert_eq!(a, generate(300, 7));
        assert_ne!(a, generate(300, 8));
    }

    #[test]
    fn layout_is_a_live_repo() {
        let repo = generate_repo(120, 1);
        let paths: BTreeSet<&str> = repo.files.iter().map(|(p, _)| p.as_str()).collect();
        assert!(paths.contains("root.hcl"));
        assert!(paths.contains("modules/vpc/main.tf"));
        assert_eq!(repo.units.len(), 120);
        for u in &repo.units {
            assert!(paths.contains(format!("{}/terragrunt.hcl", u.dir).as_str()));
            for r in &u.reads {
                assert!(paths.contains(r.as_str()), "{r} missing");
            }
        }
        let with_deps = repo
            .units
            .iter()
            .filter(|u| !u.dependencies.is_empty())
            .count();
        assert!(with_deps > 30 && with_deps < 80, "{with_deps}");
    }

    #[test]
    fn dependencies_point_backwards_so_the_graph_is_acyclic() {
        let repo = generate_repo(500, 3);
        let index: std::collections::HashMap<&str, usize> = repo
            .units
            .iter()
            .enumerate()
            .map(|(i, u)| (u.dir.as_str(), i))
            .collect();
        for (i, u) in repo.units.iter().enumerate() {
            for d in &u.dependencies {
                assert!(index[d.as_str()] < i, "{} -> {d}", u.dir);
            }
        }
    }

    #[test]
    fn writes_files_to_disk() {
        let dir = tempfile::tempdir().unwrap();
        let files = generate(10, 2);
        write_to(dir.path(), &files).unwrap();
        for (p, c) in &files {
            assert_eq!(&std::fs::read_to_string(dir.path().join(p)).unwrap(), c);
        }
    }
}
