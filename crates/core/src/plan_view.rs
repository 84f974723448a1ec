//! A saved plan as a voter reads it: terraform's `show -json` of the plan →
//! a view model (resource by resource: the action and each attribute that
//! changes, before → after, sensitive values masked, unknown values "known
//! after apply") → HTML for the approval page and lines for the mail. Pure:
//! every value from the plan is attacker-controlled and is escaped for its
//! medium here; sizes are bounded so a 5,000-resource plan stays a usable page.

use serde::Deserialize;
use serde_json::Value;

use crate::escape::html::escape_html as h;
use crate::port::{SavedPlan, sha256_hex};

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
    /// A new resource.
    Create,
    /// Changed in place.
    Update,
    /// Destroyed.
    Delete,
    /// Delete then create, or create then delete.
    Replace,
    /// A data source read during the apply.
    Read,
    /// A `removed` block drops it from the state without destroying it.
    Forget,
}

impl ChangeAction {
    /// The action in terraform's word.
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
    /// What the page prints for this side.
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
    /// The value before the apply.
    pub before: Shown,
    /// The value after it.
    pub after: Shown,
}

/// One resource the plan changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceView {
    /// The resource's address, e.g. `module.db.aws_db_instance.main`.
    pub address: String,
    /// Its type, e.g. `aws_db_instance`.
    pub resource_type: String,
    /// What the plan does to it.
    pub action: ChangeAction,
    /// At most [`MAX_ATTRIBUTES`].
    pub attributes: Vec<AttributeChange>,
    /// Changed attributes not listed (over [`MAX_ATTRIBUTES`]).
    pub more_attributes: usize,
}

/// The resources of one type, in plan order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeGroup {
    /// The resource type shared by the group.
    pub resource_type: String,
    /// The group's resources, in plan order.
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

/// Where a saved plan's sealed JSON is stored: beside the plan.
pub fn json_key(plan_key: &str) -> String {
    format!("{plan_key}.json")
}

/// The stored form of a plan's `show -json`: only what the page shows (each
/// resource change and the names of changing outputs), every value marked
/// sensitive replaced by a placeholder before it is stored — the page's
/// reader never holds a secret, while the plan file (read by the apply only)
/// keeps them — with the SHA-256 of the plan file it was read from, so the
/// page can tie it to the plan the apply checks.
pub fn seal(plan_sha256: &str, show_json: &[u8]) -> Result<Vec<u8>, String> {
    seal_with_lock(plan_sha256, show_json, None)
}

/// [`seal`], carrying what the apply of this plan needs besides the plan
/// file, under the same recorded hash: `lock_file`, the
/// `.terraform.lock.hcl` the plan ran with (the apply restores it before its
/// `init`, so provider selection is the plan's), and the providers the plan
/// uses that its prior state has no object of
/// ([`crate::terraform::providers_new_in_plan`], for rollbacks). Neither is a
/// secret: the lock names provider versions and their checksums.
pub fn seal_with_lock(
    plan_sha256: &str,
    show_json: &[u8],
    lock_file: Option<&str>,
) -> Result<Vec<u8>, String> {
    let mut show: Value = serde_json::from_slice(show_json)
        .map_err(|e| format!("the plan JSON is not terraform's show -json: {e}"))?;
    let new_providers = crate::terraform::providers_new_in_plan(&show);
    let mut changes = match show.get_mut("resource_changes").map(Value::take) {
        Some(Value::Array(changes)) => changes,
        _ => Vec::new(),
    };
    for rc in &mut changes {
        let Some(change) = rc.get_mut("change").and_then(Value::as_object_mut) else {
            continue;
        };
        let mut before = change.remove("before").unwrap_or(Value::Null);
        let mut after = change.remove("after").unwrap_or(Value::Null);
        let no_mask = Value::Null;
        let bm = change.get("before_sensitive").unwrap_or(&no_mask);
        let am = change.get("after_sensitive").unwrap_or(&no_mask);
        redact(Some(&mut before), bm, Some(&mut after), am, 0);
        change.insert("before".into(), before);
        change.insert("after".into(), after);
        // Not shown, and may hold values of their own.
        change.remove("importing");
        change.remove("generated_config");
        change.remove("replace_paths");
    }
    let outputs: serde_json::Map<String, Value> = match show.get("output_changes") {
        Some(Value::Object(o)) => o
            .iter()
            .map(|(name, c)| {
                let actions = c.get("actions").cloned().unwrap_or(Value::Null);
                (name.clone(), serde_json::json!({ "actions": actions }))
            })
            .collect(),
        _ => serde_json::Map::new(),
    };
    let sealed = serde_json::json!({
        "plan_sha256": plan_sha256,
        "show": {"resource_changes": changes, "output_changes": outputs},
        "lock_file": lock_file,
        "new_providers": new_providers,
    });
    Ok(sealed.to_string().into_bytes())
}

