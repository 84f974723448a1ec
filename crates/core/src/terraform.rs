//! What live-ci knows about Terraform without running it: the plan and apply
//! command templates, the summary lines of their output, which providers are new
//! (for rollbacks; reading them from `.tf` files is `live-ci-terragrunt`'s), the
//! resources `terraform show -json` lists for them, and where a saved plan is kept.

use std::collections::BTreeSet;

pub mod plan_json;
mod template;

pub use template::{
    CFG_PATH, CommandTemplate, PLAN_FILE, append_args, insert_args, shell_quote, with_plan_file,
};

/// Default plan command template (AWS: terragrunt). Commands run in the
/// unit's directory.
pub const DEFAULT_PLAN_COMMAND: &str = "terragrunt plan -input=false -out={plan_file}";
/// Default apply command template: applies exactly the saved plan.
pub const DEFAULT_APPLY_COMMAND: &str = "terragrunt apply -input=false -auto-approve {plan_file}";

/// Default template that describes a saved plan as JSON (read by
/// [`plan_json::PlanSummary`]); run in the unit's directory after the plan,
/// through the same tool so that terragrunt finds the unit's working directory.
pub const DEFAULT_SHOW_COMMAND: &str = "terragrunt show -json {plan_file}";

/// The show command for a saved plan: `{plan_file}` filled in, or the plan
/// file appended when the template does not place it.
pub fn show_command(command: &str, plan_file: &str) -> String {
    let quoted = shell_quote(plan_file);
    if command.contains(PLAN_FILE) {
        command.replace(PLAN_FILE, &quoted)
    } else {
        format!("{command} {quoted}")
    }
}

/// The command that renders a saved plan as text, the way terraform shows it
/// to people (`show -no-color`), from the JSON show command: its `-json`
/// argument replaced by `-no-color` (or dropped when the command has
/// `-no-color` already), everything else (the tool, terragrunt's
/// flags, `{plan_file}`) as configured. `None` when the command has no
/// `-json` word to replace: the plan text is then not shown.
pub fn text_show_command(json_show: &str) -> Option<String> {
    let words: Vec<&str> = json_show.split(' ').collect();
    let at = words.iter().position(|w| *w == "-json")?;
    let has_no_color = words.contains(&"-no-color");
    let out: Vec<&str> = words
        .iter()
        .enumerate()
        .filter_map(|(i, w)| match i == at {
            // `-no-color` once: in place of `-json`, or where it already was.
            true if has_no_color => None,
            true => Some("-no-color"),
            false => Some(*w),
        })
        .collect();
    Some(out.join(" "))
}

/// Which of the two commands a template is; decides how a missing
/// `{plan_file}` is added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Plans into a plan file.
    Plan,
    /// Applies that plan file.
    Apply,
}

impl Phase {
    /// `plan` or `apply`, as commands, statuses and the task's phase spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Plan => "plan",
            Phase::Apply => "apply",
        }
    }

    /// Parses `plan` / `apply` (the state machine's `LIVE_CI_PHASE`).
    pub fn parse(value: &str) -> Result<Self, String> {
        match value.trim() {
            "plan" => Ok(Phase::Plan),
            "apply" => Ok(Phase::Apply),
            other => Err(format!("phase {other:?} is neither \"plan\" nor \"apply\"")),
        }
    }
}

/// The executable that applies in an apply command, e.g. `terragrunt`: used
/// to run `state pull` / `show -json` with the same tool after an apply. It is
/// the first word of the last `&&`/`;`/`|` segment that runs `apply`, after
/// any `NAME=value` environment prefix, because a command may end with other
/// steps (`… apply {plan_file} && cp …`) that are not the tool. A command with
/// no `apply` word falls back to its last segment's first word.
pub fn program_of(command: &str) -> Option<&str> {
    let segments: Vec<&str> = command
        .split(['&', ';', '|'])
        .filter(|s| !s.trim().is_empty())
        .collect();
    let chosen = segments
        .iter()
        .rev()
        .find(|s| s.split_whitespace().any(|w| w == "apply"))
        .or_else(|| segments.last())?;
    chosen.split_whitespace().find(|w| !is_env_assignment(w))
}

