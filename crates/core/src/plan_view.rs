//! A saved plan as a voter reads it: terraform's `show -json` of the plan →
//! a view model (resource by resource: the action and each attribute that
//! changes, before → after, sensitive values masked, unknown values "known
//! after apply") → HTML for the approval page and lines for the mail. Pure:
//! every value from the plan is attacker-controlled and is escaped for its
//! medium here; sizes are bounded so a 5,000-resource plan stays a usable page.

use serde::Deserialize;
use serde_json::Value;

use crate::escape::html::escape_html as h;
use crate::escape::text::visible;

/// Characters of one shown value before it is cut (a policy document can be
/// kilobytes; the page is for deciding, the logs keep the whole plan).
pub const MAX_VALUE_CHARS: usize = 200;
/// Attributes shown per resource; the rest are counted.
pub const MAX_ATTRIBUTES: usize = 40;
/// Plans with at most this many resource changes show every group open.
pub const OPEN_GROUPS_UP_TO: usize = 30;
/// Bytes of page after which resources are listed without their attributes:
/// a Function URL answers at most 6 MB, and a browser must stay responsive.
pub const MAX_PAGE_BYTES: usize = 2_000_000;
/// Nesting followed into an attribute before it is shown as one value.
const MAX_DEPTH: usize = 12;

/// What the plan does to one resource, in terraform's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeAction {
    Create,
    Update,
    Delete,
    /// Delete then create, or create then delete.
    Replace,
    Read,
    /// A `removed` block drops it from the state without destroying it.
    Forget,
}

impl ChangeAction {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeAction::Create => "create",
            ChangeAction::Update => "update",
            ChangeAction::Delete => "delete",
            ChangeAction::Replace => "replace",
            ChangeAction::Read => "read",
            ChangeAction::Forget => "forget",
        }
    }

    /// From `change.actions`; `None` for a no-op (nothing to show).
    fn of(actions: &[String]) -> Option<ChangeAction> {
        let has = |a: &str| actions.iter().any(|x| x == a);
        if has("create") && has("delete") {
            Some(ChangeAction::Replace)
        } else if has("create") {
            Some(ChangeAction::Create)
        } else if has("delete") {
            Some(ChangeAction::Delete)
        } else if has("update") {
            Some(ChangeAction::Update)
        } else if has("read") {
            Some(ChangeAction::Read)
        } else if has("forget") {
            Some(ChangeAction::Forget)
        } else {
            None
        }
    }
}

/// One side of an attribute change, as shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shown {
    /// The attribute is not there on this side.
    Absent,
    /// A value, JSON-encoded and cut at [`MAX_VALUE_CHARS`].
    Value(String),
    /// Marked sensitive by the plan: never shown.
    Sensitive,
    /// `after_unknown`: known after apply.
    Unknown,
}

impl Shown {
    pub fn text(&self) -> &str {
        match self {
            Shown::Absent => "(none)",
            Shown::Value(v) => v,
            Shown::Sensitive => "(sensitive value)",
            Shown::Unknown => "(known after apply)",
        }
    }
}

/// One attribute that changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttributeChange {
    /// Dotted path, list indices in brackets: `tags.Name`, `ingress[0].port`.
    pub path: String,
    pub before: Shown,
    pub after: Shown,
}

/// One resource the plan changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceView {
    pub address: String,
    pub resource_type: String,
    pub action: ChangeAction,
    /// At most [`MAX_ATTRIBUTES`].
    pub attributes: Vec<AttributeChange>,
    /// Changed attributes not listed (over [`MAX_ATTRIBUTES`]).
    pub more_attributes: usize,
}

/// The resources of one type, in plan order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeGroup {
    pub resource_type: String,
    pub resources: Vec<ResourceView>,
}

/// The whole plan as the page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PlanView {
    /// Groups by resource type, sorted by type.
    pub groups: Vec<TypeGroup>,
    /// Root module outputs that change.
    pub outputs: Vec<String>,
}

