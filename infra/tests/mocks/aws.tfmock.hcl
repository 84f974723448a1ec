# The mocked AWS data sources every infra test plans against, in one place:
# each *.tftest.hcl reads them with `mock_provider "aws" { source = "./tests/mocks" }`.

mock_data "aws_iam_policy_document" {
  defaults = { json = "{}" }
}
mock_data "aws_caller_identity" {
  defaults = { account_id = "123456789012" }
}
mock_data "aws_region" {
  defaults = { name = "eu-west-1" }
}
mock_data "aws_partition" {
  defaults = { partition = "aws" }
}
mock_data "aws_secretsmanager_random_password" {
  defaults = { random_password = "generated0123456789generated0123456789generated0123456789abcdef" }
}
