# The SES configuration set of the approval mails, planned against a mocked AWS
# provider: none by default (no variable, no grant); a named set reaches the
# approval-request function's environment and its role's SendEmail grant (SES v2
# authorises SendEmail on the set the request names); a bad name is refused.
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
  lambda_zip_paths = {
    receiver            = "README.md"
    "trigger-sf"        = "README.md"
    "approval-request"  = "README.md"
    "approval-response" = "README.md"
  }
}

run "no_configuration_set_by_default" {
  command = plan
  assert {
    condition     = length(local.ses_configuration_set_arns) == 0
    error_message = "no configuration set is granted by default"
  }
  assert {
    condition     = !contains(keys(local.approval_request_env), "SES_CONFIGURATION_SET")
    error_message = "approval-request names no configuration set by default"
  }
}

run "a_configuration_set_is_named_and_granted" {
  command = plan
  variables {
    ses_configuration_set = "live-ci-mail"
  }
  # The SendApprovalMail statement's resources end with these ARNs (iam.tf); the
  # rendered document is the mock's, so the list is checked, not the JSON.
  assert {
    condition     = local.approval_request_env["SES_CONFIGURATION_SET"] == "live-ci-mail"
    error_message = "approval-request sends with the configuration set"
  }
  assert {
    condition     = one(local.ses_configuration_set_arns) == "arn:aws:ses:eu-west-1:123456789012:configuration-set/live-ci-mail"
    error_message = "SendEmail is granted on the configuration set"
  }
}

run "a_bad_configuration_set_name_is_refused" {
  command = plan
  variables {
    ses_configuration_set = "not a name"
  }
  expect_failures = [var.ses_configuration_set]
}
