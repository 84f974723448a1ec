//! Repository-relative paths: the one spelling of a file or unit used everywhere
//! (forward slashes, no `./`, no `..`, the root is the empty path). A path
//! holds no control character and no bidirectional-text control: unit paths
//! reach PR comments, commit statuses, mail subjects, logs and terminals, where
//! a newline would start a chat-ops command and a bidi override would show
//! another name than the real one.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{CoreError, Result};

/// A normalized path relative to the repository root. Cheap to clone: units and
/// the files they read are shared by thousands of graph entries.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RepoPath(Arc<str>);

impl RepoPath {
    /// The repository root.
    pub fn root() -> Self {
        RepoPath(Arc::from(""))
    }

    /// Normalizes `raw` (relative to the root) lexically: `.` and empty components
    /// vanish, `..` pops. A path that climbs above the root is an error.
    pub fn new(raw: &str) -> Result<Self> {
        Self::root().join(raw)
    }

    /// Joins a relative path onto this one, normalizing. An absolute `rel` is an
    /// error: callers turn absolute filesystem paths into repo paths themselves.
    pub fn join(&self, rel: &str) -> Result<Self> {
        refuse_unsafe_chars(rel)?;
        if rel.starts_with('/') {
            return Err(CoreError::InvalidPath {
                path: rel.to_string(),
                reason: "absolute path where a repository-relative one is expected".into(),
            });
        }
        let mut parts: Vec<&str> = if self.0.is_empty() {
            Vec::new()
        } else {
            self.0.split('/').collect()
        };
        for comp in rel.split(['/', '\\']) {
            match comp {
                "" | "." => {}
                ".." => {
                    if parts.pop().is_none() {
                        return Err(CoreError::InvalidPath {
                            path: if self.0.is_empty() {
                                rel.to_string()
                            } else {
                                format!("{}/{}", self.0, rel)
                            },
                            reason: "climbs above the repository root".into(),
                        });
                    }
                }
                c => parts.push(c),
            }
        }
        Ok(RepoPath(Arc::from(parts.join("/"))))
    }

    /// The normalized path: `/`-separated, no leading `/`, empty for the root.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True for the repository root (the empty path).
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The containing directory; the root's parent is `None`.
    pub fn parent(&self) -> Option<RepoPath> {
        if self.0.is_empty() {
            return None;
        }
        Some(match self.0.rfind('/') {
            Some(i) => RepoPath(Arc::from(&self.0[..i])),
            None => RepoPath::root(),
        })
    }

    /// The last component (a unit's "name" in filter queries).
    pub fn file_name(&self) -> &str {
        match self.0.rfind('/') {
            Some(i) => &self.0[i + 1..],
            None => &self.0,
        }
    }

    /// True when `self` is `dir` or lies below it.
    pub fn starts_with(&self, dir: &RepoPath) -> bool {
        dir.0.is_empty()
            || (self.0.starts_with(&*dir.0)
                && (self.0.len() == dir.0.len() || self.0.as_bytes()[dir.0.len()] == b'/'))
    }

    /// `dir/name` for a name read from a directory listing: refused, naming
    /// the path, when `name` holds a character no repository path may hold.
    pub fn checked_child(&self, name: &str) -> Result<RepoPath> {
        refuse_unsafe_chars(name).map_err(|_| CoreError::InvalidPath {
            path: self.child(name).0.to_string(),
            reason: UNSAFE_REASON.into(),
        })?;
        Ok(self.child(name))
    }

    /// `dir/name` without re-normalizing (`name` must be a single plain
    /// component the caller spelled, e.g. `terragrunt.hcl`).
    pub fn child(&self, name: &str) -> RepoPath {
        if self.0.is_empty() {
            RepoPath(Arc::from(name))
        } else {
            RepoPath(Arc::from(format!("{}/{}", self.0, name)))
        }
    }

    /// The path spelled for people: the root is `.`.
    pub fn display(&self) -> &str {
        if self.0.is_empty() { "." } else { &self.0 }
    }
}

