# Notifications (notifications.tf): off by default with nothing created; when
# on, a topic of their own with the notifier as subscriber, the URL in a
# SecureString placeholder, and the approval topic (task tokens) still with
# exactly one subscription. Run by scripts/infra-check.sh.

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
  lambda_zip_dir        = "tests/fixtures/release-assets"
  create_kms_key        = false
  kms_key_arn           = "arn:aws:kms:eu-west-1:123456789012:key/11111111-1111-1111-1111-111111111111"
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

# The topics' ARNs, known at plan time, so subscriptions can be told apart.
override_resource {
  target          = aws_sns_topic.approval
  override_during = plan
  values          = { arn = "arn:aws:sns:eu-west-1:123456789012:live-ci-approval-requests" }
}

override_resource {
  target          = aws_sns_topic.notifications
  override_during = plan
  values          = { arn = "arn:aws:sns:eu-west-1:123456789012:live-ci-notifications" }
}

# The publishers source the publish grant (notification_publish) with
# notifications on, and only then; their own statements never name SNS, so
# the grant is all they may publish to. (The documents' JSON is mocked: the
# sources are counted, the statements read.)
run "the_publishers_get_no_topic_and_no_grant_with_notifications_off" {
  command = plan
  assert {
    condition     = !contains(keys(local.trigger_sf_env), "NOTIFICATION_TOPIC_ARN") && !contains(keys(local.approval_request_env), "NOTIFICATION_TOPIC_ARN")
    error_message = "with notifications off no function is told a topic"
  }
  assert {
    condition     = length(data.aws_iam_policy_document.trigger_sf.source_policy_documents) == 2 && length(data.aws_iam_policy_document.approval_request.source_policy_documents) == 2
    error_message = "with notifications off the publishers source no publish grant"
  }
  assert {
    condition     = alltrue([for s in concat(data.aws_iam_policy_document.trigger_sf.statement, data.aws_iam_policy_document.approval_request.statement, data.aws_iam_policy_document.notifier.statement, data.aws_iam_policy_document.receiver.statement, data.aws_iam_policy_document.approval_response.statement) : !anytrue([for a in s.actions : startswith(a, "sns:")])])
    error_message = "no Lambda's own statements name SNS"
  }
}

run "exactly_the_two_publishers_publish_with_notifications_on" {
  command = plan
  variables {
    notification_format = "json"
  }
  assert {
    condition     = local.trigger_sf_env.NOTIFICATION_TOPIC_ARN == aws_sns_topic.notifications[0].arn && local.approval_request_env.NOTIFICATION_TOPIC_ARN == aws_sns_topic.notifications[0].arn
    error_message = "trigger-sf and approval-request are told the notifications topic"
  }
  assert {
    condition = (
      length(data.aws_iam_policy_document.trigger_sf.source_policy_documents) == 3
      && length(data.aws_iam_policy_document.approval_request.source_policy_documents) == 3
      && length(data.aws_iam_policy_document.receiver.source_policy_documents) == 2
      && length(data.aws_iam_policy_document.approval_response.source_policy_documents) == 2
      && length(data.aws_iam_policy_document.notifier.source_policy_documents) == 1
    )
    error_message = "approval-request and trigger-sf source the publish grant, no other Lambda does"
  }
  assert {
    condition     = alltrue([for s in concat(data.aws_iam_policy_document.trigger_sf.statement, data.aws_iam_policy_document.approval_request.statement, data.aws_iam_policy_document.notifier.statement, data.aws_iam_policy_document.receiver.statement, data.aws_iam_policy_document.approval_response.statement) : !anytrue([for a in s.actions : startswith(a, "sns:")])])
    error_message = "no Lambda's own statements name SNS, notifications on too"
  }
  assert {
    condition = (
      length(data.aws_iam_policy_document.notification_publish.statement) == 2
      && one(data.aws_iam_policy_document.notification_publish.statement[0].resources) == aws_sns_topic.notifications[0].arn
      && data.aws_iam_policy_document.notification_publish.statement[0].actions == toset(["sns:Publish"])
      && data.aws_iam_policy_document.notification_publish.statement[1].actions == toset(["kms:GenerateDataKey", "kms:Decrypt"])
      && one(data.aws_iam_policy_document.notification_publish.statement[1].resources) == var.kms_key_arn
      && aws_sns_topic.notifications[0].arn != aws_sns_topic.approval.arn
    )
    error_message = "the grant is sns:Publish on the notifications topic (never the approval topic) and its key's data key"
  }
}