const MASKED: &str = "(sensitive)";
const MASKED_CHANGED: &str = "(sensitive, changed)";

/// Replaces every value a mask marks sensitive (on either side) by a
/// placeholder that says only whether it changed.
fn redact(
    before: Option<&mut Value>,
    bm: &Value,
    after: Option<&mut Value>,
    am: &Value,
    depth: usize,
) {
    let t = Value::Bool(true);
    if *bm == t || *am == t || depth >= MAX_DEPTH {
        if *bm != t && *am != t && !has_true(bm) && !has_true(am) {
            return; // deep, but nothing under it is sensitive
        }
        let changed = before.as_deref() != after.as_deref();
        if let Some(b) = before.filter(|b| !b.is_null()) {
            *b = Value::from(MASKED);
        }
        if let Some(a) = after.filter(|a| !a.is_null()) {
            *a = Value::from(if changed { MASKED_CHANGED } else { MASKED });
        }
        return;
    }
    if !has_true(bm) && !has_true(am) {
        return;
    }
    let mut keys: Vec<Child<'static>> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for v in [before.as_deref(), after.as_deref(), Some(bm), Some(am)]
        .into_iter()
        .flatten()
    {
        match v {
            Value::Object(m) => {
                for k in m.keys() {
                    if !names.contains(k) {
                        names.push(k.clone());
                    }
                }
            }
            Value::Array(a) => {
                for i in keys.len()..a.len() {
                    keys.push(Child::Index(i));
                }
            }
            _ => {}
        }
    }
    let (mut before, mut after) = (before, after);
    let child = |m: &Value, k: &Child<'_>| -> Value {
        match (k, m) {
            (Child::Key(k), Value::Object(o)) => o.get(*k).cloned().unwrap_or(Value::Null),
            (Child::Index(i), Value::Array(a)) => a.get(*i).cloned().unwrap_or(Value::Null),
            _ => Value::Null,
        }
    };
    for name in &names {
        let k = Child::Key(name);
        let (cb, ca) = (child(bm, &k), child(am, &k));
        let b = match before.as_deref_mut() {
            Some(Value::Object(o)) => o.get_mut(name.as_str()),
            _ => None,
        };
        let a = match after.as_deref_mut() {
            Some(Value::Object(o)) => o.get_mut(name.as_str()),
            _ => None,
        };
        redact(b, &cb, a, &ca, depth + 1);
    }
    for k in &keys {
        let Child::Index(i) = *k else { continue };
        let (cb, ca) = (child(bm, k), child(am, k));
        let b = match before.as_deref_mut() {
            Some(Value::Array(v)) => v.get_mut(i),
            _ => None,
        };
        let a = match after.as_deref_mut() {
            Some(Value::Array(v)) => v.get_mut(i),
            _ => None,
        };
        redact(b, &cb, a, &ca, depth + 1);
    }
}

/// Whether a sensitivity mask marks anything.
fn has_true(mask: &Value) -> bool {
    match mask {
        Value::Bool(b) => *b,
        Value::Array(a) => a.iter().any(has_true),
        Value::Object(o) => o.values().any(has_true),
        _ => false,
    }
}

/// Why a stored plan JSON is not shown as the plan the vote approves.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unverified {
    /// The saved plan has no JSON hash recorded (saved before it was kept).
    #[error("no plan JSON is recorded for this plan (it was saved before live-ci kept one)")]
    NotRecorded,
    /// No object at the plan JSON's key.
    #[error("the stored plan JSON is missing")]
    Missing,
    /// The stored JSON's hash is not the recorded one.
    #[error(
        "the stored plan JSON (sha-256 {found}) is not the one recorded with the saved plan (sha-256 {recorded}): it was changed after the plan task stored it"
    )]
    Tampered {
        /// The stored JSON's SHA-256 (hex).
        found: String,
        /// The SHA-256 recorded with the saved plan.
        recorded: String,
    },
    /// The JSON is sealed to another plan file than the one the apply checks.
    #[error(
        "the stored plan JSON describes plan sha-256 {names}, not the saved plan (sha-256 {approved}) the apply checks"
    )]
    OtherPlan {
        /// The plan file's SHA-256 the JSON names.
        names: String,
        /// The saved plan's SHA-256.
        approved: String,
    },
    /// The JSON does not parse as a sealed plan (the parser's message).
    #[error("{0}")]
    Unreadable(String),
}

#[derive(Deserialize)]
struct Sealed {
    plan_sha256: String,
    show: ShowJson,
    #[serde(default)]
    lock_file: Option<String>,
    #[serde(default)]
    new_providers: Vec<String>,
}

