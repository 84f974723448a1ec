# The module's GitHub authentication settings, planned against a mocked AWS
# provider (no account, no network): a token or a GitHub App, never both, and
# an App's key only ever as a parameter the module creates with a placeholder.
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

run "a_token_and_an_app_at_once_is_refused" {
  command = plan
  variables {
    github_token = "ghp_both"
    github_app   = { id = 12, installation_id = 34 }
  }
  expect_failures = [aws_ssm_parameter.merge_lock]
}

run "an_app_gets_its_key_parameter_and_no_token_parameter" {
  command = plan
  variables {
    github_app = { id = 12, installation_id = 34 }
  }
  assert {
    condition     = aws_ssm_parameter.github_app_private_key[0].value == "unset"
    error_message = "the app's key parameter is a placeholder"
  }
  assert {
    condition     = !contains(keys(aws_ssm_parameter.secret_placeholder), "github_token")
    error_message = "no token parameter with an app"
  }
  assert {
    condition     = output.github_app_private_key_ssm_parameter_name == "/live-ci/github-app-private-key"
    error_message = "the key's parameter is named in the outputs"
  }
  assert {
    condition     = local.github_env.GITHUB_APP_ID == "12" && local.github_env.GITHUB_APP_INSTALLATION_ID == "34"
    error_message = "the binaries get the app's ids"
  }
}

run "a_token_works_as_before" {
  command = plan
  assert {
    condition     = contains(keys(aws_ssm_parameter.secret_placeholder), "github_token")
    error_message = "the token's placeholder parameter"
  }
  assert {
    condition     = length(aws_ssm_parameter.github_app_private_key) == 0
    error_message = "no app key parameter without an app"
  }
  assert {
    condition     = join(",", keys(local.github_env)) == "GITHUB_TOKEN_SSM_KEY"
    error_message = "the binaries get the token's parameter only"
  }
}

run "an_app_id_that_is_no_whole_number_is_refused" {
  command = plan
  variables {
    github_app = { id = 1.5, installation_id = 34 }
  }
  expect_failures = [var.github_app]
}

run "module_sources_reach_the_tasks_with_an_app" {
  command = plan
  variables {
    github_app                 = { id = 12, installation_id = 34 }
    module_source_repositories = ["acme/modules", "Acme/shared"]
  }
  assert {
    condition     = local.task_env.MODULE_SOURCE_REPOSITORIES == "acme/modules,Acme/shared" && local.task_env.MODULE_SOURCES_FOR_FORKS == "false"
    error_message = "the tasks get the module sources, forks off by default"
  }
}

run "module_sources_with_a_token_are_refused" {
  command = plan
  variables {
    module_source_repositories = ["acme/modules"]
  }
  expect_failures = [output.github_app_private_key_ssm_parameter_name]
}

run "module_sources_of_another_owner_are_refused" {
  command = plan
  variables {
    github_app                 = { id = 12, installation_id = 34 }
    module_source_repositories = ["evil/modules"]
  }
  expect_failures = [output.github_app_private_key_ssm_parameter_name]
}

run "no_module_sources_no_variables" {
  command = plan
  assert {
    condition     = !contains(keys(local.task_env), "MODULE_SOURCE_REPOSITORIES")
    error_message = "nothing configured, nothing passed"
  }
}
