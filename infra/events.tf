# trigger-sf runs on every status change of the deployment state machine's
# executions and on a schedule (the sweep, input {"sweep": true}).

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
