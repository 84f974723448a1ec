//! Policy checks on a plan: Rego policies kept in the live repository, read
//! from the trunk as it was before the change under review (so a change can
//! never rewrite the policy that judges it), evaluated on each unit's plan
//! (`terraform show -json`) through the [`PolicyEngine`] port.
//!
//! The convention, like conftest's: every policy file declares a package
//! `live_ci` or under it (`package live_ci.tags`), and each package's `deny`
//! rule is a set of strings, each string one denial's message. The input
//! document is the plan's `show -json` as terraform wrote it.

use crate::error::{CoreError, Result};
use crate::path::RepoPath;
use crate::port::FileTree;

/// The root every policy's package sits under.
pub const ROOT_PACKAGE: &str = "live_ci";

/// The rule, in every package, whose strings deny a plan.
pub const DENY_RULE: &str = "deny";

/// The file name ending of a policy; `_test.rego` files (OPA's tests of the
/// policies themselves) are left out.
pub const POLICY_SUFFIX: &str = ".rego";

/// One policy file as the trunk holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyFile {
    pub path: RepoPath,
    pub text: String,
}

/// One denial: the rule that denied (`data.live_ci.tags.deny`) and the
/// policy's own message.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Denial {
    pub rule: String,
    pub message: String,
}

impl Denial {
    /// `rule: message`, as the status, comment and run page show it.
    pub fn describe(&self) -> String {
        format!("{}: {}", self.rule, self.message)
    }
}

/// Why the policies could not judge a plan. Each is a failure of the unit,
/// never a pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyFailure {
    /// A policy file does not parse (or compile): the file and line.
    Parse {
        file: String,
        line: u32,
        message: String,
    },
    /// A policy's package is not under [`ROOT_PACKAGE`].
    Package { file: String, package: String },
    /// Evaluation failed (a builtin's error, the time limit).
    Eval { rule: String, message: String },
    /// A `deny` rule is not a set of strings.
    NotStrings { rule: String, value: String },
    /// The plan is not JSON.
    Input { message: String },
}

impl PolicyFailure {
    /// One line (a parse error's source excerpt dropped), lowercase, quoting
    /// the offending value.
    pub fn describe(&self) -> String {
        match self {
            PolicyFailure::Parse {
                file,
                line,
                message,
            } => format!("policy {file:?} line {line} does not parse: {message}"),
            PolicyFailure::Package { file, package } => format!(
                "policy {file:?} declares package {package:?}, not {ROOT_PACKAGE:?} or under it"
            ),
            PolicyFailure::Eval { rule, message } => {
                format!("policy rule {rule:?} failed: {message}")
            }
            PolicyFailure::NotStrings { rule, value } => {
                format!("policy rule {rule:?} is not a set of strings: {value}")
            }
            PolicyFailure::Input { message } => {
                format!("the plan JSON is not a policy input: {message}")
            }
        }
    }
}

/// What the policies said of one plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// No policy denied.
    Allowed,
    /// At least one denial, sorted.
    Denied(Vec<Denial>),
    /// The policies could not judge: the unit fails.
    Failed(PolicyFailure),
}

impl Verdict {
    /// `None` when allowed; else the one-line reason the unit fails.
    pub fn failure(&self) -> Option<String> {
        match self {
            Verdict::Allowed => None,
            Verdict::Denied(d) => Some(format!(
                "denied by policy: {}",
                d.iter()
                    .map(Denial::describe)
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
            Verdict::Failed(f) => Some(f.describe()),
        }
    }
}

/// The port: an in-process Rego interpreter (no process, no network: a
/// policy cannot shell out). `live-ci-engine`'s `policy` module implements it.
pub trait PolicyEngine: Send + Sync {
    /// Evaluates every `deny` of `policies` on the plan `plan_json`.
    fn evaluate(&self, policies: &[PolicyFile], plan_json: &str) -> Verdict;

    /// Whether `policies` load, compile and run at all (on an empty input),
    /// before any unit is planned: a broken policy stops everything, naming
    /// its file and line, instead of failing each plan after it ran.
    fn check(&self, policies: &[PolicyFile]) -> Result<(), PolicyFailure> {
        match self.evaluate(policies, "{}") {
            Verdict::Failed(f) => Err(f),
            Verdict::Allowed | Verdict::Denied(_) => Ok(()),
        }
    }
}

/// The policy files under `dir` of `tree` (the trunk before the change),
/// sorted by path. A `dir` absent from the tree is an error: a policy
/// directory configured but missing must not pass every plan silently.
pub fn load(tree: &dyn FileTree, dir: &RepoPath) -> Result<Vec<PolicyFile>> {
    let prefix = format!("{}/", dir.as_str().trim_end_matches('/'));
    let mut found = false;
    let mut out = Vec::new();
    for path in tree.files()? {
        if !path.as_str().starts_with(&prefix) {
            continue;
        }
        found = true;
        let name = path.as_str();
        if name.ends_with(POLICY_SUFFIX) && !name.ends_with("_test.rego") {
            let text = tree.read(&path)?;
            out.push(PolicyFile { path, text });
        }
    }
    if !found {
        return Err(CoreError::PolicyDirMissing(dir.as_str().to_string()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::tree::MemTree;

    #[test]
    fn loads_rego_files_under_the_dir_only_without_tests() {
        let mut tree = MemTree::new();
        for (p, t) in [
            ("policy/a.rego", "package live_ci.a"),
            ("policy/a_test.rego", "package live_ci.a"),
            ("policy/README.md", "x"),
            ("policy/sub/b.rego", "package live_ci.b"),
            ("policyx/c.rego", "package live_ci.c"),
            ("units/x/terragrunt.hcl", ""),
        ] {
            tree.insert(p, t).unwrap();
        }
        let files = load(&tree, &RepoPath::new("policy").unwrap()).unwrap();
        let names: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(names, ["policy/a.rego", "policy/sub/b.rego"]);
    }

    #[test]
    fn a_missing_dir_is_an_error_naming_it() {
        let tree = MemTree::new().with("units/x/terragrunt.hcl", "").unwrap();
        let e = load(&tree, &RepoPath::new("policy").unwrap()).unwrap_err();
        assert!(
            e.to_string()
                .contains("the policy directory \"policy\" is not in the trunk"),
            "{e}"
        );
    }

    #[test]
    fn verdict_failure_lines() {
        assert_eq!(Verdict::Allowed.failure(), None);
        let d = Verdict::Denied(vec![Denial {
            rule: "data.live_ci.x.deny".into(),
            message: "no".into(),
        }]);
        assert_eq!(
            d.failure().unwrap(),
            "denied by policy: data.live_ci.x.deny: no"
        );
    }
}
