//! One settings reader for every binary (the Lambdas' `Config::from_env` and
//! the task's): each read that finds a problem (a required variable unset, a
//! value that does not parse) records it and yields `None`, and
//! [`Env::finish`] returns the config or [`SettingsError`] naming every
//! problem at once. The module sets these variables; a broken deployment
//! should not be fixed one cold start at a time.
//!
//! The lookups themselves (blank counts as unset, numbers, flags, the file
//! pattern) are `live_ci_core::settings::Settings`'s; adapters'
//! `from_settings` readers take that and are kept through [`Env::keep`].

use std::str::FromStr;

pub use live_ci_core::settings::{ConfigError as Problem, Settings};

/// Every problem one read of the environment found, in the order read.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub struct SettingsError {
    /// The problems, in the order the variables were read.
    pub problems: Vec<Problem>,
}

/// Each problem's own message, joined by `"; "`.
impl std::fmt::Display for SettingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, e) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

/// The environment, read once per start, keeping every problem.
#[derive(Debug)]
pub struct Env<F> {
    settings: Settings<F>,
    problems: Vec<Problem>,
}

impl Env<fn(&str) -> Option<String>> {
    /// The process environment.
    pub fn process() -> Self {
        Env::new(|name: &str| std::env::var(name).ok())
    }
}

impl<F: Fn(&str) -> Option<String>> Env<F> {
    /// Any lookup (the process environment, or a map in tests).
    pub fn new(get: F) -> Self {
        Env {
            settings: Settings::new(get),
            problems: Vec::new(),
        }
    }

    /// The lookups, for the adapters' `from_settings` readers (wrap their
    /// result in [`Env::keep`]).
    pub fn settings(&self) -> &Settings<F> {
        &self.settings
    }

    /// A read's value, or `None` with its problem recorded.
    pub fn keep<T>(&mut self, read: Result<T, Problem>) -> Option<T> {
        read.map_err(|e| self.problems.push(e)).ok()
    }

    /// Records a problem found by the caller (two variables that go
    /// together, a value out of range).
    pub fn problem<T>(&mut self, problem: Problem) -> Option<T> {
        self.problems.push(problem);
        None
    }

    /// An optional variable (blank counts as unset).
    pub fn optional(&self, name: &'static str) -> Option<String> {
        self.settings.opt(name)
    }

    /// A variable with a default.
    pub fn or(&self, name: &'static str, default: &str) -> String {
        self.settings.or(name, default)
    }

    /// A required variable.
    pub fn required(&mut self, name: &'static str) -> Option<String> {
        let read = self.settings.req(name);
        self.keep(read)
    }

    /// A required comma-separated list, blanks dropped.
    pub fn list(&mut self, name: &'static str) -> Option<Vec<String>> {
        let read = self.settings.list(name);
        self.keep(read)
    }

    /// An optional whole number, `default` when unset.
    pub fn number<N: FromStr>(&mut self, name: &'static str, default: N) -> Option<N> {
        let read = self.settings.number(name, default);
        self.keep(read)
    }

    /// An optional `true`/`false`, `default` when unset.
    pub fn flag(&mut self, name: &'static str, default: bool) -> Option<bool> {
        let read = self.settings.flag(name, default);
        self.keep(read)
    }

    /// An optional value parsed by `parse`, whose error is the reason the
    /// value is refused (quoted with the variable's name).
    pub fn parsed<T, E: std::fmt::Display>(
        &mut self,
        name: &'static str,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> Option<Option<T>> {
        let Some(text) = self.optional(name) else {
            return Some(None);
        };
        let read = parse(&text).map(Some).map_err(|e| Problem::Invalid {
            name,
            value: text.clone(),
            reason: e.to_string(),
        });
        self.keep(read)
    }

