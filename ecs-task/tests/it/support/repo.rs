//! Real git repositories in temp dirs, and terraform command templates that
//! keep each unit's local state outside the checkouts (every task clones anew,
//! as on Fargate, so state must live elsewhere, as a remote backend would).

#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use tempfile::TempDir;

#[derive(Debug)]
pub(crate) struct GitRepo {
    pub dir: TempDir,
}

impl GitRepo {
    pub(crate) fn new() -> Self {
        let repo = GitRepo {
            dir: tempfile::tempdir().unwrap(),
        };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn url(&self) -> String {
        self.path().display().to_string()
    }

    pub(crate) fn git(&self, args: &[&str]) -> String {
        live_ci_testkit::git(self.path(), args)
    }

    pub(crate) fn write(&self, path: &str, contents: &str) -> &Self {
        let p = self.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, contents).unwrap();
        self
    }

    pub(crate) fn commit(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }

    /// A unit whose only resource is the built-in `terraform_data`, with an
    /// (unconfigured) local backend that the templates point at the state dir.
    pub(crate) fn unit(&self, dir: &str, input: &str, deps: &[&str]) -> &Self {
        self.write(
            &format!("{dir}/main.tf"),
            &format!(
                "terraform {{\n  backend \"local\" {{}}\n}}\n\nresource \"terraform_data\" \"this\" {{\n  input = {input}\n}}\n"
            ),
        );
        let mut hcl = String::new();
        for (i, d) in deps.iter().enumerate() {
            hcl.push_str(&format!(
                "dependency \"d{i}\" {{\n  config_path = \"{d}\"\n}}\n"
            ));
        }
        self.write(&format!("{dir}/terragrunt.hcl"), &hcl)
    }
}

/// The show command of the tests' terraform templates (the working directory
/// the plan command initialised).
pub(crate) const SHOW_COMMAND: &str = "terraform show -json -no-color {plan_file}";

/// A state directory and the plan/apply templates that use it.
#[derive(Debug)]
pub(crate) struct TfTemplates {
    pub state: TempDir,
    pub plan: String,
    pub apply: String,
}

impl TfTemplates {
    pub(crate) fn new(plan_prefix: &str) -> Self {
        let state = tempfile::tempdir().unwrap();
        let init = format!(
            "terraform init -input=false -no-color -backend-config=path={}/$(echo \"$LIVE_CI_CFG_PATH\" | tr / _).tfstate >/dev/null",
            state.path().display()
        );
        TfTemplates {
            plan: format!(
                "{plan_prefix}{init} && terraform plan -input=false -no-color -out={{plan_file}}"
            ),
            apply: format!(
                "{init} && terraform apply -input=false -no-color -auto-approve {{plan_file}}"
            ),
            state,
        }
    }

    pub(crate) fn state_file(&self, cfg_path: &str) -> PathBuf {
        self.state
            .path()
            .join(format!("{}.tfstate", cfg_path.replace('/', "_")))
    }
}