/// `NAME=value`, a shell environment prefix of a command.
fn is_env_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// Resource counts from a plan or apply summary line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChangeCounts {
    /// Resources to add (added, for an apply).
    pub add: u32,
    /// Resources changed in place.
    pub change: u32,
    /// Resources to destroy (destroyed, for an apply).
    pub destroy: u32,
}

/// Removes ANSI colour sequences (Terraform colours its output unless told not to).
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for n in chars.by_ref() {
                    if n.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

fn numbers_before(line: &str, words: &[&str]) -> Option<Vec<u32>> {
    let mut out = Vec::with_capacity(words.len());
    for w in words {
        let at = line.find(w)?;
        let n = line[..at]
            .trim_end()
            .rsplit(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()?;
        out.push(n);
    }
    Some(out)
}

/// The counts of a plan's output: the last `Plan: X to add, Y to change, Z to
/// destroy.` line, zero for `No changes.`; `None` when neither appears (the
/// output is not a finished plan).
pub fn parse_plan_summary(output: &str) -> Option<ChangeCounts> {
    let text = strip_ansi(output);
    let mut found = None;
    for line in text.lines() {
        if let Some(at) = line.find("Plan: ") {
            let line = &line[at..];
            if let Some(n) = numbers_before(line, &[" to add", " to change", " to destroy"]) {
                found = Some(ChangeCounts {
                    add: n[0],
                    change: n[1],
                    destroy: n[2],
                });
            }
        } else if line.contains("No changes.") && found.is_none() {
            found = Some(ChangeCounts::default());
        }
    }
    found
}

/// The counts of an apply's output: the last `Apply complete! Resources: X
/// added, Y changed, Z destroyed.` (or `Destroy complete! Resources: Z destroyed.`).
pub fn parse_apply_summary(output: &str) -> Option<ChangeCounts> {
    let text = strip_ansi(output);
    let mut found = None;
    for line in text.lines() {
        if let Some(at) = line.find("Apply complete! Resources:") {
            let line = &line[at..];
            if let Some(n) = numbers_before(line, &[" added", " changed", " destroyed"]) {
                found = Some(ChangeCounts {
                    add: n[0],
                    change: n[1],
                    destroy: n[2],
                });
            }
        } else if let Some(at) = line.find("Destroy complete! Resources:")
            && let Some(n) = numbers_before(&line[at..], &[" destroyed"])
        {
            found = Some(ChangeCounts {
                destroy: n[0],
                ..ChangeCounts::default()
            });
        }
    }
    found
}

/// Whether an apply failed because its saved plan no longer matches the state.
pub fn is_stale_plan(output: &str) -> bool {
    let text = strip_ansi(output).to_ascii_lowercase();
    text.contains("saved plan is stale") || text.contains("plan file is stale")
}

/// Where a plan is saved: keyed by execution and commit, so an apply can
/// check it applies the plan of its own execution at its own commit.
pub fn plan_key(execution_id: &str, commit_id: &str) -> String {
    format!("plans/{execution_id}/{commit_id}.tfplan")
}

/// The fully qualified address of a provider source (`hashicorp/null` →
/// `registry.terraform.io/hashicorp/null`; the built-in `terraform` provider
/// → `terraform.io/builtin/terraform`).
pub fn provider_address(source: &str) -> String {
    let s = source.trim().to_ascii_lowercase();
    let parts: Vec<&str> = s.split('/').collect();
    match parts.as_slice() {
        ["terraform"] => "terraform.io/builtin/terraform".into(),
        [name] => format!("registry.terraform.io/hashicorp/{name}"),
        [ns, name] => format!("registry.terraform.io/{ns}/{name}"),
        _ => s,
    }
}

/// Providers at head that the unit did not use at base (all of them for a new unit).
pub fn new_providers(head: &BTreeSet<String>, base: Option<&BTreeSet<String>>) -> Vec<String> {
    head.iter()
        .filter(|p| base.is_none_or(|b| !b.contains(*p)))
        .cloned()
        .collect()
}

/// The providers a saved plan's `show -json` uses (its configuration's
/// provider blocks, every module's, and the provider of each resource change)
/// that no object of its prior state belongs to: the plan's own account of the
/// unit's new providers. Unlike the static reading of a unit's files (engine
/// `ProviderIndex`), it sees what terragrunt generates or fetches (a remote
/// `terraform { source }`, a generated provider block). A provider the unit
/// configured before but had no object of counts as new here: its resources
/// are all ones this change creates.
pub fn providers_new_in_plan(show: &serde_json::Value) -> Vec<String> {
    let mut used = BTreeSet::new();
    if let Some(configs) = show
        .pointer("/configuration/provider_config")
        .and_then(|c| c.as_object())
    {
        for config in configs.values() {
            if let Some(name) = config.get("full_name").and_then(|n| n.as_str()) {
                used.insert(provider_address(name));
            }
        }
    }
    for rc in show
        .get("resource_changes")
        .and_then(|r| r.as_array())
        .into_iter()
        .flatten()
    {
        if let Some(name) = rc.get("provider_name").and_then(|n| n.as_str()) {
            used.insert(provider_address(name));
        }
    }
    let mut existing = BTreeSet::new();
    let mut stack: Vec<&serde_json::Value> = show
        .pointer("/prior_state/values/root_module")
        .into_iter()
        .collect();
    while let Some(module) = stack.pop() {
        for r in module
            .get("resources")
            .and_then(|r| r.as_array())
            .into_iter()
            .flatten()
        {
            if let Some(name) = r.get("provider_name").and_then(|n| n.as_str()) {
                existing.insert(provider_address(name));
            }
        }
        stack.extend(
            module
                .get("child_modules")
                .and_then(|c| c.as_array())
                .into_iter()
                .flatten(),
        );
    }
    used.difference(&existing).cloned().collect()
}

/// The providers an apply records the resources of, for a rollback:
/// `recorded`, the static reading's (providers the unit's files use at the
/// merge commit and did not at its first parent), and of the plan's own
/// (`in_plan`, [`providers_new_in_plan`]) only those the static reading of
/// the unit at the merge commit does not see at all (`seen_statically`): what
/// a remote `terraform { source }` or a generated provider block brings. The
/// static reading decides every provider it can see, because "no object in
/// the prior state" is wider than "new in this change": a provider the unit
/// declared before but never created anything with (or a unit never applied)
/// would count as new, and a failed run would destroy what an earlier change
/// added. Where the files are blind, the plan is the only account there is.
pub fn providers_to_record(
    recorded: &[String],
    in_plan: &[String],
    seen_statically: &BTreeSet<String>,
) -> Vec<String> {
    let mut out: BTreeSet<String> = recorded.iter().cloned().collect();
    out.extend(
        in_plan
            .iter()
            .filter(|p| !seen_statically.contains(*p))
            .cloned(),
    );
    out.into_iter().collect()
}

/// The addresses of the resources in `terraform show -json` output (state)
/// whose provider is one of `providers`, child modules included. Data sources
/// are left out: a rollback destroys only managed resources.
pub fn resources_of_providers(
    show_json: &str,
    providers: &[String],
) -> Result<Vec<String>, String> {
    let value: serde_json::Value = serde_json::from_str(show_json.trim())
        .map_err(|e| format!("terraform show -json output is not json: {e}"))?;
    let wanted: BTreeSet<String> = providers.iter().map(|p| provider_address(p)).collect();
    let mut out = Vec::new();
    let mut stack: Vec<&serde_json::Value> =
        value.pointer("/values/root_module").into_iter().collect();
    while let Some(module) = stack.pop() {
        for r in module
            .get("resources")
            .and_then(|r| r.as_array())
            .into_iter()
            .flatten()
        {
            if r.get("mode").and_then(|m| m.as_str()) != Some("managed") {
                continue;
            }
            let provider = r
                .get("provider_name")
                .and_then(|p| p.as_str())
                .map(provider_address);
            if let (Some(p), Some(addr)) = (provider, r.get("address").and_then(|a| a.as_str()))
                && wanted.contains(&p)
            {
                out.push(addr.to_string());
            }
        }
        stack.extend(
            module
                .get("child_modules")
                .and_then(|c| c.as_array())
                .into_iter()
                .flatten(),
        );
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The addresses of the resources of `providers` in a state as `terraform
/// state pull` prints it (format version 4), child modules included, data
/// sources left out: the same list [`resources_of_providers`] reads from
/// `terraform show -json`, which must start every provider in the state for
/// its schema (seconds for a large one) where `state pull` starts none.
/// `Ok(None)` for what this does not read as terraform would print it
/// (another format version, a provider it cannot parse, an instance key that
/// needs more than plain quoting): the caller asks `show -json` then.
pub fn resources_of_providers_in_state(
    state_json: &str,
    providers: &[String],
) -> Result<Option<Vec<String>>, String> {
    let value: serde_json::Value = serde_json::from_str(state_json.trim())
        .map_err(|e| format!("terraform state pull output is not json: {e}"))?;
    if value.get("version").and_then(serde_json::Value::as_u64) != Some(4) {
        return Ok(None);
    }
    let wanted: BTreeSet<String> = providers.iter().map(|p| provider_address(p)).collect();
    let mut out = Vec::new();
    let resources = value.get("resources").and_then(|r| r.as_array());
    for r in resources.into_iter().flatten() {
        let text = |k: &str| r.get(k).and_then(|v| v.as_str());
        if text("mode") != Some("managed") {
            continue;
        }
        let (Some(provider), Some(kind), Some(name)) = (
            text("provider").and_then(provider_of_config),
            text("type"),
            text("name"),
        ) else {
            return Ok(None);
        };
        if !wanted.contains(&provider_address(provider)) {
            continue;
        }
        let base = match text("module") {
            Some(module) => format!("{module}.{kind}.{name}"),
            None => format!("{kind}.{name}"),
        };
        let instances = r.get("instances").and_then(|i| i.as_array());
        for instance in instances.into_iter().flatten() {
            let key = match instance.get("index_key") {
                None | Some(serde_json::Value::Null) => String::new(),
                Some(serde_json::Value::Number(n)) if n.is_u64() => format!("[{n}]"),
                Some(serde_json::Value::String(k)) => match quoted_key(k) {
                    Some(quoted) => format!("[{quoted}]"),
                    None => return Ok(None),
                },
                Some(_) => return Ok(None),
            };
            out.push(format!("{base}{key}"));
        }
    }
    out.sort();
    out.dedup();
    Ok(Some(out))
}

/// The provider source in a state's provider configuration address
/// (`provider["registry.terraform.io/hashicorp/aws"]`, maybe `.alias`).
fn provider_of_config(config: &str) -> Option<&str> {
    let rest = config.split_once("provider[\"")?.1;
    Some(rest.split_once("\"]")?.0)
}

/// A string instance key quoted as terraform prints it in an address, for
/// the keys where that is plain: printable ASCII, with `"` and `\` escaped
/// and no template introducer (`${`, `%{`, which terraform doubles). `None`
/// for any other key.
fn quoted_key(key: &str) -> Option<String> {
    if key.contains("${") || key.contains("%{") || !key.bytes().all(|b| (b' '..=b'~').contains(&b))
    {
        return None;
    }
    Some(format!(
        "\"{}\"",
        key.replace('\\', "\\\\").replace('"', "\\\"")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_adds_only_providers_the_static_reading_cannot_see() {
        let s = |v: &[&str]| v.iter().map(|p| p.to_string()).collect::<Vec<_>>();
        let aws = "registry.terraform.io/hashicorp/aws";
        let null = "registry.terraform.io/hashicorp/null";
        let builtin = "terraform.io/builtin/terraform";
        let fake = "example.test/testing/fake";
        // The unit's files show aws (declared at base too, never used: no
        // object in state) and the built-in provider; a generated block
        // brings `fake`. Only `fake` comes from the plan.
        let seen: BTreeSet<String> = [aws, builtin].iter().map(|p| p.to_string()).collect();
        assert_eq!(
            providers_to_record(&s(&[null]), &s(&[aws, builtin, fake]), &seen),
            s(&[fake, null])
        );
        // Files that show nothing: the plan decides.
        assert_eq!(
            providers_to_record(&[], &s(&[builtin, fake]), &BTreeSet::new()),
            s(&[fake, builtin])
        );
        // What the static reading calls new stays new, whatever the plan says.
        assert_eq!(providers_to_record(&s(&[aws]), &[], &seen), s(&[aws]));
    }

    #[test]
    fn new_providers_of_a_plan_are_those_its_prior_state_has_no_object_of() {
        let show = serde_json::json!({
            "configuration": {"provider_config": {
                "module.m:aws": {"name": "aws", "full_name": "registry.terraform.io/hashicorp/aws"},
                "null": {"name": "null", "full_name": "registry.terraform.io/hashicorp/null"}
            }},
            "resource_changes": [
                {"address": "module.m.aws_ssm_parameter.p", "provider_name": "registry.terraform.io/hashicorp/aws"},
                {"address": "terraform_data.t", "provider_name": "terraform.io/builtin/terraform"},
                {"address": "null_resource.n", "provider_name": "registry.terraform.io/hashicorp/null"}
            ],
            "prior_state": {"values": {"root_module": {
                "resources": [],
                "child_modules": [{"resources": [
                    {"address": "module.x.null_resource.old", "mode": "managed",
                     "provider_name": "registry.terraform.io/hashicorp/null"}
                ]}]
            }}}
        });
        assert_eq!(
            providers_new_in_plan(&show),
            vec![
                "registry.terraform.io/hashicorp/aws".to_string(),
                "terraform.io/builtin/terraform".to_string()
            ]
        );
        assert!(providers_new_in_plan(&serde_json::json!({})).is_empty());
    }

    #[test]
    fn the_text_show_command_is_the_json_one_with_no_color() {
        assert_eq!(
            text_show_command(DEFAULT_SHOW_COMMAND).as_deref(),
            Some("terragrunt show -no-color {plan_file}")
        );
        assert_eq!(
            text_show_command("terraform show -json").as_deref(),
            Some("terraform show -no-color")
        );
        assert_eq!(
            text_show_command("terraform show -json -no-color {plan_file}").as_deref(),
            Some("terraform show -no-color {plan_file}")
        );
        assert_eq!(text_show_command("my-show {plan_file}"), None);
        assert_eq!(text_show_command("show --json-ish"), None);
    }

    #[test]
    fn the_program_is_the_tool_of_the_segment_that_applies() {
        assert_eq!(
            program_of("terraform init && terragrunt apply x"),
            Some("terragrunt")
        );
        // A step after the apply is not the tool (it used to be: `cp state
        // pull` ran after every apply with new providers).
        assert_eq!(
            program_of("tofu apply -auto-approve {plan_file} && cp a b"),
            Some("tofu")
        );
        assert_eq!(
            program_of("TF_LOG=debug terraform apply {plan_file}; echo done"),
            Some("terraform")
        );
        assert_eq!(program_of("my-wrapper --x"), Some("my-wrapper"));
        assert_eq!(program_of("  "), None);
    }

    #[test]
    fn summaries_are_read_from_coloured_output() {
        let plan = "\u{1b}[1mPlan:\u{1b}[0m 2 to add, 1 to change, 0 to destroy.\n";
        assert_eq!(
            parse_plan_summary(plan),
            Some(ChangeCounts {
                add: 2,
                change: 1,
                destroy: 0
            })
        );
        assert_eq!(
            parse_plan_summary("No changes. Your infrastructure matches the configuration."),
            Some(ChangeCounts::default())
        );
        assert_eq!(parse_plan_summary("Error: bad"), None);
        let apply = "Apply complete! Resources: 3 added, 0 changed, 4 destroyed.";
        assert_eq!(
            parse_apply_summary(apply),
            Some(ChangeCounts {
                add: 3,
                change: 0,
                destroy: 4
            })
        );
        assert_eq!(
            parse_apply_summary("Destroy complete! Resources: 5 destroyed."),
            Some(ChangeCounts {
                add: 0,
                change: 0,
                destroy: 5
            })
        );
        assert!(is_stale_plan(
            "Error: Saved plan is stale\n\nThe given plan file"
        ));
        assert!(!is_stale_plan("Error: something else"));
    }

    #[test]
    fn resources_of_new_providers_come_from_the_state() {
        let show = r#"{"values":{"root_module":{"resources":[
            {"address":"terraform_data.a","mode":"managed","provider_name":"terraform.io/builtin/terraform"},
            {"address":"aws_s3_bucket.b","mode":"managed","provider_name":"registry.terraform.io/hashicorp/aws"},
            {"address":"data.terraform_remote_state.c","mode":"data","provider_name":"terraform.io/builtin/terraform"}],
            "child_modules":[{"resources":[
            {"address":"module.m.terraform_data.d","mode":"managed","provider_name":"terraform.io/builtin/terraform"}]}]}}}"#;
        assert_eq!(
            resources_of_providers(show, &["terraform".into()]).unwrap(),
            vec!["module.m.terraform_data.d", "terraform_data.a"]
        );
        assert_eq!(
            resources_of_providers("{}", &["aws".into()]).unwrap(),
            Vec::<String>::new()
        );
        assert!(resources_of_providers("nope", &[]).is_err());
    }

    #[test]
    fn resources_of_new_providers_come_from_the_pulled_state() {
        let state = r#"{"version":4,"resources":[
            {"mode":"managed","type":"terraform_data","name":"a","provider":"provider[\"terraform.io/builtin/terraform\"]",
             "instances":[{"attributes":{}}]},
            {"mode":"managed","type":"terraform_data","name":"n","provider":"provider[\"terraform.io/builtin/terraform\"]",
             "each":"list","instances":[{"index_key":0},{"index_key":1}]},
            {"mode":"managed","type":"terraform_data","name":"k","provider":"provider[\"terraform.io/builtin/terraform\"].alias",
             "each":"map","instances":[{"index_key":"x"},{"index_key":"q\"b\\s"}]},
            {"module":"module.m[\"one\"]","mode":"managed","type":"terraform_data","name":"d",
             "provider":"provider[\"terraform.io/builtin/terraform\"]","instances":[{},{"deposed":"00ab"}]},
            {"mode":"managed","type":"aws_s3_bucket","name":"b","provider":"provider[\"registry.terraform.io/hashicorp/aws\"]",
             "instances":[{}]},
            {"mode":"data","type":"terraform_remote_state","name":"c","provider":"provider[\"terraform.io/builtin/terraform\"]",
             "instances":[{}]}]}"#;
        assert_eq!(
            resources_of_providers_in_state(state, &["terraform".into()]).unwrap(),
            Some(vec![
                "module.m[\"one\"].terraform_data.d".to_string(),
                "terraform_data.a".into(),
                "terraform_data.k[\"q\\\"b\\\\s\"]".into(),
                "terraform_data.k[\"x\"]".into(),
                "terraform_data.n[0]".into(),
                "terraform_data.n[1]".into(),
            ])
        );
        assert_eq!(
            resources_of_providers_in_state(state, &["aws".into()]).unwrap(),
            Some(vec!["aws_s3_bucket.b".to_string()])
        );
        // What it does not read as terraform prints it goes to `show -json`.
        let unread = [
            r#"{"version":3,"modules":[]}"#,
            r#"{"version":4,"resources":[{"mode":"managed","type":"t","name":"n","provider":"aws","instances":[{}]}]}"#,
            r#"{"version":4,"resources":[{"mode":"managed","type":"terraform_data","name":"n","provider":"provider[\"terraform.io/builtin/terraform\"]","instances":[{"index_key":"a${b}"}]}]}"#,
            r#"{"version":4,"resources":[{"mode":"managed","type":"terraform_data","name":"n","provider":"provider[\"terraform.io/builtin/terraform\"]","instances":[{"index_key":"é"}]}]}"#,
        ];
        for state in unread {
            assert_eq!(
                resources_of_providers_in_state(state, &["terraform".into()]).unwrap(),
                None,
                "{state}"
            );
        }
        assert!(resources_of_providers_in_state("", &[]).is_err());
    }
}
