# What the module costs while nothing merges, planned against a mocked AWS
# provider: by default Container Insights is off, the log groups keep 30 days,
# and the metadb may pause (minimum capacity 0, auto-pause after 300 s idle);
# an always-on metadb (0.5 ACU) and Container Insights are one variable away, and
# an auto-pause delay AWS would refuse is refused here. Run by scripts/infra-check.sh (`terraform test`).

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
  lambda_zip_paths = {
    receiver            = "README.md"
    "trigger-sf"        = "README.md"
    "approval-request"  = "README.md"
    "approval-response" = "README.md"
  }
}

run "the_defaults_cost_nothing_while_idle_where_safety_allows" {
  command = plan
  assert {
    condition     = one([for s in aws_ecs_cluster.this.setting : s.value if s.name == "containerInsights"]) == "disabled"
    error_message = "Container Insights is off by default"
  }
  assert {
    condition     = aws_rds_cluster.metadb.serverlessv2_scaling_configuration[0].min_capacity == 0
    error_message = "the metadb may pause by default"
  }
  assert {
    condition     = aws_rds_cluster.metadb.serverlessv2_scaling_configuration[0].seconds_until_auto_pause == 300
    error_message = "the metadb pauses after 300 s idle by default"
  }
  assert {
    condition = alltrue(concat(
      [for g in aws_cloudwatch_log_group.task : g.retention_in_days == 30],
      [for g in aws_cloudwatch_log_group.lambda : g.retention_in_days == 30],
      [aws_cloudwatch_log_group.state_machine.retention_in_days == 30],
    ))
    error_message = "every log group keeps 30 days by default"
  }
}

run "an_always_on_metadb_and_insights_when_asked" {
  command = plan
  variables {
    metadb_min_capacity = 0.5
    container_insights  = true
  }
  assert {
    condition     = aws_rds_cluster.metadb.serverlessv2_scaling_configuration[0].min_capacity == 0.5
    error_message = "metadb_min_capacity = 0.5 keeps the metadb on"
  }
  assert {
    condition     = one([for s in aws_ecs_cluster.this.setting : s.value if s.name == "containerInsights"]) == "enabled"
    error_message = "container_insights = true turns Container Insights on"
  }
}

run "an_auto_pause_delay_aws_refuses_is_refused" {
  command = plan
  variables {
    metadb_seconds_until_auto_pause = 60
  }
  expect_failures = [var.metadb_seconds_until_auto_pause]
}
