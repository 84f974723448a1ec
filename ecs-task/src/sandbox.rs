//! What the plan/apply child process runs as: the unit's account role, assumed
//! here in the task (never by terragrunt with the task's own credentials), and
//! an allow-listed environment (`live_ci_core::child_env`) carrying that role's
//! temporary credentials instead of anything the task itself holds.

use std::collections::{BTreeMap, BTreeSet};

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