const UNSAFE_REASON: &str = "holds a control or bidirectional-text character (a unit path \
     is shown in comments, statuses, mails and terminals)";

/// Whether a character may not appear in a repository path: every control
/// character (`char::is_control`: C0, DEL, C1 — newline, CR, tab, NUL, ESC),
/// the bidirectional embeddings, overrides and isolates (U+202A–U+202E,
/// U+2066–U+2069), the bidi marks (U+200E, U+200F, U+061C) and the Unicode
/// line and paragraph separators (U+2028, U+2029), which some renderers break
/// lines at.
pub fn is_unsafe_path_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{202A}'..='\u{202E}'
                | '\u{2066}'..='\u{2069}'
                | '\u{200E}'
                | '\u{200F}'
                | '\u{061C}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

/// The error for a path holding an unsafe character; the path is quoted with
/// `{:?}` by the error's message, so the character shows escaped.
fn refuse_unsafe_chars(raw: &str) -> Result<()> {
    if raw.chars().any(is_unsafe_path_char) {
        return Err(CoreError::InvalidPath {
            path: raw.to_string(),
            reason: UNSAFE_REASON.into(),
        });
    }
    Ok(())
}

impl fmt::Display for RepoPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.display())
    }
}

impl fmt::Debug for RepoPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.display())
    }
}

impl TryFrom<String> for RepoPath {
    type Error = CoreError;
    fn try_from(s: String) -> Result<Self> {
        RepoPath::new(&s)
    }
}

impl From<RepoPath> for String {
    fn from(p: RepoPath) -> String {
        p.0.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_dots_and_slashes() {
        assert_eq!(RepoPath::new("./a//b/./c/../d").unwrap().as_str(), "a/b/d");
        assert_eq!(RepoPath::new(".").unwrap().as_str(), "");
        assert!(RepoPath::new("a/../..").is_err());
        assert!(RepoPath::new("/abs").is_err());
    }

    #[test]
    fn control_and_bidi_characters_are_refused_naming_the_path() {
        for bad in [
            "x\n/live-ci plan\ny",
            "a\rb",
            "a\tb",
            "a\0b",
            "a\u{1b}[31mb",
            "a\u{7f}",
            "a\u{85}b",
            "a\u{202E}b",
            "a\u{202A}b",
            "a\u{2066}b",
            "a\u{2069}b",
            "a\u{2028}b",
        ] {
            let err = RepoPath::new(bad).unwrap_err();
            let msg = err.to_string();
            assert!(
                msg.starts_with(&format!("invalid path {bad:?}: holds a control")),
                "{msg}"
            );
            assert!(!msg.contains(['\n', '\r', '\u{1b}', '\u{202E}']), "{msg:?}");
            assert!(RepoPath::root().join(bad).is_err());
            assert!(RepoPath::root().checked_child(bad).is_err());
            // serde refuses it too: records carry paths between the jobs
            assert!(serde_json::from_value::<RepoPath>(serde_json::json!(bad)).is_err());
        }
        let err = RepoPath::new("dev")
            .unwrap()
            .checked_child("vpc\n/live-ci plan")
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("invalid path \"dev/vpc\\n/live-ci plan\": "),
            "{err}"
        );
        // what people name directories stays valid
        for good in ["dev/us-east-1/vpc", "a b/c-d_e.f", "café/ünït", "a`b|c"] {
            assert!(RepoPath::new(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn parent_and_prefix() {
        let p = RepoPath::new("a/bc/d").unwrap();
        assert_eq!(p.parent().unwrap().as_str(), "a/bc");
        assert_eq!(
            RepoPath::new("a").unwrap().parent().unwrap(),
            RepoPath::root()
        );
        assert!(p.starts_with(&RepoPath::new("a/bc").unwrap()));
        assert!(!p.starts_with(&RepoPath::new("a/b").unwrap()));
        assert!(p.starts_with(&RepoPath::root()));
        assert_eq!(p.file_name(), "d");
    }
}
