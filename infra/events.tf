# trigger-sf runs on every status change of the deployment state machine's
# executions and on a schedule (the sweep, input {"sweep": true}); with
# drift_schedule_expression, on a second schedule that launches the drift
# check (input {"drift": true, "time": <the schedule's firing>}).

resource "aws_cloudwatch_event_rule" "execution_status" {
  name        = "${var.name}-execution-status"
  description = "live-ci: deployment executions changed status"
  tags        = local.tags

  event_pattern = jsonencode({
    source      = ["aws.states"]
    detail-type = ["Step Functions Execution Status Change"]
    detail = {
      stateMachineArn = [aws_sfn_state_machine.deployment.arn]
    }
  })
}

resource "aws_cloudwatch_event_target" "execution_status" {
  rule = aws_cloudwatch_event_rule.execution_status.name
  arn  = module.trigger_sf.arn

  retry_policy {
    maximum_event_age_in_seconds = 3600
    maximum_retry_attempts       = 20
  }
}

resource "aws_lambda_permission" "trigger_sf_from_status" {
  statement_id  = "AllowExecutionStatusRule"
  action        = "lambda:InvokeFunction"
  function_name = module.trigger_sf.function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.execution_status.arn
}

resource "aws_cloudwatch_event_rule" "sweep" {
  name                = "${var.name}-sweep"
  description         = "live-ci: trigger-sf sweep (lost claims, missed status changes)"
  schedule_expression = var.sweep_schedule_expression
  tags                = local.tags
}

resource "aws_cloudwatch_event_target" "sweep" {
  rule  = aws_cloudwatch_event_rule.sweep.name
  arn   = module.trigger_sf.arn
  input = jsonencode({ sweep = true })
}

resource "aws_lambda_permission" "trigger_sf_from_sweep" {
  statement_id  = "AllowSweepRule"
  action        = "lambda:InvokeFunction"
  function_name = module.trigger_sf.function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.sweep.arn
}

# The drift check (issue 32 item 4), off by default. The event's time names
# the firing, so a delivery EventBridge repeats starts one task (trigger-sf
# passes it as the launch's idempotency token).
resource "aws_cloudwatch_event_rule" "drift" {
  count = local.drift ? 1 : 0

  name                = "${var.name}-drift"
  description         = "live-ci: drift check of every unit on the trunk head (plan roles only)"
  schedule_expression = var.drift_schedule_expression
  tags                = local.tags
}

resource "aws_cloudwatch_event_target" "drift" {
  count = local.drift ? 1 : 0

  rule = aws_cloudwatch_event_rule.drift[0].name
  arn  = module.trigger_sf.arn

  input_transformer {
    input_paths    = { time = "$.time" }
    input_template = "{\"drift\": true, \"time\": <time>}"
  }
}

resource "aws_lambda_permission" "trigger_sf_from_drift" {
  count = local.drift ? 1 : 0

  statement_id  = "AllowDriftRule"
  action        = "lambda:InvokeFunction"
  function_name = module.trigger_sf.function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.drift[0].arn
}

################################################################################
# The approval topic's policy: its messages carry task tokens (whoever holds one
# can decide the unit's approval), so only the state machine publishes and only
# approval-request is subscribed; plain HTTP is refused. It replaces SNS's
# default policy, which lets any principal of the account publish and subscribe.
################################################################################

data "aws_iam_policy_document" "approval_topic" {
  statement {
    sid       = "StateMachinePublishes"
    actions   = ["sns:Publish"]
    resources = [aws_sns_topic.approval.arn]
    principals {
      type        = "AWS"
      identifiers = [aws_iam_role.state_machine.arn]
    }
  }

  statement {
    sid       = "DenyOtherPublishers"
    effect    = "Deny"
    actions   = ["sns:Publish"]
    resources = [aws_sns_topic.approval.arn]
    principals {
      type        = "AWS"
      identifiers = ["*"]
    }
    condition {
      test     = "StringNotEquals"
      variable = "aws:PrincipalArn"
      values   = [aws_iam_role.state_machine.arn]
    }
  }

  statement {
    sid       = "DenyOtherSubscriptions"
    effect    = "Deny"
    actions   = ["sns:Subscribe"]
    resources = [aws_sns_topic.approval.arn]
    principals {
      type        = "AWS"
      identifiers = ["*"]
    }
    condition {
      test     = "StringNotEquals"
      variable = "sns:Endpoint"
      values   = [module.approval_request.arn]
    }
  }

  statement {
    sid       = "DenyInsecureTransport"
    effect    = "Deny"
    actions   = ["sns:*"]
    resources = [aws_sns_topic.approval.arn]
    principals {
      type        = "AWS"
      identifiers = ["*"]
    }
    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

resource "aws_sns_topic_policy" "approval" {
  arn    = aws_sns_topic.approval.arn
  policy = data.aws_iam_policy_document.approval_topic.json
}
