//! Reading a binary's settings from its environment: the one error type and the
//! lookups every `Config::from_env()` shares (required, optional, lists, numbers,
//! the file pattern), so each Lambda and task names a bad variable the same way.

use crate::merge_lock::Scope;
use crate::webhook::FilePattern;

/// A missing or unusable environment variable, named.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// The named variable is unset or blank.
    #[error("environment variable {0} is not set")]
    Missing(&'static str),
    /// The variable is set to a value that cannot be used.
    #[error("environment variable {name}={value:?}: {reason}")]
    Invalid {
        /// The variable's name.
        name: &'static str,
        /// Its value as set.
        value: String,
        /// Why it cannot be used.
        reason: String,
    },
}

/// Settings from a lookup function (the process environment, or a map in tests).
/// A variable set to blanks counts as unset.
#[derive(Debug)]
pub struct Settings<F> {
    get: F,
}

impl<F: Fn(&str) -> Option<String>> Settings<F> {
    /// Settings read through `get` (e.g. `|k| std::env::var(k).ok()`).
    pub fn new(get: F) -> Self {
        Settings { get }
    }

    /// An optional variable; `None` when unset or blank.
    pub fn opt(&self, name: &'static str) -> Option<String> {
        (self.get)(name).filter(|v| !v.trim().is_empty())
    }

    /// A required variable: [`ConfigError::Missing`] when unset or blank.
    pub fn req(&self, name: &'static str) -> Result<String, ConfigError> {
        self.opt(name).ok_or(ConfigError::Missing(name))
    }

    /// A variable with `default` when unset or blank.
    pub fn or(&self, name: &'static str, default: &str) -> String {
        self.opt(name).unwrap_or_else(|| default.to_string())
    }

    /// A required comma-separated list, blanks dropped.
    pub fn list(&self, name: &'static str) -> Result<Vec<String>, ConfigError> {
        Ok(self
            .req(name)?
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect())
    }

    /// An optional number; `default` when unset.
    pub fn number<N: std::str::FromStr>(
        &self,
        name: &'static str,
        default: N,
    ) -> Result<N, ConfigError> {
        match self.opt(name) {
            None => Ok(default),
            Some(v) => v.trim().parse().map_err(|_| ConfigError::Invalid {
                name,
                value: v.clone(),
                reason: "not a whole number".into(),
            }),
        }
    }

    /// An optional `true`/`false`; `default` when unset.
    pub fn flag(&self, name: &'static str, default: bool) -> Result<bool, ConfigError> {
        match self.opt(name).as_deref() {
            None => Ok(default),
            Some("true") => Ok(true),
            Some("false") => Ok(false),
            Some(other) => Err(ConfigError::Invalid {
                name,
                value: other.to_string(),
                reason: "expected true or false".into(),
            }),
        }
    }

    /// `FILE_PATH_PATTERN`, defaulting to [`FilePattern::DEFAULT`].
    pub fn file_pattern(&self) -> Result<FilePattern, ConfigError> {
        let text = self.or("FILE_PATH_PATTERN", FilePattern::DEFAULT);
        FilePattern::new(&text).map_err(|e| ConfigError::Invalid {
            name: "FILE_PATH_PATTERN",
            value: text.clone(),
            reason: e.to_string(),
        })
    }

    /// `MERGE_LOCK_SCOPE` (the module's `merge_lock_scope`), `repo` when unset.
    pub fn merge_lock_scope(&self) -> Result<Scope, ConfigError> {
        match self.opt("MERGE_LOCK_SCOPE") {
            None => Ok(Scope::default()),
            Some(text) => Scope::parse(&text).map_err(|reason| ConfigError::Invalid {
                name: "MERGE_LOCK_SCOPE",
                value: text.clone(),
                reason,
            }),
        }
    }
}

/// A lookup that answers every name with a usable value and remembers which
/// names were asked: the binaries' tests use it to prove that `from_lookup`
/// reads no variable outside the crate's declared `ENV_VARS` (the list the
/// Terraform module's contract test checks).
#[derive(Debug, Default)]
pub struct RecordingLookup {
    asked: std::sync::Mutex<std::collections::BTreeSet<String>>,
    unset: std::collections::BTreeSet<String>,
}

impl RecordingLookup {
    /// Every name set, except `unset` (to walk the other branch of an either/or).
    pub fn without(unset: &[&str]) -> Self {
        RecordingLookup {
            asked: Default::default(),
            unset: unset.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// `"true"` for flags, `"units"` for the merge lock scope, `"1"` otherwise: a whole number, a valid pattern, a
    /// one-element list and a non-empty string all at once.
    pub fn get(&self, name: &str) -> Option<String> {
        self.asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(name.to_string());
        if self.unset.contains(name) {
            return None;
        }
        Some(
            match name {
                // One of two words: the non-default one, so it is read.
                "MERGE_LOCK_SCOPE" => "units",
                _ if Self::is_flag(name) => "true",
                _ => "1",
            }
            .to_string(),
        )
    }

    // Flags are the names `Settings::flag` reads; they are few and end alike.
    fn is_flag(name: &str) -> bool {
        name.ends_with("_ASSIGN_PUBLIC_IP") || matches!(name, "FAIL_FAST" | "DEPLOY_DIRECT_PUSHES")
    }

    /// The names asked so far.
    pub fn asked(&self) -> std::collections::BTreeSet<String> {
        self.asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}