run "off_by_default_creates_nothing" {
  command = plan
  assert {
    condition = (length(aws_sns_topic.notifications) == 0 && length(module.notifier) == 0
      && length(aws_ssm_parameter.notification_url) == 0 && length(aws_sns_topic_subscription.notifier) == 0
    && !contains(local.lambda_names, "notifier"))
    error_message = "with notification_format null nothing of the notifications is created"
  }
  assert {
    condition     = length([for r in [aws_sns_topic_subscription.approval_request] : r if r.topic_arn == aws_sns_topic.approval.arn]) == 1
    error_message = "the approval topic has exactly one subscription"
  }
}

run "slack_creates_topic_notifier_and_placeholder" {
  command = plan
  variables {
    notification_format = "slack"
  }
  assert {
    condition     = aws_sns_topic.notifications[0].name == "live-ci-notifications" && aws_sns_topic.notifications[0].kms_master_key_id == var.kms_key_arn
    error_message = "the notifications topic is <name>-notifications, KMS-encrypted"
  }
  assert {
    condition     = aws_ssm_parameter.notification_url[0].type == "SecureString" && aws_ssm_parameter.notification_url[0].name == "/live-ci/notification-url"
    error_message = "the URL is a SecureString placeholder the module creates"
  }
  assert {
    condition     = local.notifier_env.NOTIFICATION_FORMAT == "slack" && local.notifier_env.NOTIFICATION_URL_SSM_KEY == "/live-ci/notification-url"
    error_message = "the notifier reads its format and the URL parameter's name"
  }
  assert {
    condition     = aws_sns_topic_subscription.notifier[0].protocol == "lambda"
    error_message = "the notifier is subscribed to the notifications topic"
  }
  assert {
    condition     = local.lambda_zips["notifier"] == "tests/fixtures/release-assets/notifier.zip"
    error_message = "a release's notifier.zip is the notifier's zip"
  }
}

run "the_approval_topic_keeps_one_subscription_with_notifications_on" {
  command = plan
  variables {
    notification_format = "teams"
  }
  # Every subscription in the module, by the topic it is on: the approval
  # topic carries task tokens and has approval-request only.
  assert {
    condition     = length([for t in [aws_sns_topic_subscription.approval_request.topic_arn, one(aws_sns_topic_subscription.notifier[*].topic_arn)] : t if t == aws_sns_topic.approval.arn]) == 1
    error_message = "the approval topic has exactly one subscription whatever the notification settings"
  }
  assert {
    condition     = aws_sns_topic_subscription.notifier[0].topic_arn == aws_sns_topic.notifications[0].arn
    error_message = "the notifier subscribes to its own topic, never the approval topic"
  }
}

run "a_named_parameter_replaces_the_placeholder" {
  command = plan
  variables {
    notification_format                 = "json"
    notification_url_ssm_parameter_name = "/team/chat-url"
  }
  assert {
    condition     = length(aws_ssm_parameter.notification_url) == 0 && local.notifier_env.NOTIFICATION_URL_SSM_KEY == "/team/chat-url"
    error_message = "a named parameter is read and no placeholder is created"
  }
  assert {
    condition = (
      one(data.aws_iam_policy_document.notifier.statement[0].resources) == "arn:aws:ssm:eu-west-1:123456789012:parameter/team/chat-url"
      && one(one(data.aws_iam_policy_document.notifier.statement[1].condition).values) == "arn:aws:ssm:eu-west-1:123456789012:parameter/team/chat-url"
    )
    error_message = "the notifier may read and decrypt exactly the named parameter"
  }
}

run "an_unknown_format_is_refused" {
  command = plan
  variables {
    notification_format = "irc"
  }
  expect_failures = [var.notification_format]
}
