//! Test support for the task's integration tests.

#![allow(dead_code, clippy::unwrap_used)]

pub mod fakes;
#[path = "../../../crates/metadb/tests/support/mod.rs"]
pub mod pg;
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

/// The AWS SDK configuration of the project's LocalStack (fake keys, its
/// region): STS there assumes any role, as a target account's trust policy
/// would let the task role do.
pub fn localstack_sdk_config() -> live_ci_aws::sdk::sts::Config {
    let endpoint = live_ci_testkit::localstack_endpoint()
        .unwrap_or_else(|e| panic!("localstack is needed for sts: {e}"));
    live_ci_aws::sdk::sts::Config::builder()
        .behavior_version(live_ci_aws::sdk::sts::config::BehaviorVersion::latest())
        .region(live_ci_aws::sdk::sts::config::Region::new("us-east-1"))
        .credentials_provider(live_ci_aws::sdk::sts::config::Credentials::new(
            "test", "test", None, None, "static",
        ))
        .endpoint_url(endpoint)
        .build()
}

/// Role assumption through LocalStack's STS.
pub fn sts() -> live_ci_aws::StsRoleAssumer {
    live_ci_aws::StsRoleAssumer::new(live_ci_aws::sdk::sts::Client::from_conf(
        localstack_sdk_config(),
    ))
}
