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
    /// The file's repository path.
    pub path: RepoPath,
    /// The Rego source.
    pub text: String,
}

/// One denial: the rule that denied (`data.live_ci.tags.deny`) and the
/// policy's own message.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Denial {
    /// The rule's full name, e.g. `data.live_ci.tags.deny`.
    pub rule: String,
    /// The message the rule gave.
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
        /// The policy file's path.
        file: String,
        /// The line of the error (1-based).
        line: u32,
        /// The evaluator's message, last line only.
        message: String,
    },
    /// A policy's package is not under [`ROOT_PACKAGE`].
    Package {
        /// The policy file's path.
        file: String,
        /// The package it declares.
        package: String,
    },
    /// Evaluation failed (a builtin's error, the time limit).
    Eval {
        /// The rule being evaluated.
        rule: String,
        /// The evaluator's message, last line only.
        message: String,
    },
    /// A `deny` rule is not a set of strings.
    NotStrings {
        /// The `deny` rule's full name.
        rule: String,
        /// What it evaluated to instead, shortened.
        value: String,
    },
    /// The plan is not JSON.
    Input {
        /// The parser's message.
        message: String,
    },
    /// The `policy_command` could not judge: it could not be started, was
    /// not found or not executable (the shell's 126 and 127), or a signal
    /// ended it. Unlike a non-zero exit, never a denial (nor overridable).
    Command {
        /// The policy command as run.
        command: String,
        /// Why it could not judge.
        message: String,
    },
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
            PolicyFailure::Command { command, message } => {
                format!("the policy command {command:?} could not judge the plan: {message}")
            }
        }
    }
}

/// How a denial is named when `policy_override` is on: the unit goes to the
/// vote, and an approve needs a reason.
pub const OVERRIDABLE: &str = "denied by policy (voters may override with a reason)";

/// The rule name of a `policy_command` denial.
pub const COMMAND_RULE: &str = "policy_command";

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

    /// Both judges' verdicts as one: a failure wins (the plan was not
    /// judged), else every denial of both, sorted.
    pub fn and(self, other: Verdict) -> Verdict {
        match (self, other) {
            (Verdict::Failed(f), _) | (_, Verdict::Failed(f)) => Verdict::Failed(f),
            (Verdict::Allowed, v) | (v, Verdict::Allowed) => v,
            (Verdict::Denied(mut a), Verdict::Denied(b)) => {
                a.extend(b);
                a.sort();
                a.dedup();
                Verdict::Denied(a)
            }
        }
    }

    /// With `policy_override` on, the denials the voters may override
    /// (`rule: message` each); `None` when allowed or when the policies
    /// failed (never overridable: nothing judged the plan).
    pub fn overridable(&self) -> Option<Vec<String>> {
        match self {
            Verdict::Denied(d) => Some(d.iter().map(Denial::describe).collect()),
            Verdict::Allowed | Verdict::Failed(_) => None,
        }
    }
}

/// What becomes of a judged plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judged {
    /// Nothing denied it.
    Passed,
    /// Denied, and `policy_override` is on: the plan goes to the vote with
    /// these denials (`rule: message`), and an approve needs a reason.
    Overridable(Vec<String>),
    /// The unit fails with this reason: a denial with the override off, or
    /// policies that could not judge (never overridable).
    Failed(String),
}

impl Verdict {
    /// The verdict under the module's `policy_override`.
    pub fn judged(&self, policy_override: bool) -> Judged {
        match (self.overridable(), self.failure()) {
            (Some(denials), _) if policy_override => Judged::Overridable(denials),
            (_, Some(reason)) => Judged::Failed(reason),
            (_, None) => Judged::Passed,
        }
    }
}

/// The placeholder of [`PolicyCommand`]: the file of the plan's `show -json`.
pub const PLAN_JSON: &str = "{plan_json}";

/// How much of a `policy_command`'s output a denial keeps: its last lines
/// (the verdict is at the end), at most this many characters.
pub const COMMAND_TAIL_CHARS: usize = 1_000;

/// The lines of output a denial keeps at most.
pub const COMMAND_TAIL_LINES: usize = 20;

/// The module's `policy_command` (`POLICY_COMMAND`): a shell template with
/// [`PLAN_JSON`], run after each plan as terraform runs (the child user, the
/// plan's credentials and environment); its exit judges the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyCommand {
    template: String,
}

impl PolicyCommand {
    /// Checks the template: not empty, [`PLAN_JSON`] present, no other
    /// `{placeholder}` (a typo would reach the shell). Errors quote it.
    pub fn new(template: &str) -> std::result::Result<Self, String> {
        if template.trim().is_empty() {
            return Err("the policy command template is empty".into());
        }
        if !template.contains(PLAN_JSON) {
            return Err(format!(
                "the policy command template {template:?} lacks the placeholder {PLAN_JSON}"
            ));
        }
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            let after = &rest[open..];
            let Some(close) = after.find('}') else { break };
            let name = &after[..=close];
            let is_shell = open > 0 && rest.as_bytes()[open - 1] == b'$';
            let is_ident = name.len() > 2
                && name[1..name.len() - 1]
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_');
            if is_ident && !is_shell && name != PLAN_JSON {
                return Err(format!(
                    "the policy command template {template:?} has an unknown placeholder {name:?} (known: {PLAN_JSON})"
                ));
            }
            rest = &after[close + 1..];
        }
        Ok(PolicyCommand {
            template: template.to_string(),
        })
    }

    /// The command for the plan JSON at `path` (quoted for the shell).
    pub fn render(&self, path: &str) -> String {
        self.template
            .replace(PLAN_JSON, &crate::terraform::shell_quote(path))
    }

    /// The verdict of the command's exit: 0 allows; 126, 127 (the shell
    /// could not run it) and a signal (`None`) fail the unit; any other code
    /// denies, the output's tail ([`command_tail`]) as the message.
    pub fn verdict(&self, command: &str, code: Option<i32>, output: &str) -> Verdict {
        match code {
            Some(0) => Verdict::Allowed,
            Some(c @ (126 | 127)) => Verdict::Failed(PolicyFailure::Command {
                command: command.to_string(),
                message: format!(
                    "exit code {c} (not found or not executable): {}",
                    command_tail(output)
                ),
            }),
            None => Verdict::Failed(PolicyFailure::Command {
                command: command.to_string(),
                message: format!("a signal ended it: {}", command_tail(output)),
            }),
            Some(c) => Verdict::Denied(vec![Denial {
                rule: COMMAND_RULE.to_string(),
                message: match command_tail(output) {
                    tail if tail.is_empty() => format!("exit code {c}, no output"),
                    tail => format!("exit code {c}: {tail}"),
                },
            }]),
        }
    }
}

