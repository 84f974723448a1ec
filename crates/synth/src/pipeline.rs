//! A live repository the whole pipeline can deploy (`make bench-pipeline`): every
//! unit is a trivial `terraform_data` that plain terraform plans and applies, spread
//! over several accounts, with dependencies in layers so the critical path is as
//! deep as asked.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The shape of the generated repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PipelineShape {
    /// How many units to generate.
    pub units: usize,
    /// How many accounts (`acct-<n>` folders) the units are spread over,
    /// round-robin; 0 counts as 1.
    pub accounts: usize,
    /// Dependency layers: a unit of layer `l > 0` depends on at least one unit of
    /// layer `l - 1`, so the longest dependency chain has exactly `layers` units.
    pub layers: usize,
    /// Seeds the choice of dependencies: the same shape gives the same files.
    pub seed: u64,
}

/// One unit: its directory, account and the units it depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineUnit {
    /// The unit's directory, repository-relative (`acct-<n>/us-east-1/svc-<i>`).
    pub dir: String,
    /// The account folder it sits in (`acct-<n>`).
    pub account: String,
    /// Its dependency layer, from 0 (no dependencies).
    pub layer: usize,
    /// Directories of the units it depends on, all in earlier layers.
    pub dependencies: BTreeSet<String>,
}

/// The files of the repository (without units: the base commit), the units'
/// files (what the pull request adds), and the accounts' configuration as the
/// module's `account_parent_cfg` takes it (JSON).
#[derive(Debug, Clone)]
pub struct PipelineRepo {
    /// (repository-relative path, contents) of the base commit: `root.hcl` and
    /// each account's `account.hcl`, sorted by path.
    pub base_files: Vec<(String, String)>,
    /// (repository-relative path, contents) of every unit's `terragrunt.hcl`
    /// and `main.tf`, sorted by path.
    pub unit_files: Vec<(String, String)>,
    /// Every unit, in generation order.
    pub units: Vec<PipelineUnit>,
    /// The accounts' configuration, a JSON array in `account_parent_cfg`'s shape.
    pub accounts_json: String,
}

const ROOT_HCL: &str = "# Shared by every unit through include \"root\".\nlocals {\n  account = read_terragrunt_config(find_in_parent_folders(\"account.hcl\"))\n}\n";

fn account_name(a: usize) -> String {
    format!("acct-{a}")
}

/// Generates the repository; deterministic for a shape.
pub fn generate_pipeline_repo(shape: PipelineShape) -> PipelineRepo {
    let PipelineShape {
        units,
        accounts,
        layers,
        seed,
    } = shape;
    let accounts = accounts.max(1);
    let layers = layers.clamp(1, units.max(1));
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut base_files = vec![("root.hcl".to_string(), ROOT_HCL.to_string())];
    let mut accounts_cfg = Vec::with_capacity(accounts);
    for a in 0..accounts {
        let name = account_name(a);
        let id = 100_000_000_000u64 + a as u64;
        base_files.push((
            format!("{name}/account.hcl"),
            format!("locals {{\n  account_name = \"{name}\"\n  account_id   = \"{id:012}\"\n}}\n"),
        ));
        accounts_cfg.push(format!(
            "  {{\n    \"name\": \"{name}\",\n    \"path\": \"{name}\",\n    \"dependencies\": [],\n    \"voters\": [\"owner-{a}@example.com\"],\n    \"min_approval_count\": 1,\n    \"min_rejection_count\": 1,\n    \"plan_role_arn\": \"arn:aws:iam::{id:012}:role/live-ci-plan\",\n    \"apply_role_arn\": \"arn:aws:iam::{id:012}:role/live-ci-apply\"\n  }}"
        ));
    }
    let accounts_json = format!("[\n{}\n]\n", accounts_cfg.join(",\n"));

    // Unit i sits in layer i * layers / units: every layer gets units, in order.
    let layer_of = |i: usize| i * layers / units.max(1);
    let mut by_layer: Vec<Vec<usize>> = vec![Vec::new(); layers];
    for i in 0..units {
        by_layer[layer_of(i)].push(i);
    }
    let dirs: Vec<String> = (0..units)
        .map(|i| format!("{}/us-east-1/svc-{i:03}", account_name(i % accounts)))
        .collect();
    let mut out_units = Vec::with_capacity(units);
    let mut unit_files = Vec::with_capacity(units * 2);
    for i in 0..units {
        let layer = layer_of(i);
        let mut deps: BTreeSet<usize> = BTreeSet::new();
        if layer > 0 {
            let prev = &by_layer[layer - 1];
            deps.insert(prev[rng.random_range(0..prev.len())]);
            if rng.random_bool(0.3) {
                deps.insert(prev[rng.random_range(0..prev.len())]);
            }
            if layer > 1 && rng.random_bool(0.2) {
                let earlier = &by_layer[rng.random_range(0..layer - 1)];
                deps.insert(earlier[rng.random_range(0..earlier.len())]);
            }
        }
        let mut hcl = String::from(
            "include \"root\" {\n  path = find_in_parent_folders(\"root.hcl\")\n}\n\n",
        );
        for (k, d) in deps.iter().enumerate() {
            let _ = write!(
                hcl,
                "dependency \"dep{k}\" {{\n  config_path = \"${{get_repo_root()}}/{}\"\n  mock_outputs = {{\n    id = \"mock\"\n  }}\n}}\n\n",
                dirs[*d]
            );
        }
        hcl.push_str("inputs = {\n  name = \"svc-");
        let _ = write!(hcl, "{i:03}\"\n}}\n");
        unit_files.push((format!("{}/terragrunt.hcl", dirs[i]), hcl));
        // Built-in resources only: plain terraform plans it with no provider download.
        unit_files.push((
            format!("{}/main.tf", dirs[i]),
            format!(
                "resource \"terraform_data\" \"this\" {{\n  input = \"svc-{i:03}\"\n}}\n\noutput \"id\" {{\n  value = terraform_data.this.id\n}}\n"
            ),
        ));
        out_units.push(PipelineUnit {
            dir: dirs[i].clone(),
            account: account_name(i % accounts),
            layer,
            dependencies: deps.iter().map(|d| dirs[*d].clone()).collect(),
        });
    }
    base_files.sort();
    unit_files.sort();
    PipelineRepo {
        base_files,
        unit_files,
        units: out_units,
        accounts_json,
    }
}

