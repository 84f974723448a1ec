# The merge lock's scope (issue 32 item 6): "repo" by default, "units" reaches
# trigger-sf and the tasks as MERGE_LOCK_SCOPE, anything else is refused.
# Planned against a mocked AWS provider. Run by scripts/infra-check.sh.

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

run "the_default_is_repo_and_reaches_trigger_sf_and_the_tasks" {
  command = plan
  assert {
    condition     = local.trigger_sf_env.MERGE_LOCK_SCOPE == "repo" && local.task_env.MERGE_LOCK_SCOPE == "repo"
    error_message = "MERGE_LOCK_SCOPE is not \"repo\" by default"
  }
}

run "units_reaches_trigger_sf_and_the_tasks" {
  command = plan
  variables {
    merge_lock_scope = "units"
  }
  assert {
    condition     = local.trigger_sf_env.MERGE_LOCK_SCOPE == "units" && local.task_env.MERGE_LOCK_SCOPE == "units"
    error_message = "MERGE_LOCK_SCOPE does not carry \"units\""
  }
}

run "another_scope_is_refused" {
  command = plan
  variables {
    merge_lock_scope = "unit"
  }
  expect_failures = [var.merge_lock_scope]
}
