output "webhook_url" {
  description = "GitHub webhook URL."
  value       = module.live_ci.webhook_url
}

output "approval_url" {
  description = "Where vote links point."
  value       = module.live_ci.approval_url
}

output "secret_parameter_names" {
  description = "SSM SecureStrings to fill after the first apply."
  value = {
    github_webhook_secret = module.live_ci.github_webhook_secret_ssm_parameter_name
    github_token          = module.live_ci.github_token_ssm_parameter_name
    vote_link_key         = module.live_ci.vote_link_key_ssm_parameter_name
  }
}

output "state_machine_arn" {
  description = "The deployment state machine."
  value       = module.live_ci.state_machine_arn
}

output "metadb_cluster_arn" {
  description = "The metadb cluster."
  value       = module.live_ci.metadb_cluster_arn
}

output "plan_bucket_name" {
  description = "Bucket of saved plans."
  value       = module.live_ci.plan_bucket_name
}

output "task_image_build_command" {
  description = "Build and push the task image."
  value       = module.live_ci.task_image_build_command
}
