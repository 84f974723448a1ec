# Where the Lambda zips come from: a release's assets (<function>.zip) or make
# package's output (<function>/bootstrap.zip) in lambda_zip_dir, or
# lambda_zip_paths; with none of them the plan fails naming the functions
# (the module reads nothing outside its inputs). Run by scripts/infra-check.sh.

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
}

run "a_release_directory_gives_each_function_its_zip" {
  command = plan
  variables {
    lambda_zip_dir = "tests/fixtures/release-assets"
  }
  assert {
    condition     = local.lambda_zips["receiver"] == "tests/fixtures/release-assets/receiver.zip"
    error_message = "a release's receiver.zip is the receiver's zip"
  }
  assert {
    condition     = local.lambda_zips["approval-response"] == "tests/fixtures/release-assets/approval-response.zip"
    error_message = "a release's approval-response.zip is approval-response's zip"
  }
}

run "make_packages_layout_is_read_too" {
  command = plan
  variables {
    lambda_zip_dir = "tests/fixtures/package-output"
  }
  assert {
    condition     = local.lambda_zips["trigger-sf"] == "tests/fixtures/package-output/trigger-sf/bootstrap.zip"
    error_message = "make package's trigger-sf/bootstrap.zip is trigger-sf's zip"
  }
}

run "no_zips_fail_naming_the_functions" {
  command         = plan
  expect_failures = [aws_ecs_cluster.this]
}
