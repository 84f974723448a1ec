//! Values of discovery's evaluator: HCL values whose leaves may be unknown, so
//! that one unresolvable local (`get_env(...)`) does not poison its neighbours.

use std::collections::BTreeMap;
use std::sync::Arc;

use hcl::{Number, Value};

/// A value that discovery cannot know without running terragrunt, or that
/// terragrunt itself would fail to compute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unknown {
    /// Names the offending function, variable or error.
    pub reason: Arc<str>,
    /// True when terragrunt would fail here too (a missing attribute of a known
    /// object, a type error): `try()` may then fall back. False when the value is
    /// merely unknowable statically (environment, command output, dependency outputs).
    pub fails: bool,
    /// True once the problem reached the discovery report (as an error or an
    /// unresolved path), so it is not reported a second time further up.
    pub reported: bool,
}

impl Unknown {
    pub(crate) fn new(reason: impl Into<String>) -> Self {
        Unknown {
            reason: Arc::from(reason.into()),
            fails: false,
            reported: false,
        }
    }

    pub(crate) fn failing(reason: impl Into<String>) -> Self {
        Unknown {
            reason: Arc::from(reason.into()),
            fails: true,
            reported: false,
        }
    }

    pub(crate) fn reported(mut self) -> Self {
        self.reported = true;
        self
    }
}

/// An HCL value with possibly unknown leaves. Objects are sorted by key, as
/// terraform's object types are.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) enum V {
    #[default]
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    List(Vec<V>),
    Object(BTreeMap<String, V>),
    Unknown(Unknown),
}

impl V {
    pub(crate) fn unknown(reason: impl Into<String>) -> V {
        V::Unknown(Unknown::new(reason))
    }

    pub(crate) fn failing(reason: impl Into<String>) -> V {
        V::Unknown(Unknown::failing(reason))
    }

    /// The first unknown leaf, if any (depth first, in key order).
    pub(crate) fn first_unknown(&self) -> Option<&Unknown> {
        match self {
            V::Unknown(u) => Some(u),
            V::List(items) => items.iter().find_map(V::first_unknown),
            V::Object(map) => map.values().find_map(V::first_unknown),
            _ => None,
        }
    }

    /// The plain HCL value, or the first unknown leaf.
    pub(crate) fn to_value(&self) -> Result<Value, Unknown> {
        Ok(match self {
            V::Null => Value::Null,
            V::Bool(b) => Value::Bool(*b),
            V::Number(n) => Value::Number(*n),
            V::String(s) => Value::String(s.clone()),
            V::List(items) => Value::Array(
                items
                    .iter()
                    .map(V::to_value)
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            V::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| Ok((k.clone(), v.to_value()?)))
                    .collect::<Result<hcl::Map<_, _>, Unknown>>()?,
            ),
            V::Unknown(u) => return Err(u.clone()),
        })
    }

    pub(crate) fn from_value(value: Value) -> V {
        match value {
            Value::Null => V::Null,
            Value::Bool(b) => V::Bool(b),
            Value::Number(n) => V::Number(n),
            Value::String(s) => V::String(s),
            Value::Array(items) => V::List(items.into_iter().map(V::from_value).collect()),
            Value::Object(map) => V::Object(
                map.into_iter()
                    .map(|(k, v)| (k, V::from_value(v)))
                    .collect(),
            ),
        }
    }

    /// A short name of the value's type for error messages.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            V::Null => "null",
            V::Bool(_) => "bool",
            V::Number(_) => "number",
            V::String(_) => "string",
            V::List(_) => "list",
            V::Object(_) => "object",
            V::Unknown(_) => "unknown",
        }
    }

    /// The value as a string the way terraform converts primitives, or why not.
    pub(crate) fn as_string(&self) -> Result<String, Unknown> {
        match self {
            V::String(s) => Ok(s.clone()),
            V::Number(n) => Ok(n.to_string()),
            V::Bool(b) => Ok(b.to_string()),
            V::Unknown(u) => Err(u.clone()),
            other => Err(Unknown::failing(format!(
                "expected a string, found a {}",
                other.type_name()
            ))),
        }
    }
}
