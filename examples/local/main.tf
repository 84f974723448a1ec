# live-ci deployed into the project's local cloud (scripts/local-cloud.sh):
# LocalStack with the live-ci plugin serves every AWS API the module uses, the
# Lambdas and the ECS tasks run as local processes, and the metadb is a database of
# the local PostgreSQL, reached through the RDS Data API as in AWS (the plugin's
# rds-data service; `metadb_connection = "direct"` hands METADB_URL to the
# binaries instead, see scripts/deploy-local.sh). Applied by
# scripts/deploy-local.sh, the end-to-end tests (tests/e2e) and `make demo`.

terraform {
  required_version = ">= 1.5.0"
  required_providers {
    # The version in the offline mirror (/opt/tf-plugins, scripts/terraformrc).
    aws = { source = "hashicorp/aws", version = "5.100.0" }
  }
}

provider "aws" {
  region                      = var.region
  access_key                  = "test"
  secret_key                  = "test"
  skip_credentials_validation = true
  # The provider asks STS for the account, as in AWS: the ARNs it builds itself (the
  # SES identity's, which the approval-request policy names) carry it, and the local
  # cloud's IAM compares them with the requests' ARNs.
  skip_metadata_api_check = true
  s3_use_path_style       = true

  # Every service the module touches, at LocalStack.
  endpoints {
    cloudwatchlogs = var.endpoint
    ec2            = var.endpoint
    ecr            = var.endpoint
    ecs            = var.endpoint
    events         = var.endpoint
    iam            = var.endpoint
    kms            = var.endpoint
    lambda         = var.endpoint
    rds            = var.endpoint
    s3             = var.endpoint
    secretsmanager = var.endpoint
    sesv2          = var.endpoint
    sfn            = var.endpoint
    sns            = var.endpoint
    sqs            = var.endpoint
    ssm            = var.endpoint
    sts            = var.endpoint
  }
}

# LocalStack's default VPC stands in for the team's network.
data "aws_vpc" "default" {
  default = true
}

data "aws_subnets" "default" {
  filter {
    name   = "vpc-id"
    values = [data.aws_vpc.default.id]
  }
}

data "aws_security_group" "default" {
  vpc_id = data.aws_vpc.default.id
  name   = "default"
}

module "live_ci" {
  source = "../../infra"

  name           = var.name
  repo_full_name = var.repo_full_name
  github_api_url = var.github_api_url
  github_web_url = var.github_web_url
  trunk_branch   = "main"

  account_parent_cfg   = var.account_parent_cfg != null ? var.account_parent_cfg : jsondecode(file("${path.module}/../live-repo/accounts.json"))
  commit_status_config = var.commit_status_config
  allow_destroy        = var.allow_destroy

  # terragrunt is not installable here: the sample units run with terraform.
  plan_command  = var.plan_command
  apply_command = var.apply_command
  show_command  = var.show_command

  approval_sender_email    = var.approval_sender_email
  approval_timeout_seconds = var.approval_timeout_seconds
  plan_timeout_seconds     = 300
  apply_timeout_seconds    = 300
  task_heartbeat_seconds   = 120
  retry_interval_seconds   = 1
  max_parallel             = var.max_parallel
  # Locally a sweep every minute recovers lost claims quickly.
  sweep_schedule_expression = "rate(1 minute)"
  drift_schedule_expression = var.drift_schedule_expression
  notification_format       = var.notification_format
  stale_claim_seconds       = 60

  github_webhook_secret = var.github_webhook_secret
  # A token or an App, never both (the module refuses both).
  github_token  = var.github_app == null ? var.github_token : null
  github_app    = var.github_app
  vote_link_key = var.vote_link_key

  # The wrapper zips of scripts/deploy-local.sh; the task image is a name the
  # plugin's image map (LIVE_CI_LOCAL_IMAGE_MAP) resolves to target/debug/live-ci-task.
  lambda_zip_dir        = var.lambda_zip_dir
  create_ecr_repository = false
  task_image            = var.task_image

  metadb_connection          = var.metadb_connection
  metadb_name                = var.metadb_name
  metadb_deletion_protection = false
  # A throwaway metadb: each e2e or bench deployment names a fresh database, which
  # replaces the cluster, and a second final snapshot of the same name would fail.
  metadb_skip_final_snapshot = true
  log_retention_in_days      = 1
  log_level                  = var.log_level

  vpc_id             = data.aws_vpc.default.id
  subnet_ids         = slice(sort(data.aws_subnets.default.ids), 0, 2)
  security_group_ids = [data.aws_security_group.default.id]
}