/// The plan the vote approves, from the sealed JSON `bytes` stored for
/// `saved`: only when they hash to what the plan task recorded and name the
/// plan file's own SHA-256 (the one the apply checks).
pub fn open(saved: &SavedPlan, bytes: Option<&[u8]>) -> Result<PlanView, Unverified> {
    Ok(PlanView::from_parsed(verified(saved, bytes)?.show))
}

/// What the apply of a saved plan takes from its sealed JSON
/// ([`seal_with_lock`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ForApply {
    /// The `.terraform.lock.hcl` the plan ran with; `None` when the plan's
    /// unit directory had none.
    pub lock_file: Option<String>,
    /// Providers the plan uses that its prior state had no object of.
    pub new_providers: Vec<String>,
}

/// [`ForApply`] from the sealed JSON `bytes` stored for `saved`, under the
/// same checks as [`open`]: their hash is the recorded one and they name the
/// plan file's own SHA-256.
pub fn open_for_apply(saved: &SavedPlan, bytes: Option<&[u8]>) -> Result<ForApply, Unverified> {
    let sealed = verified(saved, bytes)?;
    Ok(ForApply {
        lock_file: sealed.lock_file,
        new_providers: sealed.new_providers,
    })
}

fn verified(saved: &SavedPlan, bytes: Option<&[u8]>) -> Result<Sealed, Unverified> {
    let recorded = saved
        .json_sha256
        .as_deref()
        .ok_or(Unverified::NotRecorded)?;
    let bytes = bytes.ok_or(Unverified::Missing)?;
    let found = sha256_hex(bytes);
    if found != recorded {
        return Err(Unverified::Tampered {
            found,
            recorded: recorded.to_string(),
        });
    }
    let sealed: Sealed = serde_json::from_slice(bytes).map_err(|e| {
        Unverified::Unreadable(format!("the stored plan JSON is not readable: {e}"))
    })?;
    if sealed.plan_sha256 != saved.sha256 {
        return Err(Unverified::OtherPlan {
            names: sealed.plan_sha256,
            approved: saved.sha256.clone(),
        });
    }
    Ok(sealed)
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
            cut_short += push_group(&mut out, g, open);
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
    /// aws_instance.web`, the address cut at [`MAX_VALUE_CHARS`]), and how many
    /// were left out: for the mail, which escapes them for each part.
    pub fn first_lines(&self, limit: usize) -> (Vec<String>, usize) {
        let lines: Vec<String> = self
            .resources()
            .take(limit)
            .map(|r| format!("{} {}", r.action.as_str(), cut(&r.address)))
            .collect();
        let rest = self.resource_count().saturating_sub(lines.len());
        (lines, rest)
    }
}

/// One resource type of [`PlanView::to_html`]: its `<details>` with the
/// action counts in the summary; returns how many of its resources had their
/// attributes left out for the page size cap.
fn push_group(out: &mut String, g: &TypeGroup, open: &str) -> usize {
    out.push_str(&format!(
        "<details class=\"rtype\"{open}><summary><code>{}</code> — {}</summary>\n",
        h(&g.resource_type),
        action_counts(g)
    ));
    let mut cut_short = 0usize;
    for r in &g.resources {
        if !push_resource(out, r) {
            cut_short += 1;
        }
    }
    out.push_str("</details>\n");
    cut_short
}

