# Reserved concurrency of the two public functions, planned against a mocked
# AWS provider (no account, no network): none by default (-1), the given
# number on the function, and 0 or a fraction refused.
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

run "no_reservation_by_default" {
  command = plan
  assert {
    condition     = module.receiver.reserved_concurrency == -1 && module.approval_response.reserved_concurrency == -1
    error_message = "the public functions reserve concurrency by default"
  }
}

run "the_given_reservations_cap_the_public_functions" {
  command = plan
  variables {
    receiver_reserved_concurrency          = 20
    approval_response_reserved_concurrency = 5
  }
  assert {
    condition     = module.receiver.reserved_concurrency == 20
    error_message = "the receiver does not reserve 20"
  }
  assert {
    condition     = module.approval_response.reserved_concurrency == 5
    error_message = "approval-response does not reserve 5"
  }
  assert {
    condition     = module.trigger_sf.reserved_concurrency == -1
    error_message = "trigger-sf reserves concurrency"
  }
}

run "zero_is_refused" {
  command = plan
  variables {
    receiver_reserved_concurrency = 0
  }
  expect_failures = [var.receiver_reserved_concurrency]
}

run "a_fraction_is_refused" {
  command = plan
  variables {
    approval_response_reserved_concurrency = 2.5
  }
  expect_failures = [var.approval_response_reserved_concurrency]
}
