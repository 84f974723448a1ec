output "webhook_url" {
  description = "Point the GitHub repository's webhook (content type application/json, events: pull requests and issue comments) here."
  value       = aws_lambda_function_url.receiver.function_url
}

output "approval_url" {
  description = "The approval-response Function URL that the vote links in approval e-mails point to."
  value       = aws_lambda_function_url.approval_response.function_url
}

output "github_webhook_secret_ssm_parameter_name" {
  description = "SSM SecureString holding the webhook secret: the given github_webhook_secret, or the one the module generated (github_webhook_secret_generated); read it with aws ssm get-parameter --with-decryption --name <this> and configure it on the GitHub webhook."
  value       = local.ssm_names.webhook_secret
}

output "github_webhook_secret_generated" {
  description = "Whether the module generated the webhook secret (github_webhook_secret was null): then copy it from SSM into the GitHub webhook."
  value       = !local.secret_given.webhook_secret
}

output "github_token_ssm_parameter_name" {
  description = "SSM SecureString holding the GitHub token; null with github_app."
  value       = local.github_app ? null : local.ssm_names.github_token
}

output "github_app_private_key_ssm_parameter_name" {
  description = "With github_app: the SSM SecureString to put the App's private key (PEM) into; null otherwise."
  value       = local.github_app ? local.ssm_names.github_app_private_key : null

  # Here because Terraform 1.5 has no validation across variables.
  precondition {
    condition     = length(var.module_source_repositories) == 0 || local.github_app
    error_message = "module_source_repositories needs github_app: a personal github_token is never given to the code terraform runs."
  }
  precondition {
    condition = alltrue([
      for r in var.module_source_repositories : lower(split("/", r)[0]) == lower(split("/", var.repo_full_name)[0])
    ])
    error_message = "module_source_repositories: every repository must belong to the owner of repo_full_name, where the github_app is installed (an installation token reads only its own owner's repositories)."
  }
}

output "vote_link_key_ssm_parameter_name" {
  description = "SSM SecureString holding the key that signs vote links."
  value       = local.ssm_names.vote_link_key
}

output "merge_lock_ssm_parameter_name" {
  description = "SSM parameter holding the merge lock (none, or the pull request being deployed)."
  value       = aws_ssm_parameter.merge_lock.name
}

output "commit_status_config_ssm_parameter_name" {
  description = "SSM parameter holding the commit status configuration (JSON)."
  value       = aws_ssm_parameter.commit_status_config.name
}

output "metadb_url_ssm_parameter_name" {
  description = "SSM SecureString the tasks read METADB_URL from (metadb_connection = direct), or null."
  value       = local.metadb_direct ? local.ssm_names.metadb_url : null
}

output "state_machine_arn" {
  description = "ARN of the deployment state machine."
  value       = aws_sfn_state_machine.deployment.arn
}

output "metadb_cluster_arn" {
  description = "ARN of the metadb Aurora cluster (the Data API resource)."
  value       = aws_rds_cluster.metadb.arn
}

output "metadb_secret_arn" {
  description = "ARN of the Secrets Manager secret with the metadb's master credentials."
  value       = local.metadb_secret_arn
}

output "metadb_endpoint" {
  description = "Writer endpoint of the metadb (direct connections)."
  value       = aws_rds_cluster.metadb.endpoint
}

output "plan_bucket_name" {
  description = "S3 bucket of the saved plans."
  value       = aws_s3_bucket.plans.bucket
}

output "approval_topic_arn" {
  description = "SNS topic of the approval requests."
  value       = aws_sns_topic.approval.arn
}

output "ecs_cluster_arn" {
  description = "ARN of the ECS cluster running the tasks."
  value       = aws_ecs_cluster.this.arn
}

output "task_role_arns" {
  description = "ECS task role ARNs of pr-plan, create-deploy-stack and drift: the principals (with terra_run_role_arns' plan roles) the target accounts' plan roles must trust (see the README). terra-run's are per account: terra_run_role_arns."
  value       = { for k, v in aws_iam_role.task : k => v.arn }
}

output "terra_run_role_arns" {
  description = "terra-run's task roles by account name: { plan = ..., apply = ... }. An account's plan role must trust its plan entry (and the task_role_arns); its apply role only its apply entry (see the README)."
  value = { for a in var.account_parent_cfg : a.name => {
    plan  = aws_iam_role.terra_run["plan-${a.name}"].arn
    apply = aws_iam_role.terra_run["apply-${a.name}"].arn
  } }
}

output "task_definition_arns" {
  description = "Task definition ARNs by subcommand (pr-plan, create-deploy-stack, terra-run)."
  value       = { for k, v in aws_ecs_task_definition.this : k => v.arn }
}

output "task_log_group_names" {
  description = "CloudWatch log groups of the tasks by subcommand."
  value       = { for k, v in aws_cloudwatch_log_group.task : k => v.name }
}

output "lambda_function_names" {
  description = "Names of the Lambdas (notifier only with notification_format set)."
  value       = local.function_names
}

output "ecr_repository_url" {
  description = "The module's ECR repository for the task image (null when create_ecr_repository is false)."
  value       = one(aws_ecr_repository.task[*].repository_url)
}

output "task_image" {
  description = "The image the task definitions run."
  value       = local.task_image
}

output "task_image_build_command" {
  description = "How to build and push the task image with this module's terraform (or tofu) and terragrunt versions: one shell command line, run from the root of a live-ci checkout after docker login, as sh -c \"$(terraform output -raw task_image_build_command)\"."
  value = join(" ", [
    "docker build -f ecs-task/Dockerfile",
    "--build-arg IAC_TOOL=${var.iac_tool}",
    var.iac_tool == "tofu" ? "--build-arg TOFU_VERSION=${var.tofu_version}" : "--build-arg TERRAFORM_VERSION=${var.terraform_version}",
    "--build-arg TERRAGRUNT_VERSION=${var.terragrunt_version}",
    "-t ${local.task_image} . && docker push ${local.task_image}",
  ])
}

output "kms_key_arn" {
  description = "The KMS key encrypting the module's secrets, plans, topic, logs and metadb."
  value       = local.kms_key_arn
}

output "task_token_key_arn" {
  description = "The KMS key of the pending approvals' task tokens: only approval-request encrypts and only approval-response decrypts with it (its key policy, not IAM, says so)."
  value       = aws_kms_key.task_token.arn
}
