# Notifications where teams talk (infra/README.md "Notifications"): with
# notification_format set, the notifier Lambda posts approval pending, run
# failed and run finished to a Slack, Teams or generic JSON endpoint. The
# events go through a topic of their own: the approval topic carries task
# tokens and keeps approval-request as its only subscriber. With
# notification_format null (the default) nothing here is created.

locals {
  notifications = var.notification_format != null

  # The endpoint URL is a secret (whoever holds a webhook URL posts to the
  # channel), so it lives in SSM only: the module's placeholder parameter,
  # or one the user names. Never a Terraform variable.
  notification_url_param = (
    var.notification_url_ssm_parameter_name != null
    ? var.notification_url_ssm_parameter_name
    : "${local.ssm_prefix}/notification-url"
  )
  notification_url_param_arn = "arn:${local.partition}:ssm:${local.region}:${local.account_id}:parameter${local.notification_url_param}"
  # Known without the topic, so the policy documents below need no count
  # (crates/contract reads them by name).
  notification_topic_name = "${var.name}-notifications"
  notification_topic_arn  = "arn:${local.partition}:sns:${local.region}:${local.account_id}:${local.notification_topic_name}"

  # The publishers' environment (approval-request, trigger-sf): the topic, or
  # nothing (no variable: nothing is published).
  notification_publisher_env = local.notifications ? {
    NOTIFICATION_TOPIC_ARN = aws_sns_topic.notifications[0].arn
  } : {}

  notifier_env = {
    NOTIFICATION_FORMAT      = coalesce(var.notification_format, "json")
    NOTIFICATION_URL_SSM_KEY = local.notification_url_param
    RUST_LOG                 = var.log_level
  }
}

# The placeholder the operator replaces with the endpoint's https URL
# (`aws ssm put-parameter --overwrite --type SecureString`); Terraform never
# sees the URL. The notifier refuses the placeholder at its cold start.
resource "aws_ssm_parameter" "notification_url" {
  count = local.notifications && var.notification_url_ssm_parameter_name == null ? 1 : 0

  name        = local.notification_url_param
  description = "live-ci: notification endpoint URL, https (set the value in SSM)"
  type        = "SecureString"
  key_id      = local.kms_key_arn
  value       = "placeholder"
  tags        = local.tags

  lifecycle {
    ignore_changes = [value]
  }
}

resource "aws_sns_topic" "notifications" {
  count = local.notifications ? 1 : 0

  name              = local.notification_topic_name
  kms_master_key_id = local.kms_key_arn
  tags              = local.tags
}

resource "aws_sns_topic_subscription" "notifier" {
  count = local.notifications ? 1 : 0

  topic_arn = aws_sns_topic.notifications[0].arn
  protocol  = "lambda"
  endpoint  = module.notifier[0].arn
}

resource "aws_lambda_permission" "notifier_from_sns" {
  count = local.notifications ? 1 : 0

  statement_id  = "AllowNotificationsTopic"
  action        = "lambda:InvokeFunction"
  function_name = module.notifier[0].function_name
  principal     = "sns.amazonaws.com"
  source_arn    = aws_sns_topic.notifications[0].arn
}

module "notifier" {
  count = local.notifications ? 1 : 0

  source      = "./modules/function"
  name        = "notifier"
  description = "live-ci: posts notifications to the team's chat or JSON endpoint"
  environment = local.notifier_env
  shared      = local.lambda_shared
  depends_on  = [aws_iam_role_policy.lambda]
}

# The notifier reads the URL parameter and nothing else: no metadb, no
# GitHub, no other secret. (Evaluated when notifications are off too, and
# then attached to nothing.)
data "aws_iam_policy_document" "notifier" {
  source_policy_documents = local.notifications ? [data.aws_iam_policy_document.lambda_base["notifier"].json] : []

  statement {
    sid       = "ReadNotificationUrl"
    actions   = ["ssm:GetParameter"]
    resources = [local.notification_url_param_arn]
  }

  # SSM decrypts a SecureString under the context {PARAMETER_ARN: <arn>}:
  # the key opens this parameter for this role, no other one.
  statement {
    sid       = "DecryptNotificationUrl"
    actions   = ["kms:Decrypt"]
    resources = [local.kms_key_arn]
    condition {
      test     = "StringEquals"
      variable = "kms:EncryptionContext:PARAMETER_ARN"
      values   = [local.notification_url_param_arn]
    }
  }
}

# Publishing to the notifications topic: approval-request and trigger-sf.
# The topic (KMS-encrypted) needs the key's data key on publish.
# Sourced by their documents (iam.tf) only when notifications are on.
data "aws_iam_policy_document" "notification_publish" {
  statement {
    sid       = "PublishNotifications"
    actions   = ["sns:Publish"]
    resources = [local.notification_topic_arn]
  }

  statement {
    sid       = "NotificationsTopicKey"
    actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
    resources = [local.kms_key_arn]
  }
}