/// The last [`COMMAND_TAIL_LINES`] non-empty lines of `output` on one line
/// (` / ` between them), control characters dropped, at most
/// [`COMMAND_TAIL_CHARS`] characters (the end kept): one line for a status,
/// a comment, a mail and a page, each of which escapes it for itself.
pub fn command_tail(output: &str) -> String {
    let lines: Vec<String> = output
        .lines()
        .map(|l| l.chars().filter(|c| !c.is_control()).collect::<String>())
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    let kept = lines[lines.len().saturating_sub(COMMAND_TAIL_LINES)..].join(" / ");
    let count = kept.chars().count();
    if count <= COMMAND_TAIL_CHARS {
        kept
    } else {
        let cut: String = kept.chars().skip(count - COMMAND_TAIL_CHARS + 1).collect();
        format!("…{cut}")
    }
}

/// The port: an in-process Rego interpreter (no process, no network: a
/// policy cannot shell out). `live-ci-terragrunt`'s `policy` module implements it.
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
    fn policy_command_templates_need_the_placeholder_and_no_other() {
        let c = PolicyCommand::new("checkov -f {plan_json}").unwrap();
        assert_eq!(c.render("/tmp/a b.json"), "checkov -f '/tmp/a b.json'");
        assert_eq!(
            PolicyCommand::new("checkov -f plan.json").unwrap_err(),
            "the policy command template \"checkov -f plan.json\" lacks the placeholder {plan_json}"
        );
        assert!(
            PolicyCommand::new("x {plan_json} {plan_file}")
                .unwrap_err()
                .contains("unknown placeholder \"{plan_file}\"")
        );
        assert!(PolicyCommand::new("x {plan_json} ${HOME}").is_ok());
        assert!(PolicyCommand::new("  ").is_err());
    }

    #[test]
    fn policy_command_exits_deny_or_fail() {
        let c = PolicyCommand::new("check {plan_json}").unwrap();
        assert_eq!(c.verdict("check p", Some(0), "ok"), Verdict::Allowed);
        assert_eq!(
            c.verdict("check p", Some(1), "a\n\nFAILED: tags\n")
                .failure()
                .unwrap(),
            "denied by policy: policy_command: exit code 1: a / FAILED: tags"
        );
        assert!(matches!(
            c.verdict("check p", Some(127), "check: not found"),
            Verdict::Failed(PolicyFailure::Command { .. })
        ));
        assert!(matches!(
            c.verdict("check p", None, ""),
            Verdict::Failed(PolicyFailure::Command { .. })
        ));
        let long = "x".repeat(5000);
        let tail = command_tail(&long);
        assert_eq!(tail.chars().count(), COMMAND_TAIL_CHARS);
        assert!(tail.starts_with('…'));
        assert_eq!(command_tail("a\u{1b}[31mb"), "a[31mb");
    }

    #[test]
    fn verdicts_combine_failure_first_then_denials() {
        let d = |m: &str| Denial {
            rule: "r".into(),
            message: m.into(),
        };
        let failed = Verdict::Failed(PolicyFailure::Input {
            message: "x".into(),
        });
        assert_eq!(
            Verdict::Denied(vec![d("a")]).and(failed.clone()),
            failed.clone()
        );
        assert_eq!(
            Verdict::Denied(vec![d("b")]).and(Verdict::Denied(vec![d("a")])),
            Verdict::Denied(vec![d("a"), d("b")])
        );
        assert_eq!(Verdict::Allowed.and(Verdict::Allowed), Verdict::Allowed);
        assert_eq!(failed.overridable(), None);
        assert_eq!(
            Verdict::Denied(vec![d("a")]).overridable().unwrap(),
            ["r: a"]
        );
    }

    #[test]
    fn only_denials_are_overridable_and_only_when_on() {
        let denied = Verdict::Denied(vec![Denial {
            rule: "r".into(),
            message: "m".into(),
        }]);
        assert_eq!(
            denied.judged(true),
            Judged::Overridable(vec!["r: m".into()])
        );
        assert_eq!(
            denied.judged(false),
            Judged::Failed("denied by policy: r: m".into())
        );
        let failed = Verdict::Failed(PolicyFailure::Input {
            message: "x".into(),
        });
        assert!(matches!(failed.judged(true), Judged::Failed(_)));
        assert_eq!(Verdict::Allowed.judged(true), Judged::Passed);
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
