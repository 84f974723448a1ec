# The ECS cluster and one Fargate task definition per live-ci-task subcommand
# (pr-plan, create-deploy-stack, terra-run), each with its own log group so
# commit statuses link to the right stream. All three share one environment
# (local.task_env); the receiver and the state machine add per-run overrides.

locals {
  task_env = merge(
    # Direct connections get METADB_URL as a secret (local.task_secrets, local.terra_run_task_secrets) instead.
    local.metadb_direct ? {} : local.metadb_data_api_env,
    local.github_env,
    local.module_sources_env,
    {
      REPO_FULL_NAME               = var.repo_full_name
      GITHUB_API_URL               = var.github_api_url
      TRUNK_BRANCH                 = var.trunk_branch
      FILE_PATH_PATTERN            = var.file_path_pattern
      MERGE_LOCK_SSM_KEY           = local.ssm_names.merge_lock
      MERGE_LOCK_SCOPE             = var.merge_lock_scope
      COMMIT_STATUS_CONFIG_SSM_KEY = local.ssm_names.commit_status_config
      ACCOUNT_PARENT_CFG           = jsonencode(var.account_parent_cfg)
      SCAN_TYPE                    = var.scan_type
      PLAN_COMMAND                 = var.plan_command
      APPLY_COMMAND                = var.apply_command
      SHOW_COMMAND                 = var.show_command
      TG_TF_PATH                   = var.iac_tool
      CHILD_ENV_PASSTHROUGH        = join(",", var.child_environment_passthrough)
      SKIP_UNCHANGED               = tostring(var.skip_unchanged)
      SSH_KNOWN_HOSTS              = var.ssh_known_hosts
      MAX_PARALLEL                 = tostring(var.max_parallel)
      FAIL_FAST                    = tostring(var.fail_fast)
      ALLOW_DESTROY                = tostring(var.allow_destroy)
      DEPLOY_FILTERS               = jsonencode(var.deploy_filters)
      POLICY_DIR                   = var.policy_dir == null ? "" : var.policy_dir
      POLICY_OVERRIDE              = tostring(var.policy_override)
      POLICY_COMMAND               = var.policy_command
      TRIGGER_SF_FUNCTION_NAME     = local.function_names["trigger-sf"]
      PLAN_BUCKET                  = aws_s3_bucket.plans.bucket
      RUST_LOG                     = var.log_level
    },
  )

  task_env_by_kind = {
    for kind, _ in local.task_kinds : kind => merge(
      local.task_env,
      {
        LOG_GROUP         = aws_cloudwatch_log_group.task[kind].name
        LOG_STREAM_PREFIX = local.task_log_stream_prefix
      },
      # terra-run's plan and apply statuses link to the read-only run page,
      # signed with the run-link key (never the vote-link key); only its roles
      # may read that key.
      kind == "terra-run" ? local.terra_run_link_env : {},
      # terra-run logs in as its own restricted login (metadb.tf); the
      # migrator, create-deploy-stack, sets that login's password (and, for
      # direct connections, its URL: terra_run_task_secrets).
      kind == "terra-run" && !local.metadb_direct ? local.metadb_terra_run_login_env : {},
      kind == "create-deploy-stack" ? local.metadb_migrator_env : {},
      # drift: its own login (drift_task_secrets for direct connections) and
      # the notification topic, when notifications are on.
      kind == "drift" && !local.metadb_direct ? local.metadb_drift_login_env : {},
      kind == "drift" ? local.notification_publisher_env : {},
    )
  }

  # Injected by ECS at start: never plain text in the task definition. Direct
  # connections: create-deploy-stack gets the URL you filled (the master's);
  # terra-run gets its own login's URL, the `url` key of the login's secret,
  # which create-deploy-stack writes (ecs-task/src/startup.rs), so code that
  # terra-run's plans run never finds the master URL in its task.
  task_secrets           = local.metadb_direct ? [{ name = "METADB_URL", valueFrom = local.ssm_arn.metadb_url }] : []
  terra_run_task_secrets = local.metadb_direct ? [{ name = "METADB_URL", valueFrom = "${aws_secretsmanager_secret.metadb_terra_run.arn}:url::" }] : []
  drift_task_secrets     = local.metadb_direct ? [{ name = "METADB_URL", valueFrom = "${aws_secretsmanager_secret.metadb_drift.arn}:url::" }] : []
  # The deploy key for git::ssh:// module sources (live-ci-task writes it to a file).
  task_ssh_key_secret = var.git_ssh_key_arn != null ? [{ name = "GIT_SSH_KEY", valueFrom = var.git_ssh_key_arn }] : []
  # The user's own secrets (task_secrets), by name.
  task_user_secrets = [for name in sort(keys(var.task_secrets)) : { name = name, valueFrom = var.task_secrets[name] }]
  # What the task execution role reads for them (a Secrets Manager JSON key
  # suffix is not part of the secret's ARN).
  task_user_secret_arns = [
    for arn in concat(values(var.task_secrets), var.git_ssh_key_arn != null ? [var.git_ssh_key_arn] : []) :
    can(regex(":secretsmanager:", arn)) ? join(":", slice(split(":", arn), 0, 7)) : arn
  ]
}

