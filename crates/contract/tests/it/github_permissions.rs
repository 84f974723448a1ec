//! `infra/README.md`'s table of each job's GitHub App permissions is the
//! code's (`live_ci_github::permissions::JOB_PERMISSIONS`): a row that differs,
//! is missing or is extra fails here, so the README never promises a token
//! narrower (or wider) than the one the job asks for.

use std::collections::BTreeMap;

use live_ci_github::Job;
use serde_json::{Map, Value};

/// The README's rows `| <job> | <permission: level, …> | …`, by job name.
fn readme_rows() -> BTreeMap<String, Map<String, Value>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../infra/README.md");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let names: Vec<&str> = Job::ALL.iter().map(|j| j.name()).collect();
    // The table under its header, up to the first line that is not a row.
    let header = "| job | installation token's permissions |";
    let start = text
        .find(header)
        .unwrap_or_else(|| panic!("no table {header:?} in {}", path.display()));
    let mut rows = BTreeMap::new();
    for line in text[start..].lines().take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // ["", job, permissions, what for, static token, ""]
        let [_, job, permissions, ..] = cells.as_slice() else {
            continue;
        };
        if !names.contains(job) {
            continue;
        }
        let mut grants = Map::new();
        for grant in permissions.split(',') {
            let (permission, level) = grant
                .split_once(':')
                .unwrap_or_else(|| panic!("{job}: {grant:?} is not `permission: level`"));
            grants.insert(
                permission.trim().to_string(),
                Value::String(level.trim().to_string()),
            );
        }
        assert!(
            rows.insert(job.to_string(), grants).is_none(),
            "two rows for {job}"
        );
    }
    rows
}

#[test]
fn the_readmes_permission_table_is_the_codes() {
    let readme = readme_rows();
    let code: BTreeMap<String, Map<String, Value>> = Job::ALL
        .iter()
        .map(|j| (j.name().to_string(), j.token_permissions()))
        .collect();
    assert_eq!(readme, code);
}
