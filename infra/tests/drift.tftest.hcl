# The drift check (issue 32 item 4; events.tf, iam.tf task_drift): off by
# default with no schedule and no launch grant; on, a rule that invokes
# trigger-sf with {"drift": true, "time": …}, which may then start the drift
# task. The drift task's role may assume the plan roles only — never an apply
# role — and never reads the metadb's master secret, in either metadb mode.
# Run by scripts/infra-check.sh.

mock_provider "aws" {
  source = "./tests/mocks"
}

# The ARNs the policies name, known at plan time.
override_resource {
  target          = aws_rds_cluster.metadb
  override_during = plan
  values = {
    arn                = "arn:aws:rds:eu-west-1:123456789012:cluster:live-ci-metadb"
    master_user_secret = [{ secret_arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:metadb", kms_key_id = "k", secret_status = "active" }]
  }
}
override_resource {
  target          = aws_secretsmanager_secret.metadb_drift
  override_during = plan
  values          = { arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:live-ci/metadb/drift" }
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

run "off_by_default_no_rule_and_no_launch_grant" {
  command = plan
  assert {
    condition     = length(aws_cloudwatch_event_rule.drift) == 0 && length(aws_cloudwatch_event_target.drift) == 0 && length(aws_lambda_permission.trigger_sf_from_drift) == 0
    error_message = "with drift_schedule_expression null there is no drift schedule"
  }
  assert {
    condition     = length(local.trigger_sf_drift_env) == 0 && !contains(keys(local.trigger_sf_env), "DRIFT_TASK_DEFINITION_ARN")
    error_message = "with the drift check off trigger-sf is not told the drift task"
  }
  assert {
    condition     = !anytrue([for s in data.aws_iam_policy_document.trigger_sf.statement : contains(["StartDrift", "PassDriftRole"], s.sid)])
    error_message = "with the drift check off trigger-sf may not start the drift task"
  }
}

run "on_a_rule_invokes_trigger_sf_with_drift_true" {
  command = plan
  variables {
    drift_schedule_expression = "rate(1 day)"
  }
  assert {
    condition     = aws_cloudwatch_event_rule.drift[0].schedule_expression == "rate(1 day)"
    error_message = "the drift rule runs on the module's schedule"
  }
  assert {
    condition     = aws_cloudwatch_event_target.drift[0].input_transformer[0].input_template == "{\"drift\": true, \"time\": <time>}" && aws_cloudwatch_event_target.drift[0].input_transformer[0].input_paths.time == "$.time"
    error_message = "the drift rule passes {\"drift\": true} and the firing's time"
  }
  assert {
    condition     = local.trigger_sf_env["DRIFT_CONTAINER_NAME"] == "drift" && contains(keys(local.trigger_sf_env), "DRIFT_TASK_DEFINITION_ARN")
    error_message = "trigger-sf is told the drift task"
  }
  assert {
    condition     = length([for s in data.aws_iam_policy_document.trigger_sf.statement : s if s.sid == "StartDrift" && contains(s.actions, "ecs:RunTask")]) == 1
    error_message = "trigger-sf may start the drift task"
  }
}

run "the_drift_role_assumes_plan_roles_only_and_never_reads_the_master_secret" {
  command = plan
  variables {
    drift_schedule_expression = "cron(0 6 ? * MON-FRI *)"
  }
  assert {
    condition = alltrue(flatten([
      for s in data.aws_iam_policy_document.task_drift.statement : [
        for r in s.resources : r != "arn:aws:iam::111111111111:role/apply"
      ]
    ]))
    error_message = "the drift role may not name an apply role"
  }
  assert {
    condition     = length([for s in data.aws_iam_policy_document.task_drift.statement : s if contains(s.actions, "sts:AssumeRole") && toset(s.resources) == toset(["arn:aws:iam::111111111111:role/plan"])]) == 1
    error_message = "the drift role assumes exactly the plan roles"
  }
  assert {
    condition = alltrue(flatten([
      for s in data.aws_iam_policy_document.task_drift.statement : [
        for r in s.resources : r != "arn:aws:secretsmanager:eu-west-1:123456789012:secret:metadb"
      ]
    ]))
    error_message = "the drift role never names the metadb's master secret"
  }
  assert {
    condition     = length(data.aws_iam_policy_document.task_drift.source_policy_documents) == 1
    error_message = "the drift role sources the Data API calls only (not metadb_data_api, which reads the master secret)"
  }
  assert {
    condition     = !anytrue([for s in data.aws_iam_policy_document.task_drift.statement : anytrue([for a in s.actions : contains(["ssm:PutParameter", "s3:PutObject", "states:StartExecution", "lambda:InvokeFunction"], a)])])
    error_message = "the drift role neither writes the merge lock, saves plans nor starts a deploy"
  }
  assert {
    condition     = local.task_env_by_kind["drift"]["METADB_SECRET_ARN"] == "arn:aws:secretsmanager:eu-west-1:123456789012:secret:live-ci/metadb/drift"
    error_message = "the drift task logs in with its own login's secret, not the master's"
  }
  assert {
    condition     = local.metadb_migrator_env["METADB_DRIFT_SECRET_ARN"] == "arn:aws:secretsmanager:eu-west-1:123456789012:secret:live-ci/metadb/drift"
    error_message = "the migrator (create-deploy-stack) is told the drift login's secret, which it fills"
  }
}

run "direct_connections_inject_the_drift_logins_own_url" {
  command = plan
  variables {
    drift_schedule_expression = "rate(1 day)"
    metadb_connection         = "direct"
  }
  assert {
    condition     = length(local.drift_task_secrets) == 1 && endswith(local.drift_task_secrets[0].valueFrom, ":url::")
    error_message = "with a direct connection the drift task gets its own login's URL"
  }
  assert {
    condition     = !contains(keys(local.task_env_by_kind["drift"]), "METADB_SECRET_ARN")
    error_message = "with a direct connection the drift task gets no Data API secret"
  }
}

run "a_schedule_that_is_no_eventbridge_expression_is_refused" {
  command = plan
  variables {
    drift_schedule_expression = "daily"
  }
  expect_failures = [var.drift_schedule_expression]
}
