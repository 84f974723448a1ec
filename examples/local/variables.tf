variable "endpoint" {
  description = "LocalStack's URL ($AWS_ENDPOINT_URL of scripts/local-cloud.sh)."
  type        = string
  default     = "http://127.0.0.1:4566"
}

variable "region" {
  description = "Region of the local cloud."
  type        = string
  default     = "us-east-1"
}

variable "name" {
  description = "Prefix of every resource name."
  type        = string
  default     = "live-ci"
}

variable "repo_full_name" {
  description = "owner/name of the live repository (as the GitHub fake knows it)."
  type        = string
  default     = "acme/infrastructure-live"
}

variable "github_api_url" {
  description = "The GitHub API: the in-process fake of the test or demo driver."
  type        = string
}

variable "github_web_url" {
  description = "GitHub web base URL for links in mails."
  type        = string
  default     = "https://github.com"
}

variable "account_parent_cfg" {
  description = "The accounts (examples/live-repo/accounts.json by default)."
  type = list(object({
    name                = string
    path                = string
    dependencies        = optional(list(string), [])
    voters              = list(string)
    min_approval_count  = number
    min_rejection_count = number
    plan_role_arn       = string
    apply_role_arn      = string
  }))
  default = null
}

variable "commit_status_config" {
  description = "Commit statuses to post (all of them by default)."
  type        = any
  default     = {}
}

variable "plan_command" {
  description = "terra-run's plan template (terraform with a local state directory)."
  type        = string
}

variable "apply_command" {
  description = "terra-run's apply template."
  type        = string
}

variable "show_command" {
  description = "How terra-run reads a saved plan as JSON (terraform in the directory the plan command initialised)."
  type        = string
  default     = "terraform show -json -no-color {plan_file}"
}

variable "approval_sender_email" {
  description = "Sender of the approval mails (SES v2 identity, verified at once locally)."
  type        = string
  default     = "live-ci@example.com"
}

variable "approval_timeout_seconds" {
  description = "How long voters have locally."
  type        = number
  default     = 900
}

variable "github_webhook_secret" {
  description = "Webhook secret the driver signs with."
  type        = string
  sensitive   = true
}

variable "github_token" {
  description = "Token the fake GitHub accepts."
  type        = string
  sensitive   = true
}

variable "github_app" {
  description = "Authenticate as this GitHub App instead of github_token (which is then ignored): its id and installation id, as the fake trusts them. scripts/deploy-local.sh puts the App's private key into the module's github_app_private_key_ssm_parameter_name."
  type = object({
    id              = number
    installation_id = number
  })
  default = null
}

variable "vote_link_key" {
  description = "Key of the vote links (32+ characters)."
  type        = string
  sensitive   = true
}

variable "lambda_zip_dir" {
  description = "Directory with <function>/bootstrap.zip (scripts/deploy-local.sh writes them)."
  type        = string
}

variable "task_image" {
  description = "Task image name; the image map points it at target/debug/live-ci-task."
  type        = string
  default     = "live-ci-task:local"
}

variable "allow_destroy" {
  description = "Destroy the units a merge removes (the module's allow_destroy; the end-to-end tests turn it on)."
  type        = bool
  default     = false
}

variable "log_level" {
  description = "RUST_LOG of the Lambdas and tasks."
  type        = string
  default     = "info"
}

variable "metadb_connection" {
  description = "How the components reach the metadb: data-api (the module default; the local cloud's rds-data service over the local PostgreSQL) or direct (METADB_URL, which scripts/deploy-local.sh then hands to the binaries)."
  type        = string
  default     = "data-api"
}

variable "metadb_name" {
  description = "The metadb's database on the local PostgreSQL (the Data API's database name)."
  type        = string
  default     = "live_ci"
}

variable "max_parallel" {
  description = "Units deployed at once (make bench-pipeline compares 4 and 16)."
  type        = number
  default     = 4
}


variable "drift_schedule_expression" {
  description = "The module's drift_schedule_expression (null: no drift checks); the e2e sets one and invokes trigger-sf with the rule's input itself."
  type        = string
  default     = null
}

variable "notification_format" {
  description = "The module's notification_format (null: no notifications); the e2e sets json and points the URL parameter at a receiver on 127.0.0.1."
  type        = string
  default     = null
}
