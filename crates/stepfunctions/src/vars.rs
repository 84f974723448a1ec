//! The typed variables of `statemachine/deployment.asl.json`, and how each one is
//! written into the template (Terraform's `templatefile` call passes the same
//! names and the same encodings: see `statemachine/README.md`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Result, WorkflowError};

/// The deployment state machine's template, embedded so the Rust side renders
/// exactly the file Terraform deploys.
pub const DEPLOYMENT_TEMPLATE: &str = include_str!("../../../statemachine/deployment.asl.json");

/// Everything the deployment state machine is parameterised by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeploymentVars {
    /// The ECS cluster that runs `terra-run`.
    pub ecs_cluster_arn: String,
    /// The `terra-run` Fargate task definition.
    pub terra_run_task_definition_arn: String,
    /// The container of that task definition whose command and environment the
    /// state machine overrides.
    pub terra_run_container_name: String,
    /// The ARN prefix of the per-account terra-run task roles: Plan runs its
    /// task as `<prefix>plan-<account_name>` and Apply as
    /// `<prefix>apply-<account_name>` (ECS `overrides.taskRoleArn`), so IAM,
    /// not the task, decides which account role each phase may assume.
    pub terra_run_role_arn_prefix: String,
    /// The subnets terra-run tasks run in.
    pub subnet_ids: Vec<String>,
    /// The security groups of terra-run tasks.
    pub security_group_ids: Vec<String>,
    /// Whether terra-run tasks get a public IP.
    pub assign_public_ip: bool,
    /// The SNS topic the approval request is published to.
    pub approval_topic_arn: String,
    /// How long the voters have to decide before the execution fails.
    pub approval_timeout_seconds: u32,
    /// A plan task that sends no heartbeat for this long is considered dead.
    pub plan_heartbeat_seconds: u32,
    /// The plan task's whole time limit.
    pub plan_timeout_seconds: u32,
    /// An apply task that sends no heartbeat for this long is considered dead.
    pub apply_heartbeat_seconds: u32,
    /// The apply task's whole time limit.
    pub apply_timeout_seconds: u32,
    /// First wait before retrying a throttled or capacity-starved call (doubles
    /// each attempt).
    pub retry_interval_seconds: u32,
    /// Retries of such a call before the state fails.
    pub retry_max_attempts: u32,
}

impl DeploymentVars {
    /// The template variables, each encoded as the template expects it: strings
    /// that sit inside JSON string literals are JSON-escaped, lists are JSON
    /// arrays, numbers are decimal.
    pub fn to_template_vars(&self) -> Result<BTreeMap<String, String>> {
        let mut vars = BTreeMap::new();
        self.insert_strings(&mut vars)?;
        self.insert_network(&mut vars)?;
        self.insert_timing(&mut vars)?;
        Ok(vars)
    }

    /// The ARNs and names, JSON-escaped for the string literals they sit in.
    fn insert_strings(&self, vars: &mut BTreeMap<String, String>) -> Result<()> {
        let mut string = |name: &str, value: &str| -> Result<()> {
            if value.is_empty() {
                return Err(invalid(name, value, "must not be empty"));
            }
            vars.insert(name.to_owned(), json_string_body(value));
            Ok(())
        };
        string("ecs_cluster_arn", &self.ecs_cluster_arn)?;
        string(
            "terra_run_task_definition_arn",
            &self.terra_run_task_definition_arn,
        )?;
        string("terra_run_container_name", &self.terra_run_container_name)?;
        // It sits inside a States.Format string: no quote, brace or backslash
        // may reach it (an IAM ARN has none).
        let prefix = &self.terra_run_role_arn_prefix;
        if !(prefix.starts_with("arn:")
            && prefix.contains(":role/")
            && prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ":/+=,.@_-".contains(c)))
        {
            return Err(invalid(
                "terra_run_role_arn_prefix",
                prefix,
                "must be an IAM role ARN prefix (arn:…:role/…, no quotes or braces)",
            ));
        }
        string("terra_run_role_arn_prefix", prefix)?;
        string("approval_topic_arn", &self.approval_topic_arn)?;
        Ok(())
    }

    /// The task's network: public IP switch, subnets and security groups.
    fn insert_network(&self, vars: &mut BTreeMap<String, String>) -> Result<()> {
        let public_ip = if self.assign_public_ip {
            "ENABLED"
        } else {
            "DISABLED"
        };
        vars.insert("assign_public_ip".to_owned(), public_ip.to_owned());
        for (name, list) in [
            ("subnet_ids", &self.subnet_ids),
            ("security_group_ids", &self.security_group_ids),
        ] {
            if list.is_empty() {
                return Err(invalid(name, "[]", "must list at least one id"));
            }
            vars.insert(name.to_owned(), json_array(list));
        }
        Ok(())
    }

    /// The timeouts, heartbeats and retry settings.
    fn insert_timing(&self, vars: &mut BTreeMap<String, String>) -> Result<()> {
        for (name, seconds) in [
            ("approval_timeout_seconds", self.approval_timeout_seconds),
            ("plan_heartbeat_seconds", self.plan_heartbeat_seconds),
            ("plan_timeout_seconds", self.plan_timeout_seconds),
            ("apply_heartbeat_seconds", self.apply_heartbeat_seconds),
            ("apply_timeout_seconds", self.apply_timeout_seconds),
            ("retry_interval_seconds", self.retry_interval_seconds),
        ] {
            if seconds == 0 {
                return Err(invalid(name, "0", "must be at least 1 second"));
            }
            vars.insert(name.to_owned(), seconds.to_string());
        }
        // Step Functions rejects a heartbeat that is not shorter than the timeout.
        for (name, heartbeat, timeout) in [
            (
                "plan_heartbeat_seconds",
                self.plan_heartbeat_seconds,
                self.plan_timeout_seconds,
            ),
            (
                "apply_heartbeat_seconds",
                self.apply_heartbeat_seconds,
                self.apply_timeout_seconds,
            ),
        ] {
            if heartbeat >= timeout {
                return Err(invalid(
                    name,
                    &heartbeat.to_string(),
                    "must be shorter than the task's timeout",
                ));
            }
        }
        vars.insert(
            "retry_max_attempts".to_owned(),
            self.retry_max_attempts.to_string(),
        );
        Ok(())
    }

    /// The deployment state machine's definition with these variables.
    pub fn render_deployment(&self) -> Result<String> {
        let rendered = crate::render(DEPLOYMENT_TEMPLATE, &self.to_template_vars()?)?;
        crate::asl::check(&rendered)?;
        Ok(rendered)
    }
}

fn invalid(name: &str, value: &str, reason: &'static str) -> WorkflowError {
    WorkflowError::InvalidValue {
        name: name.to_owned(),
        value: value.to_owned(),
        reason,
    }
}

/// `value` as the inside of a JSON string literal: what Terraform's
/// `"${…}"` gives for values without quotes or backslashes, and safe for any.
fn json_string_body(value: &str) -> String {
    let quoted = serde_json::Value::String(value.to_owned()).to_string();
    quoted[1..quoted.len() - 1].to_owned()
}

fn json_array(items: &[String]) -> String {
    serde_json::Value::from(items.to_vec()).to_string()
}
