# The deployment state machine, rendered from statemachine/deployment.asl.json
# with exactly the variables of live_ci_stepfunctions::DeploymentVars (same names, same
# encodings: JSON arrays for lists, ENABLED/DISABLED, decimal seconds), and the
# SNS topic its Request Approval state publishes to.

resource "aws_cloudwatch_log_group" "state_machine" {
  #checkov:skip=CKV_AWS_338:Retention is the module\'s log_retention_in_days, 30 days by default to keep idle costs down; set 365 or more where a policy asks for a year.
  name              = "/${var.name}/states/deployment"
  retention_in_days = var.log_retention_in_days
  kms_key_id        = local.kms_key_arn
  tags              = local.tags
}

resource "aws_sfn_state_machine" "deployment" {
  name     = "${var.name}-deployment"
  role_arn = aws_iam_role.state_machine.arn
  type     = "STANDARD"
  tags     = local.tags

  # deployment.asl.json is a symlink to ../statemachine/deployment.asl.json (the
  # one file live_ci_stepfunctions embeds too): "${path.module}/.." would not resolve
  # when Terraform links this directory into .terraform/modules.
  definition = templatefile("${path.module}/deployment.asl.json", {
    ecs_cluster_arn               = aws_ecs_cluster.this.arn
    terra_run_task_definition_arn = aws_ecs_task_definition.this["terra-run"].arn
    terra_run_container_name      = "terra-run"
    terra_run_role_arn_prefix     = local.terra_run_role_arn_prefix
    subnet_ids                    = jsonencode(var.subnet_ids)
    security_group_ids            = jsonencode(var.security_group_ids)
    assign_public_ip              = var.assign_public_ip ? "ENABLED" : "DISABLED"
    approval_topic_arn            = aws_sns_topic.approval.arn
    approval_timeout_seconds      = var.approval_timeout_seconds
    plan_heartbeat_seconds        = var.task_heartbeat_seconds
    plan_timeout_seconds          = var.plan_timeout_seconds
    apply_heartbeat_seconds       = var.task_heartbeat_seconds
    apply_timeout_seconds         = var.apply_timeout_seconds
    retry_interval_seconds        = var.retry_interval_seconds
    retry_max_attempts            = var.retry_max_attempts
  })

  logging_configuration {
    log_destination        = "${aws_cloudwatch_log_group.state_machine.arn}:*"
    include_execution_data = true
    level                  = "ERROR"
  }

  tracing_configuration {
    enabled = true
  }

  lifecycle {
    precondition {
      condition     = var.task_heartbeat_seconds < var.plan_timeout_seconds && var.task_heartbeat_seconds < var.apply_timeout_seconds
      error_message = "task_heartbeat_seconds must be shorter than plan_timeout_seconds and apply_timeout_seconds."
    }
  }

  depends_on = [aws_iam_role_policy.state_machine]
}

################################################################################
# Approval requests: state machine → SNS → approval-request
################################################################################

resource "aws_sns_topic" "approval" {
  name              = "${var.name}-approval-requests"
  kms_master_key_id = local.kms_key_arn
  tags              = local.tags
}

resource "aws_sns_topic_subscription" "approval_request" {
  topic_arn = aws_sns_topic.approval.arn
  protocol  = "lambda"
  endpoint  = module.approval_request.arn
}

resource "aws_lambda_permission" "approval_request_from_sns" {
  statement_id  = "AllowApprovalTopic"
  action        = "lambda:InvokeFunction"
  function_name = module.approval_request.function_name
  principal     = "sns.amazonaws.com"
  source_arn    = aws_sns_topic.approval.arn
}