#[derive(Deserialize)]
struct ShowJson {
    #[serde(default)]
    resource_changes: Vec<RawChange>,
    #[serde(default)]
    output_changes: serde_json::Map<String, Value>,
}

#[derive(Deserialize)]
struct RawChange {
    address: String,
    #[serde(rename = "type", default)]
    resource_type: String,
    change: RawInner,
}

#[derive(Deserialize)]
struct RawInner {
    #[serde(default)]
    actions: Vec<String>,
    #[serde(default)]
    before: Value,
    #[serde(default)]
    after: Value,
    #[serde(default)]
    after_unknown: Value,
    #[serde(default)]
    before_sensitive: Value,
    #[serde(default)]
    after_sensitive: Value,
}

impl PlanView {
    /// Parses `show -json` output; the error says what is wrong with it.
    pub fn from_show_json(json: &[u8]) -> Result<PlanView, String> {
        let show: ShowJson = serde_json::from_slice(json)
            .map_err(|e| format!("the plan JSON is not terraform's show -json: {e}"))?;
        Ok(Self::from_parsed(show))
    }

    fn from_parsed(show: ShowJson) -> PlanView {
        let mut groups: std::collections::BTreeMap<String, Vec<ResourceView>> =
            std::collections::BTreeMap::new();
        for rc in show.resource_changes {
            let Some(action) = ChangeAction::of(&rc.change.actions) else {
                continue;
            };
            let mut attributes = Vec::new();
            let mut more = 0usize;
            let c = &rc.change;
            walk(
                &mut String::new(),
                Side::new(&c.before, &c.before_sensitive, &Value::Null),
                Side::new(&c.after, &c.after_sensitive, &c.after_unknown),
                0,
                &mut |change| {
                    if attributes.len() < MAX_ATTRIBUTES {
                        attributes.push(change);
                    } else {
                        more += 1;
                    }
                },
            );
            groups
                .entry(rc.resource_type.clone())
                .or_default()
                .push(ResourceView {
                    address: rc.address,
                    resource_type: rc.resource_type,
                    action,
                    attributes,
                    more_attributes: more,
                });
        }
        let outputs = show
            .output_changes
            .into_iter()
            .filter(|(_, c)| {
                c.get("actions")
                    .and_then(Value::as_array)
                    .is_some_and(|a| a.iter().any(|x| x != "no-op"))
            })
            .map(|(name, _)| name)
            .collect();
        PlanView {
            groups: groups
                .into_iter()
                .map(|(resource_type, resources)| TypeGroup {
                    resource_type,
                    resources,
                })
                .collect(),
            outputs,
        }
    }

    /// How many resources change.
    pub fn resource_count(&self) -> usize {
        self.groups.iter().map(|g| g.resources.len()).sum()
    }

    /// The resources in page order.
    pub fn resources(&self) -> impl Iterator<Item = &ResourceView> {
        self.groups.iter().flat_map(|g| g.resources.iter())
    }

