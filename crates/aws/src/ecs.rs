//! ECS Fargate as the core's [`TaskLauncher`]: one `RunTask` per task, with the
//! subcommand and environment as container overrides and an idempotency token.

use std::collections::BTreeMap;

use aws_sdk_ecs::Client;
use aws_sdk_ecs::types::{
    AssignPublicIp, AwsVpcConfiguration, ContainerOverride, KeyValuePair, LaunchType,
    NetworkConfiguration, TaskOverride,
};
use live_ci_core::port::TaskLauncher;
use live_ci_core::settings::{ConfigError, Settings};
use live_ci_core::task::{StartedTask, TaskKind, TaskSpec, cloudwatch_logs_url};

use live_ci_core::port::ErrorKind;

use crate::error::{AwsError, Failure};

/// Where one kind of task runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskDefinitionRef {
    /// The task definition's ARN (`<KIND>_TASK_DEFINITION_ARN`).
    pub task_definition: String,
    /// The container whose command and environment are overridden (`<KIND>_CONTAINER_NAME`).
    pub container: String,
    /// The awslogs `awslogs-group` and `awslogs-stream-prefix` of the container,
    /// from which the log stream name follows: `<prefix>/<container>/<task id>`.
    pub log_group: String,
    /// The `awslogs-stream-prefix` (`<KIND>_LOG_STREAM_PREFIX`).
    pub log_stream_prefix: String,
}

/// Where and how a binary starts ECS tasks (Fargate, awsvpc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EcsConfig {
    /// The cluster's ARN (`ECS_CLUSTER_ARN`).
    pub cluster: String,
    /// The region the tasks run and log in (`AWS_REGION`).
    pub region: String,
    /// The tasks' subnets (`ECS_SUBNET_IDS`, comma-separated).
    pub subnets: Vec<String>,
    /// The tasks' security groups (`ECS_SECURITY_GROUP_IDS`, comma-separated).
    pub security_groups: Vec<String>,
    /// Whether a task gets a public IP (`ECS_ASSIGN_PUBLIC_IP`, default false).
    pub assign_public_ip: bool,
    /// The task definition of each kind this binary starts.
    pub tasks: BTreeMap<TaskKind, TaskDefinitionRef>,
}

/// The variables naming one kind's task definition, container and log stream,
/// as the Terraform module sets them for every function that launches it.
fn task_variables(kind: TaskKind) -> [&'static str; 4] {
    match kind {
        TaskKind::PrPlan => [
            "PR_PLAN_TASK_DEFINITION_ARN",
            "PR_PLAN_CONTAINER_NAME",
            "PR_PLAN_LOG_GROUP",
            "PR_PLAN_LOG_STREAM_PREFIX",
        ],
        TaskKind::CreateDeployStack => [
            "CREATE_DEPLOY_STACK_TASK_DEFINITION_ARN",
            "CREATE_DEPLOY_STACK_CONTAINER_NAME",
            "CREATE_DEPLOY_STACK_LOG_GROUP",
            "CREATE_DEPLOY_STACK_LOG_STREAM_PREFIX",
        ],
        TaskKind::TerraRun => [
            "TERRA_RUN_TASK_DEFINITION_ARN",
            "TERRA_RUN_CONTAINER_NAME",
            "TERRA_RUN_LOG_GROUP",
            "TERRA_RUN_LOG_STREAM_PREFIX",
        ],
        TaskKind::Drift => [
            "DRIFT_TASK_DEFINITION_ARN",
            "DRIFT_CONTAINER_NAME",
            "DRIFT_LOG_GROUP",
            "DRIFT_LOG_STREAM_PREFIX",
        ],
    }
}

