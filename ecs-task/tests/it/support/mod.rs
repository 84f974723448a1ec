//! Test support for the task's integration tests.

#![allow(dead_code, clippy::unwrap_used)]

pub mod fakes;
pub use live_ci_testkit::pg;
pub mod repo;

use std::collections::HashMap;

use live_ci_task::FromLookup;

/// A subcommand's configuration (the type asked for) from name/value pairs
/// (nothing from the process environment). The tests run plain terraform, so the show command is
/// terraform's unless a test sets another.
pub fn config<C: FromLookup>(pairs: &[(&str, &str)]) -> C {
    let mut map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    map.entry("SHOW_COMMAND".into())
        .or_insert_with(|| repo::SHOW_COMMAND.into());
    C::from_lookup(move |k| map.get(k).cloned()).unwrap()
}

/// Role assumption through LocalStack's STS.
pub fn sts() -> live_ci_aws::StsRoleAssumer {
    live_ci_aws::StsRoleAssumer::new(live_ci_aws::sdk::sts::Client::new(
        &live_ci_testkit::aws::sdk_config(),
    ))
}
