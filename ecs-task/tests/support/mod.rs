//! Test support for the task's integration tests.

#![allow(dead_code, clippy::unwrap_used)]

pub mod fakes;
#[path = "../../../crates/metadb/tests/support/mod.rs"]
pub mod pg;
pub mod repo;

use std::collections::HashMap;

use live_ci_task::Config;

/// A configuration from name/value pairs (nothing from the process environment).
pub fn config(pairs: &[(&str, &str)]) -> Config {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_lookup(move |k| map.get(k).cloned()).unwrap()
}
