//! The Rego adapter of the [`PolicyEngine`] port: `regorus`, in process,
//! built without its `http`, `net`, `time` and `opa-runtime` builtins, so a
//! policy reads only its input (the plan) and cannot reach the network, the
//! clock or the environment, nor start a process.

use std::num::NonZeroU32;
use std::time::Duration;

use live_ci_core::policy::{
    DENY_RULE, Denial, PolicyEngine, PolicyFailure, PolicyFile, ROOT_PACKAGE, Verdict,
};
use regorus::{Engine, Value};

/// How long one plan's evaluation may take: a policy that loops (or a plan
/// that makes it slow) fails the unit instead of holding the task.
pub const EVAL_LIMIT: Duration = Duration::from_secs(30);

/// Evaluates policies with `regorus`, one fresh interpreter per plan.
#[derive(Debug, Clone, Copy, Default)]
pub struct RegoPolicies {
    /// Overrides [`EVAL_LIMIT`] (tests).
    pub limit: Option<Duration>,
}

impl PolicyEngine for RegoPolicies {
    fn evaluate(&self, policies: &[PolicyFile], plan_json: &str) -> Verdict {
        match self.run(policies, plan_json) {
            Ok(mut denials) => {
                if denials.is_empty() {
                    Verdict::Allowed
                } else {
                    denials.sort();
                    denials.dedup();
                    Verdict::Denied(denials)
                }
            }
            Err(f) => Verdict::Failed(f),
        }
    }
}

impl RegoPolicies {
    fn run(&self, policies: &[PolicyFile], plan_json: &str) -> Result<Vec<Denial>, PolicyFailure> {
        let mut engine = Engine::new();
        engine.set_execution_timer_config(regorus::utils::limits::ExecutionTimerConfig {
            limit: self.limit.unwrap_or(EVAL_LIMIT),
            check_interval: NonZeroU32::MIN,
        });
        // A builtin's error (a bad regex, a division by zero) fails the
        // unit rather than silently leaving a rule undefined.
        engine.set_strict_builtin_errors(true);
        let mut packages: Vec<(String, String)> = Vec::new();
        for p in policies {
            let file = p.path.as_str().to_string();
            let package = engine
                .add_policy(file.clone(), p.text.clone())
                .map_err(|e| parse_failure(&file, &format!("{e:#}")))?;
            let under_root = package == format!("data.{ROOT_PACKAGE}")
                || package.starts_with(&format!("data.{ROOT_PACKAGE}."));
            if !under_root {
                return Err(PolicyFailure::Package {
                    file,
                    package: package.trim_start_matches("data.").to_string(),
                });
            }
            // Only a package that declares `deny` is asked: asking for a rule
            // no module declares is an error in regorus.
            let declares = engine
                .has_declared_rule_rooted_at(&file, DENY_RULE)
                .map_err(|e| parse_failure(&file, &format!("{e:#}")))?;
            if declares && !packages.iter().any(|(q, _)| *q == package) {
                packages.push((package, file));
            }
        }
        let input = Value::from_json_str(plan_json).map_err(|e| PolicyFailure::Input {
            message: format!("{e:#}"),
        })?;
        engine.set_input(input);
        let mut denials = Vec::new();
        for (package, _) in &packages {
            let rule = format!("{package}.{DENY_RULE}");
            let value = engine.eval_rule(rule.clone()).map_err(|e| {
                let message = format!("{e:#}");
                // A compile error (an unknown function, a bad reference)
                // surfaces on first evaluation, with its file and line.
                match position(&message) {
                    Some((file, line)) => PolicyFailure::Parse {
                        file,
                        line,
                        message: last_line(&message),
                    },
                    None => PolicyFailure::Eval {
                        rule: rule.clone(),
                        message: last_line(&message),
                    },
                }
            })?;
            let items: Vec<Value> = match value {
                Value::Undefined => Vec::new(),
                Value::Set(s) => s.iter().cloned().collect(),
                Value::Array(a) => a.iter().cloned().collect(),
                other => {
                    return Err(PolicyFailure::NotStrings {
                        rule,
                        value: short(&other.to_string()),
                    });
                }
            };
            for item in items {
                match item {
                    Value::String(s) => denials.push(Denial {
                        rule: rule.clone(),
                        message: s.to_string(),
                    }),
                    other => {
                        return Err(PolicyFailure::NotStrings {
                            rule,
                            value: short(&other.to_string()),
                        });
                    }
                }
            }
        }
        Ok(denials)
    }
}

/// A load error as file and line: regorus's messages carry
/// `--> file:line:col`; one without it is placed at line 1 of the file.
fn parse_failure(file: &str, message: &str) -> PolicyFailure {
    let (file, line) = position(message).unwrap_or_else(|| (file.to_string(), 1));
    PolicyFailure::Parse {
        file,
        line,
        message: last_line(message),
    }
}