/// The number of units on the longest dependency chain.
pub fn critical_path_len(units: &[PipelineUnit]) -> usize {
    let index: std::collections::HashMap<&str, usize> = units
        .iter()
        .enumerate()
        .map(|(i, u)| (u.dir.as_str(), i))
        .collect();
    // Dependencies point to earlier units (lower layers), so one pass in order.
    let mut depth = vec![0usize; units.len()];
    for (i, u) in units.iter().enumerate() {
        depth[i] = 1 + u
            .dependencies
            .iter()
            .filter_map(|d| index.get(d.as_str()).map(|&j| depth[j]))
            .max()
            .unwrap_or(0);
    }
    depth.into_iter().max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(units: usize) -> PipelineShape {
        PipelineShape {
            units,
            accounts: 4,
            layers: 8,
            seed: 1,
        }
    }

    #[test]
    fn the_critical_path_has_one_unit_per_layer() {
        for n in [20, 100] {
            let repo = generate_pipeline_repo(shape(n));
            assert_eq!(repo.units.len(), n);
            assert_eq!(critical_path_len(&repo.units), 8, "{n} units");
        }
    }

    #[test]
    fn units_spread_over_every_account_and_depend_only_backwards() {
        let repo = generate_pipeline_repo(shape(100));
        let accounts: BTreeSet<&str> = repo.units.iter().map(|u| u.account.as_str()).collect();
        assert_eq!(accounts.len(), 4);
        for (i, u) in repo.units.iter().enumerate() {
            for d in &u.dependencies {
                let j = repo.units.iter().position(|x| &x.dir == d).unwrap();
                assert!(repo.units[j].layer < u.layer, "{} -> {d}", u.dir);
                assert!(j < i);
            }
            assert_eq!(u.layer == 0, u.dependencies.is_empty(), "{}", u.dir);
        }
        for a in 0..4 {
            assert!(
                repo.accounts_json
                    .contains(&format!("\"path\": \"acct-{a}\""))
            );
        }
    }

    #[test]
    fn every_unit_has_terraform_and_terragrunt_files_and_the_same_shape_is_the_same_repo() {
        let repo = generate_pipeline_repo(shape(20));
        for u in &repo.units {
            for f in ["terragrunt.hcl", "main.tf"] {
                let path = format!("{}/{f}", u.dir);
                assert!(repo.unit_files.iter().any(|(p, _)| *p == path), "{path}");
            }
        }
        assert!(
            repo.base_files
                .iter()
                .any(|(p, _)| p == "acct-3/account.hcl")
        );
        let again = generate_pipeline_repo(shape(20));
        assert_eq!(repo.unit_files, again.unit_files);
        let other = generate_pipeline_repo(PipelineShape {
            seed: 2,
            ..shape(20)
        });
        assert_ne!(repo.unit_files, other.unit_files);
    }
}