/// The summary of a type group: `2 create, 1 delete`, actions in the order
/// they first appear.
fn action_counts(g: &TypeGroup) -> String {
    let mut counts: Vec<(ChangeAction, usize)> = Vec::new();
    for r in &g.resources {
        match counts.iter_mut().find(|(a, _)| *a == r.action) {
            Some((_, n)) => *n += 1,
            None => counts.push((r.action, 1)),
        }
    }
    counts
        .iter()
        .map(|(a, n)| format!("{n} {}", a.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One resource of [`PlanView::to_html`]: its action and address, then its
/// before → after table unless the page is already over [`MAX_PAGE_BYTES`];
/// returns false when the attributes were left out.
fn push_resource(out: &mut String, r: &ResourceView) -> bool {
    let act = r.action.as_str();
    out.push_str(&format!(
        "<div class=\"rc\"><p><span class=\"act {act}\">{act}</span> <code>{}</code></p>\n",
        h(&r.address)
    ));
    if out.len() > MAX_PAGE_BYTES {
        out.push_str("</div>\n");
        return false;
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
    true
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

    fn masked(&self) -> bool {
        self.sensitive == &Value::Bool(true)
    }

    /// A sensitive value: never shown, only that it is there.
    fn as_sensitive(&self) -> Shown {
        if self.value.is_some() || self.unknown == &Value::Bool(true) {
            Shown::Sensitive
        } else {
            Shown::Absent
        }
    }

    fn shown(&self) -> Shown {
        if self.masked() {
            return self.as_sensitive();
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
    // Sensitive on either side masks both: a value that becomes (or stops
    // being) sensitive is not shown on the other side either.
    let either = before.masked() || after.masked();
    if depth < MAX_DEPTH && !either && (before.container() || after.container()) {
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
    let (b, a) = if either {
        (before.as_sensitive(), after.as_sensitive())
    } else {
        (before.shown(), after.shown())
    };
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
    fn a_sealed_plan_opens_only_with_its_recorded_hashes() {
        let show = json!({"resource_changes": [rc("a.b", "a", &["create"], json!({"before": null, "after": {"x": 1}}))]}).to_string();
        let plan_sha = sha256_hex(b"the plan file");
        let sealed = seal(&plan_sha, show.as_bytes()).unwrap();
        let saved = SavedPlan {
            key: "plans/x.tfplan".into(),
            sha256: plan_sha.clone(),
            version_id: None,
            json_sha256: Some(sha256_hex(&sealed)),
        };
        assert_eq!(open(&saved, Some(&sealed)).unwrap().resource_count(), 1);
        // One byte changed after the plan task stored it.
        let tampered = String::from_utf8(sealed.clone())
            .unwrap()
            .replace("\"x\":1", "\"x\":2");
        let e = open(&saved, Some(tampered.as_bytes())).unwrap_err();
        assert!(matches!(e, Unverified::Tampered { .. }), "{e}");
        assert!(
            e.to_string()
                .contains("was changed after the plan task stored it")
        );
        // A sealed JSON of another plan, recorded as if it were this one's.
        let other = seal(&sha256_hex(b"another plan"), show.as_bytes()).unwrap();
        let swapped = SavedPlan {
            json_sha256: Some(sha256_hex(&other)),
            ..saved.clone()
        };
        assert!(matches!(
            open(&swapped, Some(&other)),
            Err(Unverified::OtherPlan { .. })
        ));
        assert_eq!(open(&saved, None), Err(Unverified::Missing));
        let old = SavedPlan {
            json_sha256: None,
            ..saved
        };
        assert_eq!(open(&old, Some(&sealed)), Err(Unverified::NotRecorded));
    }

    /// The stored JSON holds no secret: sensitive values (either side's mask)
    /// become placeholders saying only whether they changed, and the parts of
    /// `show -json` the page does not show (state, variables, planned values)
    /// are not stored; the page still says which sensitive attributes change.
    #[test]
    fn sealing_drops_every_sensitive_value_and_keeps_whether_it_changed() {
        let show = json!({
            "format_version": "1.2",
            "variables": {"db_password": {"value": "var-secret"}},
            "planned_values": {"root_module": {"resources": [{"values": {"password": "pv-secret"}}]}},
            "prior_state": {"values": {"root_module": {"resources": [{"values": {"password": "ps-secret"}}]}}},
            "resource_changes": [
                rc("aws_db_instance.db", "aws_db_instance", &["update"], json!({
                    "before": {"password": "old-secret", "same": "kept-secret", "tags": {"k": "v1"},
                               "list": ["l-secret", "x"], "becomes": "was-public"},
                    "after": {"password": "new-secret", "same": "kept-secret", "tags": {"k": "v2"},
                              "list": ["l-secret", "y"], "becomes": "now-secret"},
                    "after_unknown": {},
                    "before_sensitive": {"password": true, "same": true, "list": [true, false]},
                    "after_sensitive": {"password": true, "same": true, "list": [true, false], "becomes": true},
                    "importing": {"id": "imp-secret"}
                })),
            ],
            "output_changes": {"token": {"actions": ["create"], "after": "out-secret", "after_sensitive": true}},
        });
        let sealed = seal(&sha256_hex(b"p"), show.to_string().as_bytes()).unwrap();
        let text = String::from_utf8(sealed.clone()).unwrap();
        for secret in [
            "var-secret",
            "pv-secret",
            "ps-secret",
            "old-secret",
            "new-secret",
            "kept-secret",
            "l-secret",
            "was-public",
            "now-secret",
            "imp-secret",
            "out-secret",
        ] {
            assert!(!text.contains(secret), "{secret} stored: {text}");
        }
        let saved = SavedPlan {
            key: "k".into(),
            sha256: sha256_hex(b"p"),
            version_id: None,
            json_sha256: Some(sha256_hex(&sealed)),
        };
        let v = open(&saved, Some(&sealed)).unwrap();
        let a = attrs(v.resources().next().unwrap());
        let sens = || "(sensitive value)".to_string();
        assert_eq!(
            a,
            [
                ("becomes".into(), sens(), sens()),
                ("list[1]".into(), "\"x\"".into(), "\"y\"".into()),
                ("password".into(), sens(), sens()),
                ("tags.k".into(), "\"v1\"".into(), "\"v2\"".into()),
            ],
            "{a:?}"
        );
        assert_eq!(v.outputs, ["token"]);
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
