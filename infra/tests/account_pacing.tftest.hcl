# Pacing per account (issue 32): account_parent_cfg[].max_parallel reaches the
# tasks in ACCOUNT_PARENT_CFG (null when absent: the run's cap), and a cap
# below 1 or a fraction is refused. Planned against a mocked AWS provider.
# Run by scripts/infra-check.sh (`terraform test`).

mock_provider "aws" {
  source = "./tests/mocks"
}

variables {
  github_token          = "ghp_token"
  repo_full_name        = "acme/live"
  approval_sender_email = "live-ci@example.com"
  vpc_id                = "vpc-1"
  subnet_ids            = ["subnet-1"]
  security_group_ids    = ["sg-1"]
  account_parent_cfg = [{
    name                = "dev"
    path                = "dev"
    voters              = ["ops@example.com"]
    min_approval_count  = 1
    min_rejection_count = 1
    plan_role_arn       = "arn:aws:iam::111111111111:role/plan"
    apply_role_arn      = "arn:aws:iam::111111111111:role/apply"
  }]
  # A plan only hashes the zips: any file stands in for them.
  lambda_zip_paths = {
    receiver            = "README.md"
    "trigger-sf"        = "README.md"
    "approval-request"  = "README.md"
    "approval-response" = "README.md"
  }
}

run "the_cap_reaches_the_tasks_and_is_null_when_absent" {
  command = plan
  variables {
    account_parent_cfg = [
      {
        name                = "dev"
        path                = "dev"
        voters              = ["ops@example.com"]
        min_approval_count  = 1
        min_rejection_count = 1
        plan_role_arn       = "arn:aws:iam::111111111111:role/plan"
        apply_role_arn      = "arn:aws:iam::111111111111:role/apply"
      },
      {
        name                = "production"
        path                = "production"
        voters              = ["ops@example.com"]
        min_approval_count  = 1
        min_rejection_count = 1
        plan_role_arn       = "arn:aws:iam::222222222222:role/plan"
        apply_role_arn      = "arn:aws:iam::222222222222:role/apply"
        max_parallel        = 1
      },
    ]
  }
  assert {
    condition     = [for a in jsondecode(local.task_env.ACCOUNT_PARENT_CFG) : a.max_parallel] == [null, 1]
    error_message = "ACCOUNT_PARENT_CFG does not carry the caps (null, 1)"
  }
}

run "a_cap_of_zero_is_refused" {
  command = plan
  variables {
    account_parent_cfg = [{
      name                = "production"
      path                = "production"
      voters              = ["ops@example.com"]
      min_approval_count  = 1
      min_rejection_count = 1
      plan_role_arn       = "arn:aws:iam::222222222222:role/plan"
      apply_role_arn      = "arn:aws:iam::222222222222:role/apply"
      max_parallel        = 0
    }]
  }
  expect_failures = [var.account_parent_cfg]
}

run "a_fractional_cap_is_refused" {
  command = plan
  variables {
    account_parent_cfg = [{
      name                = "production"
      path                = "production"
      voters              = ["ops@example.com"]
      min_approval_count  = 1
      min_rejection_count = 1
      plan_role_arn       = "arn:aws:iam::222222222222:role/plan"
      apply_role_arn      = "arn:aws:iam::222222222222:role/apply"
      max_parallel        = 1.5
    }]
  }
  expect_failures = [var.account_parent_cfg]
}
