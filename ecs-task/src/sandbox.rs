//! What the plan/apply child process runs as: the unit's account role, assumed
//! here in the task (never by terragrunt with the task's own credentials), and
//! an allow-listed environment (`live_ci_core::child_env`) carrying that role's
//! temporary credentials instead of anything the task itself holds.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use live_ci_core::child_env::child_env;
use live_ci_core::port::{RoleAssumer, TemporaryCredentials, session_name};

use crate::error::{Result, TaskError};

/// Assumes `role_arn` for a session named after `label`; `None` for an empty
/// role (a unit whose account names none runs without AWS credentials).
pub async fn assume<R: RoleAssumer>(
    roles: &R,
    role_arn: &str,
    label: &str,
) -> Result<Option<TemporaryCredentials>> {
    if role_arn.trim().is_empty() {
        return Ok(None);
    }
    roles
        .assume_role(role_arn, &session_name(label))
        .await
        .map(Some)
        .map_err(|e| TaskError::AssumeRole {
            role_arn: role_arn.to_string(),
            message: e.to_string(),
        })
}

/// Assumes each role once (many units share an account's plan role).
pub async fn assume_each<R: RoleAssumer>(
    roles: &R,
    role_arns: BTreeSet<String>,
    label: &str,
) -> Result<BTreeMap<String, TemporaryCredentials>> {
    let mut out = BTreeMap::new();
    for arn in role_arns {
        if let Some(c) = assume(roles, &arn, label).await? {
            out.insert(arn, c);
        }
    }
    Ok(out)
}

/// The child's whole environment: the allowed part of this process's
/// environment, the role's credentials, then `extra`.
pub fn env_for(
    credentials: Option<&TemporaryCredentials>,
    extra: &[(String, String)],
) -> Vec<(String, String)> {
    child_env(std::env::vars(), credentials, extra)
}

/// A home, a temporary directory and a provider plugin cache of the command's
/// own, created under `scratch` (a phase's scratch directory, deleted with its
/// checkout), as child environment entries that override the task's.
///
/// Why: a plan task that goes on to apply runs both phases in one container
/// as one user. Code the plan runs (under the read-only plan role) could plant
/// a CLI configuration with `dev_overrides`, a provider in the shared plugin
/// cache, or a git configuration in the task's home; the apply, under the apply
/// role, would then run it. Each phase reading only directories created for it
/// (with unpredictable names, after every process of the plan is gone) keeps
/// what the plan wrote away from the apply, as a new task's fresh container did.
pub fn private_dirs(scratch: &Path) -> Result<Vec<(String, String)>> {
    let home = scratch.join("home");
    let cache = home.join(".terraform.d").join("plugin-cache");
    let tmp = scratch.join("tmp");
    for dir in [&cache, &tmp] {
        std::fs::create_dir_all(dir)
            .map_err(|e| TaskError::Io(format!("creating {:?}: {e}", dir.display())))?;
    }
    let path = |p: &Path| p.display().to_string();
    Ok(vec![
        ("HOME".into(), path(&home)),
        ("TMPDIR".into(), path(&tmp)),
        ("TF_PLUGIN_CACHE_DIR".into(), path(&cache)),
    ])
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn private_dirs_are_made_under_the_scratch_and_override_the_tasks() {
        let scratch = tempfile::tempdir().unwrap();
        let dirs = private_dirs(scratch.path()).unwrap();
        let env = child_env(
            [
                ("HOME".to_string(), "/home/live-ci".to_string()),
                (
                    "TF_PLUGIN_CACHE_DIR".to_string(),
                    "/home/live-ci/.terraform.d/plugin-cache".to_string(),
                ),
            ],
            None,
            &dirs,
        );
        let last = |name: &str| {
            env.iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| PathBuf::from(v))
                .unwrap()
        };
        for name in ["HOME", "TMPDIR", "TF_PLUGIN_CACHE_DIR"] {
            let dir = last(name);
            assert!(dir.starts_with(scratch.path()), "{name}={dir:?}");
            assert!(dir.is_dir(), "{name}={dir:?} was created");
        }
    }
}
