//! A saved plan as `terraform show -json <planfile>` describes it: the
//! resource changes counted as Terraform's own summary line counts them, plus
//! what that line leaves out (replacements, imports, forgotten resources and
//! output changes), so a plan that only changes outputs is still a plan and a
//! plan that changes nothing at all can be told apart from both.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::ChangeCounts;

/// The major version of the JSON plan format this reader understands
/// (Terraform has kept `1.x` since 0.12; a `2.x` would change the fields).
pub const FORMAT_MAJOR: &str = "1";

/// What a saved plan would do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanSummary {
    /// `create`, and the create half of a replacement.
    pub add: u32,
    /// `update` in place.
    pub change: u32,
    /// `delete`, and the delete half of a replacement.
    pub destroy: u32,
    /// Resources destroyed and created again (counted in `add` and `destroy` too,
    /// as Terraform's `Plan:` line does).
    pub replace: u32,
    /// Resources an `import` block brings under management.
    pub import: u32,
    /// Resources a `removed` block drops from the state without destroying them.
    pub forget: u32,
    /// Root module outputs that are created, changed or removed, sorted.
    pub outputs_changed: Vec<String>,
}

#[derive(Deserialize)]
struct ShowJson {
    format_version: Option<String>,
    #[serde(default)]
    errored: bool,
    #[serde(default)]
    resource_changes: Vec<ResourceChange>,
    #[serde(default)]
    output_changes: BTreeMap<String, Change>,
}

#[derive(Deserialize)]
struct ResourceChange {
    address: String,
    #[serde(default)]
    mode: String,
    change: Change,
}

#[derive(Deserialize)]
struct Change {
    actions: Vec<String>,
    /// Present (an object) when the change imports the resource.
    #[serde(default)]
    importing: Option<serde_json::Value>,
}

impl PlanSummary {
    /// Reads `terraform show -json` output of a saved plan. Output that is not
    /// such a plan (not JSON, a state instead of a plan, an unknown format
    /// major version, an errored plan, an action Terraform does not document)
    /// is an error quoting the offending value.
    pub fn from_show_json(text: &str) -> Result<Self, String> {
        let show = parse_plan(text.trim())?;
        let mut s = PlanSummary::default();
        for rc in &show.resource_changes {
            s.count_resource(rc)?;
        }
        for (name, change) in &show.output_changes {
            s.count_output(name, change)?;
        }
        Ok(s)
    }

    /// Step 2: counts one resource change the way Terraform's `Plan:` line does.
    fn count_resource(&mut self, rc: &ResourceChange) -> Result<(), String> {
        // Data sources are read, never changed.
        if rc.mode == "data" {
            return Ok(());
        }
        let actions: Vec<&str> = rc.change.actions.iter().map(String::as_str).collect();
        match actions.as_slice() {
            ["no-op"] | ["read"] => {}
            ["create"] => self.add += 1,
            ["update"] => self.change += 1,
            ["delete"] => self.destroy += 1,
            ["forget"] => self.forget += 1,
            ["delete", "create"] | ["create", "delete"] => {
                self.add += 1;
                self.destroy += 1;
                self.replace += 1;
            }
            // Terraform 1.10+: a replacement that forgets the old object.
            ["create", "forget"] | ["forget", "create"] => {
                self.add += 1;
                self.forget += 1;
            }
            other => {
                return Err(format!(
                    "terraform show -json: resource {:?} has unknown actions {other:?}",
                    rc.address
                ));
            }
        }
        if rc.change.importing.as_ref().is_some_and(|i| !i.is_null()) {
            self.import += 1;
        }
        Ok(())
    }

    /// Step 3: records one root module output that the plan changes.
    fn count_output(&mut self, name: &str, change: &Change) -> Result<(), String> {
        let actions: Vec<&str> = change.actions.iter().map(String::as_str).collect();
        match actions.as_slice() {
            ["no-op"] => {}
            ["create"] | ["update"] | ["delete"] | ["delete", "create"] | ["create", "delete"] => {
                self.outputs_changed.push(name.to_owned())
            }
            other => {
                return Err(format!(
                    "terraform show -json: output {name:?} has unknown actions {other:?}"
                ));
            }
        }
        Ok(())
    }

    /// The counts of Terraform's `Plan:` line.
    pub fn counts(&self) -> ChangeCounts {
        ChangeCounts {
            add: self.add,
            change: self.change,
            destroy: self.destroy,
        }
    }

    /// Whether a resource is created, changed, destroyed, imported or forgotten.
    pub fn has_resource_changes(&self) -> bool {
        self.add + self.change + self.destroy + self.import + self.forget > 0
    }

    /// Whether applying the plan changes anything, outputs included.
    pub fn has_changes(&self) -> bool {
        self.has_resource_changes() || !self.outputs_changed.is_empty()
    }