/// The `--> file:line:col` of a regorus message.
fn position(message: &str) -> Option<(String, u32)> {
    let at = message
        .lines()
        .find_map(|l| l.trim().strip_prefix("--> "))?;
    let mut parts = at.rsplitn(3, ':');
    let _col = parts.next()?;
    let line = parts.next()?.parse().ok()?;
    let file = parts.next()?.to_string();
    Some((file, line))
}

/// The message proper (regorus ends with `error: <what>` after a source
/// excerpt), without a leading `error: `.
fn last_line(message: &str) -> String {
    let line = message
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(message)
        .trim();
    short(line.strip_prefix("error: ").unwrap_or(line))
}

/// At most 500 characters of a value shown in a message.
fn short(s: &str) -> String {
    let mut out: String = s.chars().take(500).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use live_ci_core::path::RepoPath;

    fn file(path: &str, text: &str) -> PolicyFile {
        PolicyFile {
            path: RepoPath::new(path).unwrap(),
            text: text.to_string(),
        }
    }

    const PLAN: &str = r#"{"format_version":"1.2","resource_changes":[
        {"address":"aws_iam_user.u","type":"aws_iam_user","change":{"actions":["create"],"after":{"name":"bob","tags":null}}}
    ]}"#;

    const DENY_IAM_USER: &str = r#"package live_ci.iam

deny contains msg if {
    some rc in input.resource_changes
    rc.type == "aws_iam_user"
    msg := sprintf("%s: IAM users are not allowed, use roles", [rc.address])
}
"#;

    #[test]
    fn a_denial_carries_the_rule_and_the_message() {
        let v = RegoPolicies::default().evaluate(&[file("policy/iam.rego", DENY_IAM_USER)], PLAN);
        assert_eq!(
            v,
            Verdict::Denied(vec![Denial {
                rule: "data.live_ci.iam.deny".into(),
                message: "aws_iam_user.u: IAM users are not allowed, use roles".into(),
            }])
        );
    }

    #[test]
    fn no_denial_is_allowed_and_packages_without_deny_are_fine() {
        let plan = r#"{"resource_changes":[]}"#;
        let helper = "package live_ci.lib\n\nis_user(rc) if rc.type == \"aws_iam_user\"\n";
        let v = RegoPolicies::default().evaluate(
            &[
                file("policy/iam.rego", DENY_IAM_USER),
                file("policy/lib.rego", helper),
            ],
            plan,
        );
        assert_eq!(v, Verdict::Allowed);
    }

    #[test]
    fn a_policy_that_does_not_parse_names_file_and_line() {
        let broken = "package live_ci.iam\n\ndeny contains msg if {\n    msg := \n}\n";
        let v = RegoPolicies::default().evaluate(&[file("policy/broken.rego", broken)], PLAN);
        let Verdict::Failed(PolicyFailure::Parse { file, line, .. }) = &v else {
            panic!("{v:?}");
        };
        assert_eq!(file, "policy/broken.rego");
        assert!(*line == 4 || *line == 5, "{v:?}");
        let text = v.failure().unwrap();
        eprintln!("{text}");
        assert!(
            text.starts_with("policy \"policy/broken.rego\" line "),
            "{text}"
        );
    }

    #[test]
    fn a_package_outside_live_ci_is_refused() {
        let v = RegoPolicies::default().evaluate(
            &[file(
                "policy/x.rego",
                "package other\n\ndeny contains \"x\" if true\n",
            )],
            PLAN,
        );
        assert_eq!(
            v.failure().unwrap(),
            "policy \"policy/x.rego\" declares package \"other\", not \"live_ci\" or under it"
        );
    }

    #[test]
    fn a_deny_that_is_not_strings_fails_the_unit() {
        let v = RegoPolicies::default().evaluate(
            &[file(
                "policy/x.rego",
                "package live_ci.x\n\ndeny contains 3 if true\n",
            )],
            PLAN,
        );
        assert!(
            matches!(&v, Verdict::Failed(PolicyFailure::NotStrings { rule, .. }) if rule == "data.live_ci.x.deny"),
            "{v:?}"
        );
    }

    /// No network or process builtin exists in this build: a policy that
    /// calls one does not compile.
    #[test]
    fn http_send_is_not_available() {
        let p = "package live_ci.x\n\ndeny contains msg if {\n    r := http.send({\"method\": \"get\", \"url\": \"http://127.0.0.1:1\"})\n    msg := sprintf(\"%v\", [r])\n}\n";
        let v = RegoPolicies::default().evaluate(&[file("policy/x.rego", p)], PLAN);
        assert!(matches!(v, Verdict::Failed(_)), "{v:?}");
        let text = v.failure().unwrap();
        eprintln!("{text}");
        assert!(text.contains("http.send"), "{text}");
    }

    #[test]
    fn positions_are_read_from_regorus_messages() {
        assert_eq!(
            position("\n--> policy/a.rego:4:9\n  |\n4 | x\n  | ^\nerror: bad"),
            Some(("policy/a.rego".to_string(), 4))
        );
        assert_eq!(last_line("\n--> a:1:1\nerror: bad thing"), "bad thing");
    }
}
