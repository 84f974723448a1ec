# A complete live-ci deployment: a VPC of its own (two private subnets with a
# NAT gateway would be usual; this example takes existing ones), two accounts
# where prod waits for dev, and secrets set outside Terraform.

provider "aws" {
  region = var.region
}

module "live_ci" {
  source = "../.."

  name = "live-ci"
  # `make package`'s output in this checkout; with a release, the directory its
  # assets were downloaded to (receiver.zip, …, checked with SHA256SUMS).
  lambda_zip_dir = var.lambda_zip_dir
  repo_full_name = "example-org/infrastructure-live"
  trunk_branch   = "main"
  scan_type      = "graph"

  account_parent_cfg = [
    {
      name                = "dev"
      path                = "dev-account"
      voters              = ["platform-team@example.com"]
      min_approval_count  = 1
      min_rejection_count = 1
      plan_role_arn       = "arn:aws:iam::111111111111:role/live-ci-plan"
      apply_role_arn      = "arn:aws:iam::111111111111:role/live-ci-apply"
    },
    {
      name                = "prod"
      path                = "prod-account"
      dependencies        = ["dev"]
      voters              = ["platform-team@example.com", "sre-lead@example.com"]
      min_approval_count  = 2
      min_rejection_count = 1
      plan_role_arn       = "arn:aws:iam::222222222222:role/live-ci-plan"
      apply_role_arn      = "arn:aws:iam::222222222222:role/live-ci-apply"
    },
  ]

  commit_status_config = {
    PrPlan = true
    Apply  = true
  }

  approval_sender_email    = "live-ci@example.com"
  approval_timeout_seconds = 2 * 24 * 3600
  max_parallel             = 5
  fail_fast                = false

  vpc_id             = var.vpc_id
  subnet_ids         = var.subnet_ids
  security_group_ids = var.security_group_ids

  lambda_architecture   = "x86_64"
  log_retention_in_days = 365
  terraform_version     = "1.11.4"
  terragrunt_version    = "0.77.22"

  # The secrets are left to SSM: after apply, put the values into the
  # parameters named by the *_ssm_parameter_name outputs.
  github_webhook_secret = null
  github_token          = null
  vote_link_key         = null

  tags = {
    team = "platform"
  }
}
