# terraform or OpenTofu, planned against a mocked AWS provider: iac_tool reaches
# every task definition as TG_TF_PATH (the binary terragrunt runs) and the image
# build command as IAC_TOOL with that tool's version; the build command is one
# shell command line (sh -c), and anything but terraform or tofu is refused.
# child_environment_passthrough reaches every task as CHILD_ENV_PASSTHROUGH, and
# may name neither live-ci's own variables nor a bare *.
# OpenTofu itself is not installable here, so no test runs tofu.
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
  task_image            = "111111111111.dkr.ecr.us-east-1.amazonaws.com/live-ci-task:0.1.0"
  create_ecr_repository = false
  account_parent_cfg = [{
    name                = "dev"
    path                = "dev"
    voters              = ["ops@example.com"]
    min_approval_count  = 1
    min_rejection_count = 1
    plan_role_arn       = "arn:aws:iam::111111111111:role/plan"
    apply_role_arn      = "arn:aws:iam::111111111111:role/apply"
  }]
  lambda_zip_paths = {
    receiver            = "README.md"
    "trigger-sf"        = "README.md"
    "approval-request"  = "README.md"
    "approval-response" = "README.md"
  }
}

run "terraform_by_default" {
  command = plan
  assert {
    condition     = alltrue([for kind, env in local.task_env_by_kind : env.TG_TF_PATH == "terraform"])
    error_message = "every task runs terraform by default"
  }
  assert {
    condition     = strcontains(output.task_image_build_command, "--build-arg IAC_TOOL=terraform --build-arg TERRAFORM_VERSION=1.11.4 ")
    error_message = "the default image builds terraform in"
  }
}

run "tofu_reaches_every_task_and_the_image" {
  command = plan
  variables {
    iac_tool     = "tofu"
    tofu_version = "1.9.1"
  }
  assert {
    condition     = alltrue([for kind, env in local.task_env_by_kind : env.TG_TF_PATH == "tofu"])
    error_message = "with iac_tool = tofu every task's terragrunt runs tofu"
  }
  assert {
    condition     = strcontains(output.task_image_build_command, "--build-arg IAC_TOOL=tofu --build-arg TOFU_VERSION=1.9.1 ")
    error_message = "the tofu image builds tofu in"
  }
  assert {
    condition     = !strcontains(output.task_image_build_command, "TERRAFORM_VERSION")
    error_message = "the tofu image does not pass a terraform version"
  }
}

run "another_tool_is_refused" {
  command = plan
  variables {
    iac_tool = "pulumi"
  }
  expect_failures = [var.iac_tool]
}

run "no_passthrough_by_default" {
  command = plan
  assert {
    condition     = alltrue([for kind, env in local.task_env_by_kind : env.CHILD_ENV_PASSTHROUGH == ""])
    error_message = "by default the children get the allow-list only"
  }
}

run "the_passthrough_reaches_every_task" {
  command = plan
  variables {
    child_environment_passthrough = ["HTTPS_PROXY", "NO_PROXY", "DATADOG_*"]
  }
  assert {
    condition     = alltrue([for kind, env in local.task_env_by_kind : env.CHILD_ENV_PASSTHROUGH == "HTTPS_PROXY,NO_PROXY,DATADOG_*"])
    error_message = "the listed names reach every task as CHILD_ENV_PASSTHROUGH"
  }
}

run "livecis_own_variables_cannot_be_passed" {
  command = plan
  variables {
    child_environment_passthrough = ["GITHUB_*"]
  }
  expect_failures = [var.child_environment_passthrough]
}

run "a_bare_star_is_refused" {
  command = plan
  variables {
    child_environment_passthrough = ["*"]
  }
  expect_failures = [var.child_environment_passthrough]
}