    /// `value` (read from `name`) unless `problem` finds one in it: then
    /// `None`, the value quoted with the problem as the reason. `None` (a
    /// required value already reported missing) stays `None`.
    pub fn valid(
        &mut self,
        name: &'static str,
        value: Option<String>,
        problem: impl FnOnce(&str) -> Option<String>,
    ) -> Option<String> {
        let value = value?;
        match problem(&value) {
            None => Some(value),
            Some(reason) => self.problem(Problem::Invalid {
                name,
                value,
                reason,
            }),
        }
    }

    /// An optional variable checked as [`Env::valid`] checks one: `Some(None)`
    /// when unset.
    pub fn optional_valid(
        &mut self,
        name: &'static str,
        problem: impl FnOnce(&str) -> Option<String>,
    ) -> Option<Option<String>> {
        match self.optional(name) {
            None => Some(None),
            value => self.valid(name, value, problem).map(Some),
        }
    }

    /// Whether any problem was found so far.
    pub fn has_problems(&self) -> bool {
        !self.problems.is_empty()
    }

    /// The config when nothing was wrong, else every problem found.
    pub fn finish<T>(self, value: Option<T>) -> Result<T, SettingsError> {
        match value {
            Some(v) if self.problems.is_empty() => Ok(v),
            _ => Err(SettingsError {
                problems: self.problems,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> Env<impl Fn(&str) -> Option<String>> {
        Env::new(move |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        })
    }

    /// Every problem is kept, in the order read, and the message names each.
    #[test]
    fn every_problem_is_named_at_once() {
        let mut env = env(&[("COUNT", "x"), ("FLAG", "maybe"), ("BLANK", "  ")]);
        let a = env.required("VARIABLE_A");
        let count = env.number::<u32>("COUNT", 1);
        let b = env.required("VARIABLE_B");
        let flag = env.flag("FLAG", false);
        let blank = env.required("BLANK");
        let parsed = env.parsed("COUNT", |t| t.parse::<u8>());
        assert!(env.has_problems());
        let value = (|| Some((a?, count?, b?, flag?, blank?, parsed?)))();
        let err = env.finish(value).unwrap_err();
        assert_eq!(err.problems.len(), 6, "{err}");
        assert_eq!(
            err.to_string(),
            "environment variable VARIABLE_A is not set; \
             environment variable COUNT=\"x\": not a whole number; \
             environment variable VARIABLE_B is not set; \
             environment variable FLAG=\"maybe\": expected true or false; \
             environment variable BLANK is not set; \
             environment variable COUNT=\"x\": invalid digit found in string"
        );
    }

    /// A value with a problem is refused, quoted; a good one and an unset
    /// optional one pass.
    #[test]
    fn checked_values_quote_the_refused_value() {
        let mut env = env(&[("URL", "ftp://x"), ("GOOD", "https://x")]);
        let web =
            |u: &str| (!u.starts_with("https://")).then(|| "expected an https url".to_string());
        assert_eq!(env.optional_valid("UNSET", web), Some(None));
        assert_eq!(
            env.optional_valid("GOOD", web),
            Some(Some("https://x".into()))
        );
        let url = env.required("URL");
        assert_eq!(env.valid("URL", url, web), None);
        assert_eq!(env.valid("MISSING", None, web), None);
        assert_eq!(
            env.finish(Some(())).unwrap_err().to_string(),
            "environment variable URL=\"ftp://x\": expected an https url"
        );
    }

    #[test]
    fn defaults_and_lists() {
        let mut env = env(&[("LIST", " a, ,b "), ("N", "3")]);
        assert_eq!(env.list("LIST").unwrap(), ["a", "b"]);
        assert_eq!(env.number("N", 1u8), Some(3));
        assert_eq!(env.number("UNSET", 1u8), Some(1));
        assert_eq!(env.or("UNSET", "main"), "main");
        assert_eq!(env.parsed("UNSET", |t| t.parse::<u8>()), Some(None));
        assert!(!env.has_problems());
        assert_eq!(env.finish(Some(1)).unwrap(), 1);
    }
}