impl EcsConfig {
    /// The cluster, the network and the task definitions of `kinds`, from the
    /// environment: the receiver and trigger_sf's sweep read the same variables,
    /// so both launch create-deploy-stack the same way.
    pub fn from_settings<F: Fn(&str) -> Option<String>>(
        env: &Settings<F>,
        kinds: &[TaskKind],
    ) -> Result<Self, ConfigError> {
        let mut tasks = BTreeMap::new();
        for &kind in kinds {
            let [def, container, group, prefix] = task_variables(kind);
            tasks.insert(
                kind,
                TaskDefinitionRef {
                    task_definition: env.req(def)?,
                    container: env.req(container)?,
                    log_group: env.req(group)?,
                    log_stream_prefix: env.req(prefix)?,
                },
            );
        }
        Ok(EcsConfig {
            cluster: env.req("ECS_CLUSTER_ARN")?,
            region: env.req("AWS_REGION")?,
            subnets: env.list("ECS_SUBNET_IDS")?,
            security_groups: env.list("ECS_SECURITY_GROUP_IDS")?,
            assign_public_ip: env.flag("ECS_ASSIGN_PUBLIC_IP", false)?,
            tasks,
        })
    }
}

/// ECS RunTask as the core's task launcher.
#[derive(Debug, Clone)]
pub struct EcsTaskLauncher {
    client: Client,
    config: EcsConfig,
}

impl EcsTaskLauncher {
    /// A launcher starting the configured kinds with `client`.
    pub fn new(client: Client, config: EcsConfig) -> Self {
        EcsTaskLauncher { client, config }
    }
}

impl TaskLauncher for EcsTaskLauncher {
    type Error = AwsError;

    async fn start(&self, spec: &TaskSpec) -> Result<StartedTask, AwsError> {
        let kind = spec.kind.subcommand();
        let def = self
            .config
            .tasks
            .get(&spec.kind)
            .ok_or_else(|| AwsError::NoTaskDefinition(kind.to_string()))?;
        let err = |message: Failure| AwsError::Ecs {
            kind: kind.to_string(),
            message,
        };
        let vpc = AwsVpcConfiguration::builder()
            .set_subnets(Some(self.config.subnets.clone()))
            .set_security_groups(Some(self.config.security_groups.clone()))
            .assign_public_ip(if self.config.assign_public_ip {
                AssignPublicIp::Enabled
            } else {
                AssignPublicIp::Disabled
            })
            .build()
            .map_err(|e| err(Failure::other(ErrorKind::Permanent, e)))?;
        let env: Vec<KeyValuePair> = spec
            .env
            .iter()
            .map(|(k, v)| KeyValuePair::builder().name(k).value(v).build())
            .collect();
        let container = ContainerOverride::builder()
            .name(&def.container)
            .command(kind)
            .set_environment(Some(env))
            .build();
        let out = self
            .client
            .run_task()
            .cluster(&self.config.cluster)
            .task_definition(&def.task_definition)
            .launch_type(LaunchType::Fargate)
            .network_configuration(
                NetworkConfiguration::builder()
                    .awsvpc_configuration(vpc)
                    .build(),
            )
            .overrides(
                TaskOverride::builder()
                    .container_overrides(container)
                    .build(),
            )
            .client_token(&spec.client_token)
            .started_by("live-ci")
            .count(1)
            .send()
            .await
            .map_err(|e| err(Failure::sdk(e)))?;
        if let Some(f) = out.failures().first() {
            return Err(err(format!(
                "{} ({})",
                f.reason().unwrap_or("unknown failure"),
                f.detail().or(f.arn()).unwrap_or("no detail")
            )
            .into()));
        }
        let task_arn = out
            .tasks()
            .first()
            .and_then(|t| t.task_arn())
            .ok_or_else(|| err("ecs started no task and reported no failure".into()))?
            .to_string();
        let task_id = task_arn.rsplit('/').next().unwrap_or(&task_arn);
        let stream = format!("{}/{}/{}", def.log_stream_prefix, def.container, task_id);
        Ok(StartedTask {
            logs_url: Some(cloudwatch_logs_url(
                &self.config.region,
                &def.log_group,
                &stream,
            )),
            task_arn,
        })
    }

    fn service_url(&self) -> Option<String> {
        live_ci_core::status::target::ecs_cluster(&self.config.cluster)
    }
}
