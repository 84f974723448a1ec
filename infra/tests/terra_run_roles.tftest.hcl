# terra-run's task roles, planned against a mocked AWS provider (no account, no
# network): two per account, named <name>-<phase>-<account>, the terra-run task
# definition without a role of its own, and an account name that cannot name a
# role refused. The policies themselves are checked as rendered into the local
# cloud (tests/e2e: each_task_role_may_assume_exactly_its_accounts_role_of_its_phase).
# Run by scripts/infra-check.sh (`terraform test`).

mock_provider "aws" {
  source = "./tests/mocks"
}

variables {
  repo_full_name        = "acme/live"
  approval_sender_email = "live-ci@example.com"
  vpc_id                = "vpc-1"
  subnet_ids            = ["subnet-1"]
  security_group_ids    = ["sg-1"]
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
      name                = "prod"
      path                = "prod"
      voters              = ["ops@example.com"]
      min_approval_count  = 1
      min_rejection_count = 1
      plan_role_arn       = "arn:aws:iam::222222222222:role/plan"
      apply_role_arn      = "arn:aws:iam::222222222222:role/apply"
    },
  ]
  # A plan only hashes the zips: any file stands in for them.
  lambda_zip_paths = {
    receiver            = "README.md"
    "trigger-sf"        = "README.md"
    "approval-request"  = "README.md"
    "approval-response" = "README.md"
  }
}

run "two_roles_per_account_and_none_for_the_terra_run_definition" {
  command = plan
  assert {
    condition     = toset(keys(aws_iam_role.terra_run)) == toset(["plan-dev", "apply-dev", "plan-prod", "apply-prod"])
    error_message = "one plan-phase and one apply-phase role per account"
  }
  assert {
    condition     = aws_iam_role.terra_run["apply-prod"].name == "live-ci-apply-prod"
    error_message = "roles are named <name>-<phase>-<account>"
  }
  assert {
    condition     = local.terra_run_roles["plan-dev"].assume == "arn:aws:iam::111111111111:role/plan" && local.terra_run_roles["apply-dev"].assume == "arn:aws:iam::111111111111:role/apply" && local.terra_run_roles["apply-prod"].assume == "arn:aws:iam::222222222222:role/apply"
    error_message = "each role may assume its own account's role of its phase"
  }
  assert {
    condition     = aws_ecs_task_definition.this["terra-run"].task_role_arn == null
    error_message = "terra-run's task definition names no role: the state machine names the phase's"
  }
  assert {
    condition     = !contains(keys(aws_iam_role.task), "terra-run")
    error_message = "no shared terra-run role"
  }
  assert {
    condition     = local.terra_run_role_arn_prefix == "arn:aws:iam::123456789012:role/live-ci-"
    error_message = "the state machine builds <prefix><phase>-<account>"
  }
}

run "an_account_name_that_cannot_name_a_role_is_refused" {
  command = plan
  variables {
    account_parent_cfg = [{
      name                = "dev team"
      path                = "dev"
      voters              = ["ops@example.com"]
      min_approval_count  = 1
      min_rejection_count = 1
      plan_role_arn       = "arn:aws:iam::111111111111:role/plan"
      apply_role_arn      = "arn:aws:iam::111111111111:role/apply"
    }]
  }
  expect_failures = [aws_iam_role.terra_run]
}
