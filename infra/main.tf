# live-ci: the serverless pipeline for a Terragrunt live repository. Resources are
# split by component: lambda.tf, ecs.tf, statemachine.tf, events.tf, ssm.tf,
# metadb.tf, storage.tf (KMS, plan bucket, SES), iam.tf.

data "aws_caller_identity" "current" {}
data "aws_region" "current" {}
data "aws_partition" "current" {}

locals {
  account_id = data.aws_caller_identity.current.account_id
  region     = data.aws_region.current.name
  partition  = data.aws_partition.current.partition

  tags = merge({ "live-ci:name" = var.name }, var.tags)

  # One key for everything the module encrypts, created unless the caller brings one.
  kms_key_arn = var.create_kms_key ? aws_kms_key.this[0].arn : var.kms_key_arn

  # The Lambdas (notifier only with notification_format set); names as
  # cargo-lambda names the binaries. lambda_zip_dir
  # holds either a release's assets (<name>.zip) or `make package`'s output
  # (<name>/bootstrap.zip); nothing is read from outside the module's inputs, so
  # the module works from a git source alone.
  lambda_names = concat(["receiver", "trigger-sf", "approval-request", "approval-response"], var.notification_format != null ? ["notifier"] : [])
  lambda_zips = {
    for n in local.lambda_names : n => lookup(var.lambda_zip_paths, n,
      var.lambda_zip_dir == null ? null : (
        fileexists("${var.lambda_zip_dir}/${n}.zip") ? "${var.lambda_zip_dir}/${n}.zip" : "${var.lambda_zip_dir}/${n}/bootstrap.zip"
      )
    )
  }

  # The subcommands of live-ci-task, one task definition each (own CPU,
  # memory and log group, so statuses link to the right stream). drift plans
  # every unit as pr-plan plans a pull request's: pr-plan's size. Its task
  # definition costs nothing until drift_schedule_expression starts it.
  task_kinds = {
    "pr-plan"             = { cpu = var.pr_plan_cpu, memory = var.pr_plan_memory }
    "create-deploy-stack" = { cpu = var.create_deploy_stack_cpu, memory = var.create_deploy_stack_memory }
    "terra-run"           = { cpu = var.terra_run_cpu, memory = var.terra_run_memory }
    "drift"               = { cpu = var.pr_plan_cpu, memory = var.pr_plan_memory }
  }
  # awslogs-stream-prefix; streams are <prefix>/<container>/<task id>.
  task_log_stream_prefix = "task"

  task_image = var.task_image != null ? var.task_image : "${one(aws_ecr_repository.task[*].repository_url)}:${var.task_image_tag}"

  ssm_prefix = "/${var.name}"
  ssm_names = {
    merge_lock           = "${local.ssm_prefix}/merge-lock"
    commit_status_config = "${local.ssm_prefix}/commit-status-config"
    webhook_secret       = "${local.ssm_prefix}/github-webhook-secret"
    github_token         = "${local.ssm_prefix}/github-token"
    # Only with github_app: the App's private key (PEM), set by hand in SSM.
    github_app_private_key = "${local.ssm_prefix}/github-app-private-key"
    vote_link_key          = "${local.ssm_prefix}/vote-link-key"
    # Signs the read-only run page's links (approval-response); its own key,
    # so the Lambdas that mint run links cannot mint vote links.
    run_link_key = "${local.ssm_prefix}/run-link-key"
    metadb_url   = "${local.ssm_prefix}/metadb-url"
  }

  # GitHub: a token (github_token) or a GitHub App (github_app), never both
  # (the precondition on the merge lock parameter). The binaries read the
  # variables of one or the other (live_ci_github::GitHubAuth).
  github_app    = var.github_app != null
  github_secret = local.github_app ? "github_app_private_key" : "github_token"
  github_env = local.github_app ? {
    GITHUB_APP_ID                  = tostring(var.github_app.id)
    GITHUB_APP_INSTALLATION_ID     = tostring(var.github_app.installation_id)
    GITHUB_APP_PRIVATE_KEY_SSM_KEY = local.ssm_names.github_app_private_key
    } : {
    GITHUB_TOKEN_SSM_KEY = local.ssm_names.github_token
  }

  # Private module sources over HTTPS (GitHub App only; see outputs.tf's
  # precondition): what the tasks read (live-ci-task's config.rs).
  module_sources_env = length(var.module_source_repositories) > 0 ? {
    MODULE_SOURCE_REPOSITORIES = join(",", var.module_source_repositories)
    MODULE_SOURCES_FOR_FORKS   = tostring(var.module_sources_for_forks)
  } : {}

  plan_bucket_name = coalesce(var.plan_bucket_name, "${var.name}-plans-${local.account_id}-${local.region}")

  # The drift check (events.tf): its schedule, and trigger-sf's launch of the
  # drift task, exist only with drift_schedule_expression.
  drift = var.drift_schedule_expression != null

  metadb_direct = var.metadb_connection == "direct"
  # What every Data API client of the metadb reads.
  metadb_data_api_env = {
    METADB_CLUSTER_ARN = aws_rds_cluster.metadb.arn
    METADB_SECRET_ARN  = aws_rds_cluster.metadb.master_user_secret[0].secret_arn
    METADB_NAME        = var.metadb_name
  }
  # terra-run logs in with its own restricted login's secret (metadb.tf),
  # never the master's; create-deploy-stack, the migrator, keeps the master and
  # is told terra-run's secret, whose password it sets (ecs.tf task_env_by_kind).
  metadb_terra_run_login_env = {
    METADB_SECRET_ARN = aws_secretsmanager_secret.metadb_terra_run.arn
  }
  metadb_migrator_env = {
    METADB_TERRA_RUN_SECRET_ARN = aws_secretsmanager_secret.metadb_terra_run.arn
    METADB_DRIFT_SECRET_ARN     = aws_secretsmanager_secret.metadb_drift.arn
  }
  # drift logs in with its own restricted login's secret too (migration
  # 0020's live_ci_drift), set by the same migrator.
  metadb_drift_login_env = {
    METADB_SECRET_ARN = aws_secretsmanager_secret.metadb_drift.arn
  }
  # terra-run's statuses link to the read-only run page, signed with the
  # run-link key.
  terra_run_link_env = {
    RUN_LINK_KEY_SSM_KEY = local.ssm_names.run_link_key
    RUN_PAGE_URL         = aws_lambda_function_url.approval_response.function_url
  }
}