    /// One line for voters and commit statuses, e.g. `2 to add, 0 to change,
    /// 1 to destroy (1 replaced); outputs change: url`, `outputs change: url`
    /// or `no changes`.
    pub fn describe(&self) -> String {
        describe(
            self.counts(),
            self.replace,
            self.import,
            self.forget,
            &self.outputs_changed,
        )
    }
}
/// Step 1: parses `trimmed` and refuses what is not a readable, finished plan
/// (not JSON, an unknown format major version, a state, an errored plan).
fn parse_plan(trimmed: &str) -> Result<ShowJson, String> {
    let value: serde_json::Value = serde_json::from_str(trimmed).map_err(|e| {
        format!(
            "terraform show -json output is not a json plan ({e}): {:?}",
            head(trimmed)
        )
    })?;
    let has_planned_values = value.get("planned_values").is_some();
    let show: ShowJson = serde_json::from_value(value)
        .map_err(|e| format!("terraform show -json output is not a json plan: {e}"))?;
    match show.format_version.as_deref() {
        Some(v) if v.split('.').next() == Some(FORMAT_MAJOR) => {}
        Some(v) => {
            return Err(format!(
                "terraform show -json: plan format_version {v:?} is not {FORMAT_MAJOR}.x"
            ));
        }
        None => {
            return Err(format!(
                "terraform show -json output has no \"format_version\": {:?}",
                head(trimmed)
            ));
        }
    }
    // A state (`show -json` without the plan file, or of an empty working
    // directory) has no `planned_values`; reading it as "no changes"
    // would skip a real plan.
    if !has_planned_values {
        return Err(format!(
            "terraform show -json output is a state, not a plan (no \"planned_values\"; was the plan file passed?): {:?}",
            head(trimmed)
        ));
    }
    if show.errored {
        return Err(
            "terraform show -json: the saved plan is marked \"errored\" (terraform stopped planning on an error)"
                .into(),
        );
    }
    Ok(show)
}

/// [`PlanSummary::describe`] from its parts (the plan result that crosses the
/// state machine carries the parts, not the summary).
pub fn describe(
    counts: ChangeCounts,
    replace: u32,
    import: u32,
    forget: u32,
    outputs_changed: &[String],
) -> String {
    let resources = counts.add + counts.change + counts.destroy + import + forget > 0;
    let mut out = String::new();
    if resources {
        out = format!(
            "{} to add, {} to change, {} to destroy",
            counts.add, counts.change, counts.destroy
        );
        let extra: Vec<String> = [
            (replace, "replaced"),
            (import, "imported"),
            (forget, "forgotten"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        if !extra.is_empty() {
            out.push_str(&format!(" ({})", extra.join(", ")));
        }
    }
    if !outputs_changed.is_empty() {
        if resources {
            out.push_str("; ");
        }
        out.push_str(&format!("outputs change: {}", outputs_changed.join(", ")));
    }
    if out.is_empty() {
        out.push_str("no changes");
    }
    out
}

fn head(text: &str) -> String {
    text.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(resource_changes: &str, output_changes: &str) -> String {
        format!(
            r#"{{"format_version":"1.2","planned_values":{{}},"resource_changes":[{resource_changes}],"output_changes":{{{output_changes}}},"errored":false}}"#
        )
    }

    #[test]
    fn counts_like_the_plan_line_and_names_what_it_leaves_out() {
        let text = plan(
            r#"{"address":"a.new","mode":"managed","change":{"actions":["create"]}},
               {"address":"a.up","mode":"managed","change":{"actions":["update"]}},
               {"address":"a.rep","mode":"managed","change":{"actions":["create","delete"]}},
               {"address":"a.imp","mode":"managed","change":{"actions":["no-op"],"importing":{"id":"x"}}},
               {"address":"data.d.r","mode":"data","change":{"actions":["read"]}}"#,
            r#""url":{"actions":["update"]},"same":{"actions":["no-op"]}"#,
        );
        let s = PlanSummary::from_show_json(&text).unwrap();
        assert_eq!(
            (s.add, s.change, s.destroy, s.replace, s.import),
            (2, 1, 1, 1, 1)
        );
        assert_eq!(s.outputs_changed, vec!["url"]);
        assert_eq!(
            s.describe(),
            "2 to add, 1 to change, 1 to destroy (1 replaced, 1 imported); outputs change: url"
        );
    }

    #[test]
    fn bad_input_is_an_error_quoting_it() {
        let err = PlanSummary::from_show_json("Plan: 1 to add").unwrap_err();
        assert!(
            err.contains("not a json plan") && err.contains("\"Plan: 1 to add\""),
            "{err}"
        );
        let err = PlanSummary::from_show_json(r#"{"format_version":"2.0"}"#).unwrap_err();
        assert!(err.contains("\"2.0\""), "{err}");
        let err =
            PlanSummary::from_show_json(r#"{"format_version":"1.0","values":{}}"#).unwrap_err();
        assert!(err.contains("is a state"), "{err}");
        let err = PlanSummary::from_show_json(&plan(
            r#"{"address":"a.b","mode":"managed","change":{"actions":["explode"]}}"#,
            "",
        ))
        .unwrap_err();
        assert!(err.contains("\"a.b\"") && err.contains("explode"), "{err}");
        let errored = r#"{"format_version":"1.2","planned_values":{},"errored":true}"#;
        assert!(PlanSummary::from_show_json(errored).is_err());
    }
}
