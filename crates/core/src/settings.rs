//! Reading a binary's settings from its environment: the one error type and the
//! lookups every `Config::from_env()` shares (required, optional, lists, numbers,
//! the file pattern), so each Lambda and task names a bad variable the same way.

use crate::webhook::FilePattern;

/// A missing or unusable environment variable, named.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("environment variable {0} is not set")]
    Missing(&'static str),
    #[error("environment variable {name}={value:?}: {reason}")]
    Invalid {
        name: &'static str,
        value: String,
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
    pub fn new(get: F) -> Self {
        Settings { get }
    }

    pub fn opt(&self, name: &'static str) -> Option<String> {
        (self.get)(name).filter(|v| !v.trim().is_empty())
    }

    pub fn req(&self, name: &'static str) -> Result<String, ConfigError> {
        self.opt(name).ok_or(ConfigError::Missing(name))
    }

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
}
