# One person, one vote (issue 29 item 6): voter_github_logins reaches
# approval-response as VOTER_GITHUB_LOGINS and turns votes from the pull
# request on by itself (a mapped mail voter may vote from GitHub); bad
# entries are refused at plan, naming them. Planned against a mocked AWS
# provider. Run by scripts/infra-check.sh (`terraform test`).

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
    voters              = ["alice@example.com", "bob@example.com"]
    min_approval_count  = 2
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

run "unset_nobody_is_mapped_and_github_votes_stay_off" {
  command = plan
  assert {
    condition     = !contains(keys(local.approval_response_env), "VOTER_GITHUB_LOGINS") && !contains(keys(local.receiver_env), "APPROVAL_RESPONSE_FUNCTION")
    error_message = "without github_voters or voter_github_logins, votes from the pull request must stay off"
  }
}

run "the_map_reaches_approval_response_and_turns_github_votes_on" {
  command = plan
  variables {
    voter_github_logins = { "Alice@example.com" = "Alice" }
  }
  assert {
    condition     = jsondecode(local.approval_response_env["VOTER_GITHUB_LOGINS"]) == { "Alice@example.com" = "Alice" }
    error_message = "VOTER_GITHUB_LOGINS does not carry the map"
  }
  assert {
    condition     = contains(keys(local.receiver_env), "APPROVAL_RESPONSE_FUNCTION")
    error_message = "a mapped mail voter may vote from GitHub: the receiver must hand vote comments over"
  }
}

run "an_address_that_is_no_accounts_voter_is_refused" {
  command = plan
  variables {
    voter_github_logins = { "alice@exmaple.com" = "alice" }
  }
  expect_failures = [aws_ecs_cluster.this]
}

run "a_key_that_is_no_address_is_refused" {
  command = plan
  variables {
    voter_github_logins = { "alice" = "alice" }
  }
  expect_failures = [var.voter_github_logins]
}

run "a_value_that_is_no_login_is_refused" {
  command = plan
  variables {
    voter_github_logins = { "alice@example.com" = "acme/alice" }
  }
  expect_failures = [var.voter_github_logins]
}

run "a_login_for_two_people_is_refused" {
  command = plan
  variables {
    voter_github_logins = { "alice@example.com" = "alice", "bob@example.com" = "ALICE" }
  }
  expect_failures = [var.voter_github_logins]
}

run "an_address_listed_twice_is_refused" {
  command = plan
  variables {
    voter_github_logins = { "alice@example.com" = "alice", "ALICE@example.com" = "alice2" }
  }
  expect_failures = [var.voter_github_logins]
}