    /// The plan as an HTML fragment (`<section id="plan">`): one collapsible
    /// `<details>` per resource type (open when the plan is small), each
    /// resource with its action and a before → after table. Everything from
    /// the plan is escaped.
    pub fn to_html(&self) -> String {
        let total = self.resource_count();
        let open = if total <= OPEN_GROUPS_UP_TO {
            " open"
        } else {
            ""
        };
        let mut out = String::with_capacity(total * 400 + 256);
        out.push_str(&format!(
            "<section id=\"plan\">\n<h2>The plan: {total} resource change{}</h2>\n",
            if total == 1 { "" } else { "s" }
        ));
        let mut cut_short = 0usize;
        if total == 0 {
            out.push_str("<p id=\"plan-empty\">No resource changes.</p>\n");
        }
        for g in &self.groups {
            let mut counts: Vec<(ChangeAction, usize)> = Vec::new();
            for r in &g.resources {
                match counts.iter_mut().find(|(a, _)| *a == r.action) {
                    Some((_, n)) => *n += 1,
                    None => counts.push((r.action, 1)),
                }
            }
            let counts = counts
                .iter()
                .map(|(a, n)| format!("{n} {}", a.as_str()))
                .collect::<Vec<_>>()
                .join(", ");
            out.push_str(&format!(
                "<details class=\"rtype\"{open}><summary><code>{}</code> — {counts}</summary>\n",
                h(&g.resource_type)
            ));
            for r in &g.resources {
                let act = r.action.as_str();
                out.push_str(&format!(
                    "<div class=\"rc\"><p><span class=\"act {act}\">{act}</span> <code>{}</code></p>\n",
                    h(&r.address)
                ));
                if out.len() > MAX_PAGE_BYTES {
                    cut_short += 1;
                    out.push_str("</div>\n");
                    continue;
                }
                if !r.attributes.is_empty() {
                    out.push_str("<table class=\"attrs\">\n");
                    for a in &r.attributes {
                        out.push_str(&format!(
                            "<tr><td><code>{}</code></td><td class=\"{}\">{}</td><td>→</td><td class=\"{}\">{}</td></tr>\n",
                            h(&a.path),
                            class(&a.before),
                            h(a.before.text()),
                            class(&a.after),
                            h(a.after.text()),
                        ));
                    }
                    out.push_str("</table>\n");
                }
                if r.more_attributes > 0 {
                    out.push_str(&format!(
                        "<p class=\"muted\">… and {} more changed attributes (see the plan logs)</p>\n",
                        r.more_attributes
                    ));
                }
                out.push_str("</div>\n");
            }
            out.push_str("</details>\n");
        }
        if cut_short > 0 {
            out.push_str(&format!(
                "<p id=\"plan-cut\" class=\"muted\">The attributes of the last {cut_short} resources \
                 are left out to keep this page usable; the plan logs have them.</p>\n"
            ));
        }
        if !self.outputs.is_empty() {
            let names: Vec<String> = self
                .outputs
                .iter()
                .map(|o| format!("<code>{}</code>", h(o)))
                .collect();
            out.push_str(&format!(
                "<p id=\"plan-outputs\">Outputs that change: {}</p>\n",
                names.join(", ")
            ));
        }
        out.push_str("</section>");
        out
    }

    /// The first `limit` resource changes as one line each (`create
    /// aws_instance.web`), control and bidi characters made visible, and how
    /// many were left out: for the mail, where the page holds the rest.
    pub fn first_lines(&self, limit: usize) -> (Vec<String>, usize) {
        let lines: Vec<String> = self
            .resources()
            .take(limit)
            .map(|r| format!("{} {}", r.action.as_str(), visible(&cut(&r.address))))
            .collect();
        let rest = self.resource_count().saturating_sub(lines.len());
        (lines, rest)
    }
}

fn class(s: &Shown) -> &'static str {
    match s {
        Shown::Absent => "none",
        Shown::Value(_) => "val",
        Shown::Sensitive => "sensitive",
        Shown::Unknown => "unknown",
    }
}

/// `s` cut at [`MAX_VALUE_CHARS`], saying how long it was.
fn cut(s: &str) -> String {
    let n = s.chars().count();
    if n <= MAX_VALUE_CHARS {
        return s.to_string();
    }
    let head: String = s.chars().take(MAX_VALUE_CHARS).collect();
    format!("{head}… ({n} characters)")
}

/// One side of a change at some path: the value, its sensitivity marks and
/// (after only) its unknown marks, each `Null` where the plan has none.
#[derive(Clone, Copy)]
struct Side<'a> {
    value: Option<&'a Value>,
    sensitive: &'a Value,
    unknown: &'a Value,
}

static NULL: Value = Value::Null;

