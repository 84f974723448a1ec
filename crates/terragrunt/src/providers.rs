//! The providers a unit uses, read statically from its `.tf` files and lock file
//! (for rollbacks of new providers): the hcl-rs half of what live-ci knows about Terraform.

use std::collections::{BTreeMap, BTreeSet};

use crate::discovery::parse_hcl;
use crate::error::Result;
use crate::unit::Unit;
use hcl::{Expression, Structure};
use live_ci_core::path::RepoPath;
use live_ci_core::port::FileTree;
use live_ci_core::terraform::provider_address;

/// The providers of every unit of a tree, read statically from the `.tf` files
/// of the unit's directory and of its local module sources: `required_providers`,
/// `provider` blocks, the provider each resource and data source implies, and the
/// unit's `.terraform.lock.hcl`.
pub struct ProviderIndex<'t> {
    tree: &'t dyn FileTree,
    by_dir: BTreeMap<RepoPath, Vec<RepoPath>>,
}

impl std::fmt::Debug for ProviderIndex<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderIndex")
            .field("dirs", &self.by_dir.len())
            .finish()
    }
}

impl<'t> ProviderIndex<'t> {
    /// Lists the tree once.
    pub fn new(tree: &'t dyn FileTree) -> Result<Self> {
        let mut by_dir: BTreeMap<RepoPath, Vec<RepoPath>> = BTreeMap::new();
        for f in tree.files()? {
            let name = f.file_name();
            if name.ends_with(".tf") || name == ".terraform.lock.hcl" {
                let dir = f.parent().unwrap_or_else(RepoPath::root);
                by_dir.entry(dir).or_default().push(f);
            }
        }
        Ok(ProviderIndex { tree, by_dir })
    }

    /// The provider addresses `unit` uses. A `.tf` file that does not parse is
    /// an error naming its line.
    pub fn providers(&self, unit: &Unit) -> Result<BTreeSet<String>> {
        let mut out = BTreeSet::new();
        let dirs = std::iter::once(&unit.path).chain(unit.module_sources.iter());
        for dir in dirs {
            for file in self.by_dir.get(dir).into_iter().flatten() {
                let text = self.tree.read(file)?;
                let body = parse_hcl(file, &text)?;
                if file.file_name() == ".terraform.lock.hcl" {
                    for s in body.into_inner() {
                        if let Structure::Block(b) = s
                            && b.identifier.as_str() == "provider"
                            && let Some(label) = b.labels.first()
                        {
                            out.insert(provider_address(label.as_str()));
                        }
                    }
                } else {
                    out.extend(providers_of_body(body));
                }
            }
        }
        Ok(out)
    }
}

fn providers_of_body(body: hcl::Body) -> BTreeSet<String> {
    let mut sources: BTreeMap<String, String> = BTreeMap::new();
    let mut local_names: BTreeSet<String> = BTreeSet::new();
    for s in body.into_inner() {
        let Structure::Block(b) = s else { continue };
        match b.identifier.as_str() {
            "terraform" => {
                for inner in b.body.into_inner() {
                    let Structure::Block(rp) = inner else {
                        continue;
                    };
                    if rp.identifier.as_str() != "required_providers" {
                        continue;
                    }
                    for attr in rp.body.into_inner() {
                        let Structure::Attribute(a) = attr else {
                            continue;
                        };
                        let name = a.key.as_str().to_string();
                        let source = match &a.expr {
                            Expression::Object(o) => o.iter().find_map(|(k, v)| {
                                let key = match k {
                                    hcl::ObjectKey::Identifier(i) => i.as_str().to_string(),
                                    hcl::ObjectKey::Expression(Expression::String(s)) => s.clone(),
                                    _ => return None,
                                };
                                match (key.as_str(), v) {
                                    ("source", Expression::String(s)) => Some(s.clone()),
                                    _ => None,
                                }
                            }),
                            _ => None,
                        };
                        sources.insert(name.clone(), source.unwrap_or(name.clone()));
                        local_names.insert(name);
                    }
                }
            }
            "provider" => {
                if let Some(l) = b.labels.first() {
                    local_names.insert(l.as_str().to_string());
                }
            }
            "resource" | "data" => {
                let explicit = b.body.iter().find_map(|s| match s {
                    Structure::Attribute(a) if a.key.as_str() == "provider" => {
                        Some(a.expr.to_string())
                    }
                    _ => None,
                });
                let implied = match explicit {
                    Some(p) => p.split('.').next().map(str::to_string),
                    None => b
                        .labels
                        .first()
                        .and_then(|t| t.as_str().split('_').next().map(str::to_string)),
                };
                if let Some(name) = implied.filter(|n| !n.is_empty()) {
                    local_names.insert(name);
                }
            }
            _ => {}
        }
    }
    local_names
        .into_iter()
        .map(|n| provider_address(sources.get(&n).map(String::as_str).unwrap_or(&n)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use live_ci_core::terraform::new_providers;
    use live_ci_core::tree::MemTree;

    #[test]
    fn providers_are_read_from_required_providers_blocks_resources_and_the_lock_file() {
        let tree = MemTree::new()
            .with(
                "dev/app/main.tf",
                r#"
terraform {
  required_providers {
    aws = { source = "hashicorp/aws", version = "~> 5" }
    acme = { source = "example.com/acme/acme" }
  }
}
provider "aws" { region = "us-east-1" }
resource "terraform_data" "x" {}
resource "random_id" "y" { provider = random.other }
"#,
            )
            .unwrap()
            .with("dev/app/terragrunt.hcl", "")
            .unwrap()
            .with(
                "dev/app/.terraform.lock.hcl",
                r#"provider "registry.terraform.io/hashicorp/null" { version = "3.0.0" }"#,
            )
            .unwrap()
            .with("modules/m/main.tf", r#"data "http" "z" { url = "x" }"#)
            .unwrap();
        let index = ProviderIndex::new(&tree).unwrap();
        let mut unit = Unit::new(RepoPath::new("dev/app").unwrap());
        unit.module_sources
            .insert(RepoPath::new("modules/m").unwrap());
        let got: Vec<String> = index.providers(&unit).unwrap().into_iter().collect();
        assert_eq!(
            got,
            vec![
                "example.com/acme/acme",
                "registry.terraform.io/hashicorp/aws",
                "registry.terraform.io/hashicorp/http",
                "registry.terraform.io/hashicorp/null",
                "registry.terraform.io/hashicorp/random",
                "terraform.io/builtin/terraform",
            ]
        );
        let base: BTreeSet<String> = ["registry.terraform.io/hashicorp/aws".to_string()].into();
        let new = new_providers(&index.providers(&unit).unwrap(), Some(&base));
        assert_eq!(new.len(), 5);
        assert!(!new.contains(&"registry.terraform.io/hashicorp/aws".to_string()));
    }

    #[test]
    fn a_broken_tf_file_names_its_line() {
        let tree = MemTree::new()
            .with("u/main.tf", "resource \"x\" {\n  a = \n")
            .unwrap();
        let index = ProviderIndex::new(&tree).unwrap();
        let err = index
            .providers(&Unit::new(RepoPath::new("u").unwrap()))
            .unwrap_err();
        assert!(err.to_string().starts_with("u/main.tf:"), "{err}");
    }
}
