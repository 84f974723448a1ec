output "webhook_url" {
  description = "The receiver's Function URL (send to $AWS_ENDPOINT_URL with its Host header)."
  value       = module.live_ci.webhook_url
}

output "approval_url" {
  description = "approval-response's Function URL."
  value       = module.live_ci.approval_url
}

output "state_machine_arn" {
  description = "The deployment state machine."
  value       = module.live_ci.state_machine_arn
}

output "merge_lock_ssm_parameter_name" {
  description = "The merge lock's mirror."
  value       = module.live_ci.merge_lock_ssm_parameter_name
}

output "lambda_function_names" {
  description = "The Lambdas (notifier only with notification_format set)."
  value       = module.live_ci.lambda_function_names
}

output "ecs_cluster_arn" {
  description = "The ECS cluster."
  value       = module.live_ci.ecs_cluster_arn
}

output "task_role_arns" {
  description = "The pr-plan and create-deploy-stack task roles: what the target accounts' plan roles trust (scripts/target-account-roles.py)."
  value       = module.live_ci.task_role_arns
}

output "terra_run_role_arns" {
  description = "terra-run's task roles by account, { plan, apply }: an account's plan role trusts its plan entry, its apply role only its apply entry (scripts/target-account-roles.py)."
  value       = module.live_ci.terra_run_role_arns
}

output "approval_topic_arn" {
  description = "The approval requests' topic (its policy lets only the state machine publish: tests/e2e)."
  value       = module.live_ci.approval_topic_arn
}

output "github_app_private_key_ssm_parameter_name" {
  description = "With github_app: the SecureString scripts/deploy-local.sh puts the App's private key into; null with a token."
  value       = module.live_ci.github_app_private_key_ssm_parameter_name
}