impl<'a> Side<'a> {
    fn new(value: &'a Value, sensitive: &'a Value, unknown: &'a Value) -> Self {
        Side {
            value: (!value.is_null()).then_some(value),
            sensitive,
            unknown,
        }
    }

    fn child(&self, key: Child<'_>) -> Side<'a> {
        let pick = |v: &'a Value| -> &'a Value {
            match (key, v) {
                (Child::Key(k), Value::Object(m)) => m.get(k).unwrap_or(&NULL),
                (Child::Index(i), Value::Array(a)) => a.get(i).unwrap_or(&NULL),
                _ => &NULL,
            }
        };
        Side {
            value: self.value.map(pick).filter(|v| !v.is_null()),
            // A `true` mark covers everything under it.
            sensitive: if self.sensitive == &Value::Bool(true) {
                self.sensitive
            } else {
                pick(self.sensitive)
            },
            unknown: if self.unknown == &Value::Bool(true) {
                self.unknown
            } else {
                pick(self.unknown)
            },
        }
    }

    fn shown(&self) -> Shown {
        if self.sensitive == &Value::Bool(true) {
            // Masked even when absent on this side would tell nothing: a
            // sensitive attribute is never shown, and its change is.
            return if self.value.is_some() || self.unknown == &Value::Bool(true) {
                Shown::Sensitive
            } else {
                Shown::Absent
            };
        }
        if self.unknown == &Value::Bool(true) {
            return Shown::Unknown;
        }
        match self.value {
            None => Shown::Absent,
            Some(v) => Shown::Value(cut(&v.to_string())),
        }
    }

    /// Whether the walk goes into this side (an object or array, not masked).
    fn container(&self) -> bool {
        self.sensitive != &Value::Bool(true)
            && self.unknown != &Value::Bool(true)
            && matches!(self.value, Some(Value::Object(_) | Value::Array(_)))
    }
}

#[derive(Clone, Copy)]
enum Child<'k> {
    Key(&'k str),
    Index(usize),
}

/// Reports every leaf where `before` and `after` show differently. A path is
/// a leaf where either side is a scalar, absent, masked or unknown.
fn walk(
    path: &mut String,
    before: Side<'_>,
    after: Side<'_>,
    depth: usize,
    report: &mut impl FnMut(AttributeChange),
) {
    if depth < MAX_DEPTH && (before.container() || after.container()) {
        let mut keys: Vec<Child<'_>> = Vec::new();
        let mut max_index = 0usize;
        let mut object = false;
        for side in [before.value, after.value, Some(after.unknown)]
            .into_iter()
            .flatten()
        {
            match side {
                Value::Object(m) => {
                    object = true;
                    for k in m.keys() {
                        if !keys.iter().any(|c| matches!(c, Child::Key(x) if *x == k)) {
                            keys.push(Child::Key(k));
                        }
                    }
                }
                Value::Array(a) => max_index = max_index.max(a.len()),
                _ => {}
            }
        }
        if !object {
            keys = (0..max_index).map(Child::Index).collect();
        } else {
            keys.sort_by(|a, b| match (a, b) {
                (Child::Key(a), Child::Key(b)) => a.cmp(b),
                _ => std::cmp::Ordering::Equal,
            });
        }
        let both_containers = before.container() && after.container();
        if both_containers || before.value.is_none() || after.value.is_none() {
            let len = path.len();
            for key in keys {
                match key {
                    Child::Key(k) if len == 0 => path.push_str(k),
                    Child::Key(k) => {
                        path.push('.');
                        path.push_str(k);
                    }
                    Child::Index(i) => path.push_str(&format!("[{i}]")),
                }
                walk(path, before.child(key), after.child(key), depth + 1, report);
                path.truncate(len);
            }
            return;
        }
    }
    let (b, a) = (before.shown(), after.shown());
    // A sensitive value that may have changed is reported: terraform does
    // not say whether it did, and the voter must know it is touched.
    let changed = b != a || (b == Shown::Sensitive && before.value != after.value);
    if changed {
        report(AttributeChange {
            path: if path.is_empty() {
                "(whole value)".into()
            } else {
                path.clone()
            },
            before: b,
            after: a,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn view(v: Value) -> PlanView {
        PlanView::from_show_json(v.to_string().as_bytes()).unwrap()
    }

    fn rc(address: &str, ty: &str, actions: &[&str], change: Value) -> Value {
        let mut c = change;
        c["actions"] = json!(actions);
        json!({"address": address, "type": ty, "change": c})
    }

    fn attrs(r: &ResourceView) -> Vec<(String, String, String)> {
        r.attributes
            .iter()
            .map(|a| {
                (
                    a.path.clone(),
                    a.before.text().to_string(),
                    a.after.text().to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn an_update_shows_only_what_changes_before_and_after() {
        let v = view(
            json!({"resource_changes": [rc("aws_instance.web", "aws_instance", &["update"], json!({
                "before": {"ami": "ami-1", "type": "t3.micro", "tags": {"Name": "a", "Env": "dev"}},
                "after": {"ami": "ami-2", "type": "t3.micro", "tags": {"Name": "b", "Env": "dev"}},
                "after_unknown": {}, "before_sensitive": {}, "after_sensitive": {}
            }))]}),
        );
        let r = v.resources().next().unwrap();
        assert_eq!(r.action, ChangeAction::Update);
        assert_eq!(
            attrs(r),
            [
                ("ami".into(), "\"ami-1\"".into(), "\"ami-2\"".into()),
                ("tags.Name".into(), "\"a\"".into(), "\"b\"".into()),
            ]
        );
    }

    #[test]
    fn sensitive_values_are_masked_and_unknown_values_are_known_after_apply() {
        let v = view(json!({"resource_changes": [
            rc("aws_db_instance.db", "aws_db_instance", &["create"], json!({
                "before": null,
                "after": {"password": "hunter2-secret", "name": "db", "nested": {"key": "s3cr3t"}},
                "after_unknown": {"arn": true, "id": true},
                "before_sensitive": false,
                "after_sensitive": {"password": true, "nested": true}
            })),
            rc("aws_ssm_parameter.p", "aws_ssm_parameter", &["update"], json!({
                "before": {"value": "old-secret"}, "after": {"value": "new-secret"},
                "after_unknown": {}, "before_sensitive": {"value": true}, "after_sensitive": {"value": true}
            })),
        ]}));
        let html = v.to_html();
        for secret in ["hunter2", "s3cr3t", "old-secret", "new-secret"] {
            assert!(!html.contains(secret), "{secret} shown: {html}");
        }
        let db = v.resources().next().unwrap();
        let a = attrs(db);
        assert!(a.contains(&("arn".into(), "(none)".into(), "(known after apply)".into())));
        assert!(a.contains(&(
            "password".into(),
            "(none)".into(),
            "(sensitive value)".into()
        )));
        assert!(a.contains(&("nested".into(), "(none)".into(), "(sensitive value)".into())));
        assert!(a.contains(&("name".into(), "(none)".into(), "\"db\"".into())));
        let p = v.resources().nth(1).unwrap();
        assert_eq!(
            attrs(p),
            [(
                "value".into(),
                "(sensitive value)".into(),
                "(sensitive value)".into()
            )]
        );
    }

    #[test]
    fn hostile_values_render_inert() {
        let evil = "<script>alert('x')</script>\"><img src=x onerror=alert(1)>";
        let v = view(json!({"resource_changes": [rc(
            &format!("terraform_data.{evil}"), &format!("t{evil}"), &["create"],
            json!({"before": null, "after": {evil: evil}, "after_unknown": {}, "after_sensitive": {}})
        )], "output_changes": {evil: {"actions": ["create"]}}}));
        let html = v.to_html();
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("onerror=alert(1)>"), "{html}");
        assert!(!html.contains("'x'"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        let (lines, _) = v.first_lines(5);
        assert!(lines[0].starts_with("create terraform_data.<script>"));
    }

    #[test]
    fn groups_by_type_collapse_large_plans_and_bound_sizes() {
        let mut changes = Vec::new();
        for i in 0..100 {
            let mut after = serde_json::Map::new();
            for k in 0..(MAX_ATTRIBUTES + 5) {
                after.insert(format!("a{k:02}"), json!("x".repeat(500)));
            }
            changes.push(rc(
                &format!("aws_s3_bucket.b{i}"),
                if i % 2 == 0 {
                    "aws_s3_bucket"
                } else {
                    "aws_iam_role"
                },
                &["create"],
                json!({"before": null, "after": after, "after_unknown": {}, "after_sensitive": {}}),
            ));
        }
        changes.push(rc(
            "null_resource.same",
            "null_resource",
            &["no-op"],
            json!({"before": {}, "after": {}}),
        ));
        let v = view(json!({ "resource_changes": changes }));
        assert_eq!(v.resource_count(), 100);
        assert_eq!(
            v.groups
                .iter()
                .map(|g| g.resource_type.as_str())
                .collect::<Vec<_>>(),
            ["aws_iam_role", "aws_s3_bucket"]
        );
        let r = v.resources().next().unwrap();
        assert_eq!(r.attributes.len(), MAX_ATTRIBUTES);
        assert_eq!(r.more_attributes, 5);
        let Shown::Value(shown) = &r.attributes[0].after else {
            panic!()
        };
        assert!(shown.ends_with("… (502 characters)"), "{shown}");
        let html = v.to_html();
        assert_eq!(html.matches("<details class=\"rtype\">").count(), 2);
        assert!(html.contains("aws_s3_bucket</code> — 50 create"));
        let small = view(
            json!({"resource_changes": [rc("a.b", "a", &["delete"], json!({"before": {"x": 1}, "after": null}))]}),
        );
        assert!(small.to_html().contains("<details class=\"rtype\" open>"));
        let (lines, rest) = v.first_lines(10);
        assert_eq!((lines.len(), rest), (10, 90));
        // A page past its budget lists the rest without attributes.
        let mut big = Vec::new();
        for i in 0..2000 {
            big.push(rc(&format!("a.r{i}"), "a", &["create"], json!({"before": null,
                "after": (0..10).map(|k| (format!("k{k}"), json!("y".repeat(300)))).collect::<serde_json::Map<_, _>>()})));
        }
        let html = view(json!({ "resource_changes": big })).to_html();
        assert!(html.len() < MAX_PAGE_BYTES + 2000 * 150, "{}", html.len());
        assert!(html.contains("<code>a.r1999</code>"));
        assert!(html.contains("id=\"plan-cut\""));
    }

    #[test]
    fn replace_and_list_changes_name_their_index() {
        let v = view(
            json!({"resource_changes": [rc("a.b", "a", &["delete", "create"], json!({
                "before": {"ports": [80, 443]}, "after": {"ports": [80, 8443, 22]},
                "after_unknown": {"ports": [false, false, false]}, "after_sensitive": {"ports": []}
            }))]}),
        );
        let r = v.resources().next().unwrap();
        assert_eq!(r.action, ChangeAction::Replace);
        assert_eq!(
            attrs(r),
            [
                ("ports[1]".into(), "443".into(), "8443".into()),
                ("ports[2]".into(), "(none)".into(), "22".into()),
            ]
        );
    }

    #[test]
    fn not_show_json_is_a_clear_error() {
        let e = PlanView::from_show_json(b"{\"resource_changes\": 3}").unwrap_err();
        assert!(
            e.starts_with("the plan JSON is not terraform's show -json"),
            "{e}"
        );
    }
}
