# commit_status_config is the SSM parameter's first value only: applied twice
# against a mocked AWS provider, a second value of the variable does not reach
# the parameter, the same way an operator's edit in SSM is not reverted by the
# next apply (lifecycle ignore_changes). Run by scripts/infra-check.sh.

# apply validates ARNs, so the resources other resources point at get real-looking ones.
mock_provider "aws" {
  source = "./tests/mocks"
  mock_resource "aws_iam_role" {
    defaults = { arn = "arn:aws:iam::123456789012:role/mock" }
  }
  mock_resource "aws_sqs_queue" {
    defaults = { arn = "arn:aws:sqs:eu-west-1:123456789012:mock" }
  }
  mock_resource "aws_sns_topic" {
    defaults = { arn = "arn:aws:sns:eu-west-1:123456789012:mock" }
  }
  mock_resource "aws_lambda_function" {
    defaults = { arn = "arn:aws:lambda:eu-west-1:123456789012:function:mock" }
  }
  mock_resource "aws_kms_key" {
    defaults = { arn = "arn:aws:kms:eu-west-1:123456789012:key/11111111-1111-1111-1111-111111111111" }
  }
  mock_resource "aws_sfn_state_machine" {
    defaults = { arn = "arn:aws:states:eu-west-1:123456789012:stateMachine:mock" }
  }
  mock_resource "aws_s3_bucket" {
    defaults = { arn = "arn:aws:s3:::mock" }
  }
  mock_resource "aws_cloudwatch_log_group" {
    defaults = { arn = "arn:aws:logs:eu-west-1:123456789012:log-group:mock" }
  }
  mock_resource "aws_ssm_parameter" {
    defaults = { arn = "arn:aws:ssm:eu-west-1:123456789012:parameter/mock" }
  }
  mock_resource "aws_ecs_cluster" {
    defaults = { arn = "arn:aws:ecs:eu-west-1:123456789012:cluster/mock" }
  }
  mock_resource "aws_ecs_task_definition" {
    defaults = { arn = "arn:aws:ecs:eu-west-1:123456789012:task-definition/mock:1" }
  }
  mock_resource "aws_secretsmanager_secret" {
    defaults = { arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:mock-AbCdEf" }
  }
  mock_resource "aws_cloudwatch_event_rule" {
    defaults = { arn = "arn:aws:events:eu-west-1:123456789012:rule/mock" }
  }
  mock_resource "aws_ecr_repository" {
    defaults = { arn = "arn:aws:ecr:eu-west-1:123456789012:repository/mock" }
  }
  mock_resource "aws_iam_policy" {
    defaults = { arn = "arn:aws:iam::123456789012:policy/mock" }
  }
  mock_resource "aws_sesv2_configuration_set" {
    defaults = { arn = "arn:aws:ses:eu-west-1:123456789012:configuration-set/mock" }
  }
}

variables {
  repo_full_name        = "acme/live"
  approval_sender_email = "live-ci@example.com"
  vpc_id                = "vpc-1"
  subnet_ids            = ["subnet-1"]
  security_group_ids    = ["sg-1"]
  create_kms_key        = false
  kms_key_arn           = "arn:aws:kms:us-east-1:111111111111:key/11111111-1111-1111-1111-111111111111"
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

# Apply needs the ARNs other resources read from the cluster to be ARNs.
override_resource {
  target = aws_rds_cluster.metadb
  values = {
    arn = "arn:aws:rds:eu-west-1:123456789012:cluster:live-ci-metadb"
    master_user_secret = [{
      secret_arn    = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:rds!cluster-1-AbCdEf"
      kms_key_id    = "arn:aws:kms:us-east-1:111111111111:key/11111111-1111-1111-1111-111111111111"
      secret_status = "active"
    }]
  }
}

run "the_first_apply_writes_the_variable" {
  command = apply
  variables {
    commit_status_config = { PrPlan = false }
  }
  assert {
    condition     = jsondecode(aws_ssm_parameter.commit_status_config.value).PrPlan == false
    error_message = "the first apply stores the variable's value"
  }
}

run "a_later_apply_leaves_the_parameter_as_it_is" {
  command = apply
  variables {
    commit_status_config = { PrPlan = true, Apply = false }
  }
  assert {
    condition     = jsondecode(aws_ssm_parameter.commit_status_config.value).PrPlan == false
    error_message = "a later apply does not rewrite the parameter (an edit in SSM survives it)"
  }
  assert {
    condition     = jsondecode(aws_ssm_parameter.commit_status_config.value).Apply == true
    error_message = "a later apply does not rewrite the parameter (an edit in SSM survives it)"
  }
}