resource "aws_ecs_cluster" "this" {
  #checkov:skip=CKV_AWS_65:Container Insights is the module's container_insights, off by default: it bills per-task metrics while live-ci's tasks are short-lived and already log and post their status; turn it on for fleet-level metrics.
  name = var.name
  tags = local.tags

  setting {
    name  = "containerInsights"
    value = var.container_insights ? "enabled" : "disabled"
  }

  # Choices that need each other, checked before anything is created.
  lifecycle {
    precondition {
      condition     = var.create_kms_key || var.kms_key_arn != null
      error_message = "kms_key_arn is required when create_kms_key is false."
    }
    precondition {
      condition     = alltrue([for n, path in local.lambda_zips : path != null])
      error_message = "lambda_zip_dir (a release's assets or make package's target/lambda) or lambda_zip_paths must give a zip for ${join(", ", [for n, path in local.lambda_zips : n if path == null])}."
    }
    precondition {
      condition     = var.create_ecr_repository || var.task_image != null
      error_message = "task_image is required when create_ecr_repository is false."
    }
    # A typo in an address would silently leave that person two voters
    # again; approval-response refuses it too (voter_identity.rs).
    precondition {
      condition     = alltrue([for e, login in var.voter_github_logins : contains(flatten([for a in var.account_parent_cfg : [for v in a.voters : lower(v)]]), lower(e))])
      error_message = "voter_github_logins: every address must be a voter of some account in account_parent_cfg; not so for ${join(", ", [for e, login in var.voter_github_logins : jsonencode(e) if !contains(flatten([for a in var.account_parent_cfg : [for v in a.voters : lower(v)]]), lower(e))])}."
    }
  }
}

resource "aws_ecs_cluster_capacity_providers" "this" {
  cluster_name       = aws_ecs_cluster.this.name
  capacity_providers = ["FARGATE"]

  default_capacity_provider_strategy {
    capacity_provider = "FARGATE"
    weight            = 1
  }
}

resource "aws_cloudwatch_log_group" "task" {
  #checkov:skip=CKV_AWS_338:Retention is the module\'s log_retention_in_days, 30 days by default to keep idle costs down; set 365 or more where a policy asks for a year.
  for_each = local.task_kinds

  name              = "/${var.name}/task/${each.key}"
  retention_in_days = var.log_retention_in_days
  kms_key_id        = local.kms_key_arn
  tags              = local.tags
}

resource "aws_ecs_task_definition" "this" {
  #checkov:skip=CKV_AWS_336:terraform and terragrunt write provider plugins, clones and plan files all over the file system.
  for_each = local.task_kinds

  family                   = "${var.name}-${each.key}"
  requires_compatibilities = ["FARGATE"]
  network_mode             = "awsvpc"
  cpu                      = tostring(each.value.cpu)
  memory                   = tostring(each.value.memory)
  # terra-run has no role of its own: the state machine names its account's
  # role of the phase for each task (overrides.taskRoleArn, iam.tf
  # terra_run_roles), so a task started without one gets no credentials.
  task_role_arn      = each.key == "terra-run" ? null : aws_iam_role.task[each.key].arn
  execution_role_arn = aws_iam_role.task_execution.arn
  tags               = local.tags

  runtime_platform {
    operating_system_family = "LINUX"
    cpu_architecture        = var.task_cpu_architecture
  }

  ephemeral_storage {
    size_in_gib = var.task_ephemeral_storage_gib
  }

  container_definitions = jsonencode([{
    name      = each.key
    image     = local.task_image
    essential = true
    # The image's entrypoint is live-ci-task; the subcommand is the command.
    command = [each.key]
    # task_environment first, so that live-ci's own names win.
    environment = [
      for k, v in merge(var.task_environment, local.task_env_by_kind[each.key]) : { name = k, value = v }
    ]
    # pr-plan runs a pull request's code and never touches the metadb; the
    # user's secrets and the SSH deploy key (task_secrets, git_ssh_key_arn) go to
    # every task.
    secrets = concat(
      each.key == "pr-plan" ? [] : (
        each.key == "terra-run" ? local.terra_run_task_secrets : (
          each.key == "drift" ? local.drift_task_secrets : local.task_secrets
        )
      ),
      local.task_ssh_key_secret,
      local.task_user_secrets,
    )
    readonlyRootFilesystem = false
    # StopTask (or a Spot reclaim) sends SIGTERM, then SIGKILL after this: the
    # most Fargate allows, so an interrupted terraform can finish what is in
    # flight, write its state and release its lock (ecs-task/src/run.rs).
    stopTimeout = 120
    logConfiguration = {
      logDriver = "awslogs"
      options = {
        awslogs-group         = aws_cloudwatch_log_group.task[each.key].name
        awslogs-region        = local.region
        awslogs-stream-prefix = local.task_log_stream_prefix
      }
    }
  }])
}
