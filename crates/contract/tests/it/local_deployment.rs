//! The local deployment (`scripts/deploy-local.sh` → `examples/local` → the
//! module) passes every setting on: terraform only warns about a tfvars value
//! of an undeclared variable, so a setting the root module does not declare
//! (or declares and never passes on) silently deploys the module's default.

use std::collections::BTreeSet;

use live_ci_contract::Module;

use super::module_contract::repo_root;

/// The keys of the tfvars JSON that `deploy-local.sh` writes (its heredoc).
fn tfvars_keys(script: &str) -> BTreeSet<String> {
    let start = script
        .find("local.auto.tfvars.json.new\" <<EOF")
        .expect("deploy-local.sh writes local.auto.tfvars.json.new with a heredoc");
    let body = &script[start..];
    let body = &body[..body.find("\nEOF").expect("the heredoc ends")];
    body.lines()
        .filter_map(|l| l.trim_start().strip_prefix('"'))
        .filter_map(|l| l.split_once("\":").map(|(k, _)| k.to_string()))
        .collect()
}

#[test]
fn every_setting_deploy_local_writes_reaches_the_module() {
    let root = repo_root();
    let script = std::fs::read_to_string(root.join("scripts/deploy-local.sh")).unwrap();
    let written = tfvars_keys(&script);
    assert!(
        written.contains("max_parallel") && written.contains("allow_destroy"),
        "the heredoc parse found {written:?}"
    );
    let example = Module::load(root.join("examples/local")).unwrap_or_else(|e| panic!("{e}"));
    let declared: BTreeSet<String> = example.variables().into_iter().map(|v| v.name).collect();
    let undeclared: Vec<_> = written.difference(&declared).collect();
    assert!(
        undeclared.is_empty(),
        "scripts/deploy-local.sh writes {undeclared:?}, which examples/local/variables.tf does not declare (terraform would ignore them with a warning)"
    );
    let mut uses = String::new();
    for entry in std::fs::read_dir(root.join("examples/local")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "tf")
            && path.file_name().is_some_and(|n| n != "variables.tf")
        {
            uses.push_str(&std::fs::read_to_string(&path).unwrap());
        }
    }
    let unused: Vec<_> = declared
        .iter()
        .filter(|name| {
            let needle = format!("var.{name}");
            !uses.match_indices(&needle).any(|(i, _)| {
                uses[i + needle.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'))
            })
        })
        .collect();
    assert!(
        unused.is_empty(),
        "examples/local declares {unused:?} but never uses them: the module gets its default instead"
    );
}
