# Parameters: the merge lock (written by the tasks and trigger-sf), the commit
# status config (edited by hand after the first apply), and the three secrets.

resource "aws_ssm_parameter" "merge_lock" {
  #checkov:skip=CKV2_AWS_34:Not a secret (none or a pull request number), and the pipeline rewrites it as a String parameter (PutParameter with overwrite keeps the type).
  name        = local.ssm_names.merge_lock
  description = "live-ci merge lock: the pull request whose deployment is running, or none"
  type        = "String"
  value       = "none"
  tags        = local.tags

  # The pipeline owns the value after creation.
  lifecycle {
    ignore_changes = [value]
  }
}

resource "aws_ssm_parameter" "commit_status_config" {
  #checkov:skip=CKV2_AWS_34:Not a secret: four booleans that operators edit by hand.
  name        = local.ssm_names.commit_status_config
  description = "live-ci commit status configuration (JSON)"
  type        = "String"
  value       = jsonencode(var.commit_status_config)
  tags        = local.tags
}

locals {
  # A placeholder is stored when the value is not given; Terraform then leaves
  # the parameter to whoever sets it in SSM.
  secret_values = {
    webhook_secret = var.github_webhook_secret
    github_token   = var.github_token
    vote_link_key  = var.vote_link_key
  }
  secret_descriptions = {
    webhook_secret = "GitHub webhook secret (X-Hub-Signature-256)"
    github_token   = "GitHub token for statuses and comments"
    vote_link_key  = "Key signing the approve/reject links"
  }
  # Whether a value was given is not itself secret; for_each refuses sensitive keys.
  secret_given = { for k, v in local.secret_values : k => nonsensitive(v != null) }
}

resource "aws_ssm_parameter" "secret" {
  for_each = toset([for k, given in local.secret_given : k if given])

  name        = local.ssm_names[each.key]
  description = "live-ci: ${local.secret_descriptions[each.key]}"
  type        = "SecureString"
  key_id      = local.kms_key_arn
  value       = local.secret_values[each.key]
  tags        = local.tags
}

resource "aws_ssm_parameter" "secret_placeholder" {
  for_each = toset([for k, given in local.secret_given : k if !given])

  name        = local.ssm_names[each.key]
  description = "live-ci: ${local.secret_descriptions[each.key]} (set the value in SSM)"
  type        = "SecureString"
  key_id      = local.kms_key_arn
  value       = "unset"
  tags        = local.tags

  lifecycle {
    ignore_changes = [value]
  }
}

# Direct metadb connections: the tasks get METADB_URL from this parameter through
# the task definition's secrets, never as plain environment. Its value
# (postgres://user:password@host:5432/db?sslmode=verify-full) is yours to set.
resource "aws_ssm_parameter" "metadb_url" {
  count = local.metadb_direct ? 1 : 0

  name        = local.ssm_names.metadb_url
  description = "live-ci: metadb connection URL for the ECS tasks (set the value in SSM)"
  type        = "SecureString"
  key_id      = local.kms_key_arn
  value       = "unset"
  tags        = local.tags

  lifecycle {
    ignore_changes = [value]
  }
}
