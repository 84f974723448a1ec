# One role per component (and per ECS job), each allowed only the actions its
# code calls on the resources it uses. crates/contract checks both ways: every
# action a binary (or task subcommand) declares in AWS_ACTIONS is allowed by the
# policy document named after it here, and the document allows nothing else
# (beyond the Lambda runtime's own statements in lambda_base).

locals {
  lambda_role_names = { for n in local.lambda_names : n => "${var.name}-${n}" }

  ssm_arn = { for k, v in local.ssm_names : k => "arn:${local.partition}:ssm:${local.region}:${local.account_id}:parameter${v}" }

  # Task definitions by family, any revision: the roles outlive a revision.
  task_definition_family_arn = {
    for k, _ in local.task_kinds : k => "arn:${local.partition}:ecs:${local.region}:${local.account_id}:task-definition/${var.name}-${k}:*"
  }

  state_machine_arn       = "arn:${local.partition}:states:${local.region}:${local.account_id}:stateMachine:${var.name}-deployment"
  state_machine_execs_arn = "arn:${local.partition}:states:${local.region}:${local.account_id}:execution:${var.name}-deployment:*"

  metadb_secret_arn = aws_rds_cluster.metadb.master_user_secret[0].secret_arn

  # The SES identities a sandboxed SendEmail to the voters is authorised on.
  voter_identity_arns = sort(distinct(flatten([
    for a in var.account_parent_cfg : [
      for v in a.voters : [
        "arn:${local.partition}:ses:${local.region}:${local.account_id}:identity/${v}",
        "arn:${local.partition}:ses:${local.region}:${local.account_id}:identity/${element(split("@", v), length(split("@", v)) - 1)}",
      ]
    ]
  ])))

  # SES v2 authorises SendEmail on the configuration set the request names, too
  # (Service Authorization Reference, list_amazonsimpleemailservicev2: SendEmail —
  # identity*, configuration-set).
  ses_configuration_set_arns = var.ses_configuration_set == null ? [] : [
    "arn:${local.partition}:ses:${local.region}:${local.account_id}:configuration-set/${var.ses_configuration_set}",
  ]
}

data "aws_iam_policy_document" "lambda_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account_id]
    }
  }
}

data "aws_iam_policy_document" "ecs_tasks_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ecs-tasks.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account_id]
    }
  }
}

data "aws_iam_policy_document" "states_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["states.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account_id]
    }
  }
}

################################################################################
# What every Lambda needs: its own log group, X-Ray, its dead-letter queue
################################################################################

data "aws_iam_policy_document" "lambda_base" {
  for_each = toset(local.lambda_names)

  statement {
    sid       = "OwnLogs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.lambda[each.key].arn}:*"]
  }

  statement {
    sid       = "Tracing"
    actions   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
    resources = ["*"]
  }

  statement {
    sid       = "DeadLetters"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.dead_letter.arn]
  }

  statement {
    sid       = "DeadLettersKey"
    actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
    resources = [local.kms_key_arn]
  }
}

################################################################################
# receiver: webhook → pr-plan / create-deploy-stack tasks
################################################################################

data "aws_iam_policy_document" "receiver" {
  # The metadb's merge lock row confirms a "locked" parameter.
  source_policy_documents = [
    data.aws_iam_policy_document.lambda_base["receiver"].json,
    data.aws_iam_policy_document.metadb_data_api.json,
  ]

  statement {
    sid     = "ReadParameters"
    actions = ["ssm:GetParameter"]
    resources = [
      local.ssm_arn.webhook_secret,
      local.ssm_arn[local.github_secret],
      local.ssm_arn.merge_lock,
      local.ssm_arn.commit_status_config,
    ]
  }

  statement {
    sid       = "DecryptSecrets"
    actions   = ["kms:Decrypt"]
    resources = [local.kms_key_arn]
  }

  statement {
    sid       = "StartTasks"
    actions   = ["ecs:RunTask"]
    resources = [local.task_definition_family_arn["pr-plan"], local.task_definition_family_arn["create-deploy-stack"]]
    condition {
      test     = "ArnEquals"
      variable = "ecs:cluster"
      values   = [aws_ecs_cluster.this.arn]
    }
  }

  statement {
    sid       = "PassTaskRoles"
    actions   = ["iam:PassRole"]
    resources = [aws_iam_role.task["pr-plan"].arn, aws_iam_role.task["create-deploy-stack"].arn, aws_iam_role.task_execution.arn]
    condition {
      test     = "StringEquals"
      variable = "iam:PassedToService"
      values   = ["ecs-tasks.amazonaws.com"]
    }
  }
  # Votes from the pull request: the receiver only hands a vote comment's
  # place to approval-response (asynchronously); it never votes itself.
  dynamic "statement" {
    for_each = local.github_votes ? [1] : []
    content {
      sid       = "HandVotesToApprovalResponse"
      actions   = ["lambda:InvokeFunction"]
      resources = [local.approval_response_arn]
    }
  }
}

################################################################################
# trigger-sf: status changes → metadb, StartExecution, merge lock
################################################################################

# The Data API calls themselves, without a secret: each client adds the one
# secret it logs in with (the master's, or terra-run's restricted login).
data "aws_iam_policy_document" "metadb_data_api_calls" {
  statement {
    sid = "MetadbDataApi"
    actions = [
      "rds-data:ExecuteStatement",
      "rds-data:BeginTransaction",
      "rds-data:CommitTransaction",
      "rds-data:RollbackTransaction",
    ]
    resources = [aws_rds_cluster.metadb.arn]
  }
}

data "aws_iam_policy_document" "metadb_data_api" {
  source_policy_documents = [data.aws_iam_policy_document.metadb_data_api_calls.json]

  # The Data API reads the credentials with the caller's permissions.
  statement {
    sid       = "MetadbSecret"
    actions   = ["secretsmanager:GetSecretValue"]
    resources = [local.metadb_secret_arn]
  }
}

data "aws_iam_policy_document" "trigger_sf" {
  # With notifications on (notifications.tf), it publishes to their topic.
  source_policy_documents = concat([
    data.aws_iam_policy_document.lambda_base["trigger-sf"].json,
    data.aws_iam_policy_document.metadb_data_api.json,
  ], local.notifications ? [data.aws_iam_policy_document.notification_publish.json] : [])

  statement {
    sid       = "ReadGithubTokenAndStatusConfig"
    actions   = ["ssm:GetParameter"]
    resources = [local.ssm_arn[local.github_secret], local.ssm_arn.commit_status_config]
  }

  # Signs the unit statuses' links to the run page: the run-link key only.
  statement {
    sid       = "ReadRunLinkKey"
    actions   = ["ssm:GetParameter"]
    resources = [local.ssm_arn.run_link_key]
  }

  # The sweep reads the mirror back and rewrites it when it differs from the metadb.
  statement {
    sid       = "ReadWriteMergeLock"
    actions   = ["ssm:GetParameter", "ssm:PutParameter"]
    resources = [local.ssm_arn.merge_lock]
  }

  statement {
    sid       = "DecryptSecrets"
    actions   = ["kms:Decrypt"]
    resources = [local.kms_key_arn]
  }

  statement {
    sid       = "StartExecutions"
    actions   = ["states:StartExecution"]
    resources = [local.state_machine_arn]
  }

  statement {
    sid       = "DescribeExecutions"
    actions   = ["states:DescribeExecution"]
    resources = [local.state_machine_execs_arn]
  }

  # The sweep launches create-deploy-stack for a trunk head whose webhook was lost.
  statement {
    sid       = "StartCreateDeployStack"
    actions   = ["ecs:RunTask"]
    resources = [local.task_definition_family_arn["create-deploy-stack"]]
    condition {
      test     = "ArnEquals"
      variable = "ecs:cluster"
      values   = [aws_ecs_cluster.this.arn]
    }
  }

  statement {
    sid       = "PassCreateDeployStackRoles"
    actions   = ["iam:PassRole"]
    resources = [aws_iam_role.task["create-deploy-stack"].arn, aws_iam_role.task_execution.arn]
    condition {
      test     = "StringEquals"
      variable = "iam:PassedToService"
      values   = ["ecs-tasks.amazonaws.com"]
    }
  }

  # The drift schedule launches the drift task (its role: plan roles only),
  # only with drift_schedule_expression.
  dynamic "statement" {
    for_each = local.drift ? [1] : []
    content {
      sid       = "StartDrift"
      actions   = ["ecs:RunTask"]
      resources = [local.task_definition_family_arn["drift"]]
      condition {
        test     = "ArnEquals"
        variable = "ecs:cluster"
        values   = [aws_ecs_cluster.this.arn]
      }
    }
  }

  dynamic "statement" {
    for_each = local.drift ? [1] : []
    content {
      sid       = "PassDriftRole"
      actions   = ["iam:PassRole"]
      resources = [aws_iam_role.task["drift"].arn]
      condition {
        test     = "StringEquals"
        variable = "iam:PassedToService"
        values   = ["ecs-tasks.amazonaws.com"]
      }
    }
  }
}

################################################################################
# approval-request: SNS → e-mails to the voters
################################################################################

data "aws_iam_policy_document" "approval_request" {
  # With notifications on (notifications.tf), it publishes to their topic.
  source_policy_documents = concat([
    data.aws_iam_policy_document.lambda_base["approval-request"].json,
    data.aws_iam_policy_document.metadb_data_api.json,
  ], local.notifications ? [data.aws_iam_policy_document.notification_publish.json] : [])

  statement {
    sid       = "ReadVoteLinkKey"
    actions   = ["ssm:GetParameter"]
    resources = [local.ssm_arn.vote_link_key]
  }

  statement {
    sid       = "DecryptSecrets"
    actions   = ["kms:Decrypt"]
    resources = [local.kms_key_arn]
  }

  # Task tokens are stored encrypted for their execution (storage.tf:
  # the key's policy grants the same, to this role only).
  statement {
    sid       = "EncryptTaskTokens"
    actions   = ["kms:Encrypt"]
    resources = [aws_kms_key.task_token.arn]
    condition {
      test     = "ForAllValues:StringEquals"
      variable = "kms:EncryptionContextKeys"
      values   = ["live-ci:execution-id"]
    }
  }

  # SES authorises SendEmail on the sender's identity and, while the account is
  # in the SES sandbox (every new account, per region), on each recipient's
  # identity too: the voters' addresses, or their domains when those are the
  # verified identities (infra/README.md "SES sandbox"). Out of the sandbox the
  # voters' ARNs allow nothing more: the sender condition still binds.
  # A voter SES refuses for good (sandbox, AccessDenied) fails the approval
  # state at once, with the token SNS delivered. SendTaskFailure has no
  # resource type in the Service Authorization Reference (list_awsstepfunctions),
  # so the grant names "*"; never SendTaskSuccess: only the voters' decision
  # (approval-response) completes the state.
  statement {
    sid       = "FailApprovalOnRefusedMail"
    actions   = ["states:SendTaskFailure"]
    resources = ["*"]
  }

  statement {
    sid       = "SendApprovalMail"
    actions   = ["ses:SendEmail"]
    resources = concat([aws_sesv2_email_identity.sender.arn], local.voter_identity_arns, local.ses_configuration_set_arns)
    condition {
      test     = "StringEquals"
      variable = "ses:FromAddress"
      values   = [var.approval_sender_email]
    }
  }
}

################################################################################
# approval-response: votes → metadb, task token back to Step Functions
################################################################################

data "aws_iam_policy_document" "approval_response" {
  source_policy_documents = [
    data.aws_iam_policy_document.lambda_base["approval-response"].json,
    data.aws_iam_policy_document.metadb_data_api.json,
  ]

  statement {
    sid       = "ReadVoteLinkKey"
    actions   = ["ssm:GetParameter"]
    resources = [local.ssm_arn.vote_link_key]
  }

  statement {
    sid       = "ReadRunLinkKey"
    actions   = ["ssm:GetParameter"]
    resources = [local.ssm_arn.run_link_key]
  }

  # Votes from the pull request: GitHub's token or App key, to read the vote
  # comment, the merge commit and team membership, and to reply.
  dynamic "statement" {
    for_each = local.github_votes ? [1] : []
    content {
      sid       = "ReadGitHubCredentials"
      actions   = ["ssm:GetParameter"]
      resources = [local.ssm_arn[local.github_secret]]
    }
  }

  statement {
    sid       = "DecryptSecrets"
    actions   = ["kms:Decrypt"]
    resources = [local.kms_key_arn]
  }

  # The only role that may decrypt a task token (storage.tf: the key's policy).
  statement {
    sid       = "DecryptTaskTokens"
    actions   = ["kms:Decrypt"]
    resources = [aws_kms_key.task_token.arn]
    condition {
      test     = "ForAllValues:StringEquals"
      variable = "kms:EncryptionContextKeys"
      values   = ["live-ci:execution-id"]
    }
  }

  # SendTaskSuccess has no resource type in the Service Authorization Reference
  # (list_awsstepfunctions): a grant names "*". The token is the capability:
  # this role holds it only decrypted, per execution, from the task-token key.
  statement {
    sid       = "AnswerTaskToken"
    actions   = ["states:SendTaskSuccess"]
    resources = ["*"]
  }

  # The confirmation page shows the saved plan from its sealed show -json
  # (terra-run stores it beside the plan as <plan key>.json); never the plan
  # file itself, which only the apply reads.
  statement {
    sid       = "ReadSavedPlanJson"
    actions   = ["s3:GetObject"]
    resources = ["${aws_s3_bucket.plans.arn}/plans/*.tfplan.json"]
  }
}

locals {
  lambda_policies = {
    "receiver"          = data.aws_iam_policy_document.receiver.json
    "trigger-sf"        = data.aws_iam_policy_document.trigger_sf.json
    "approval-request"  = data.aws_iam_policy_document.approval_request.json
    "approval-response" = data.aws_iam_policy_document.approval_response.json
    "notifier"          = data.aws_iam_policy_document.notifier.json
  }
}

resource "aws_iam_role" "lambda" {
  for_each = toset(local.lambda_names)

  name               = local.lambda_role_names[each.key]
  description        = "live-ci ${each.key} Lambda"
  assume_role_policy = data.aws_iam_policy_document.lambda_assume.json
  tags               = local.tags
}

resource "aws_iam_role_policy" "lambda" {
  for_each = toset(local.lambda_names)

  name   = each.key
  role   = aws_iam_role.lambda[each.key].id
  policy = local.lambda_policies[each.key]
}

################################################################################
# ECS: one task role per job (each allowed only what its subcommand calls:
# crates/contract checks both ways), terra-run's per account and phase, and
# the execution role (image pull, logs, injected secrets)
################################################################################

locals {
  plan_role_arns = distinct([for a in var.account_parent_cfg : a.plan_role_arn])

  # pr-plan and create-deploy-stack: one role each. terra-run has none of
  # its own (its task definition names no role): the state machine runs each
  # phase with the unit account's role of that phase (terra_run_roles).
  job_task_roles = { for k, v in local.task_kinds : k => v if k != "terra-run" }

  task_policies = {
    "pr-plan"             = data.aws_iam_policy_document.task_pr_plan.json
    "create-deploy-stack" = data.aws_iam_policy_document.task_create_deploy_stack.json
    "drift"               = data.aws_iam_policy_document.task_drift.json
  }

  # terra-run's task roles: for each account, one for the plan phase that may
  # assume only that account's plan role, and one for the apply phase that
  # may assume only its apply role. IAM, not the task's code, then decides
  # which account role a task can reach: a plan task (running the merged
  # code's plan) holds no apply power, and no task reaches another account.
  # Named <name>-<phase>-<account>: the state machine builds the ARN from the
  # execution's account_name (terra_run_role_arn_prefix), and its PassRole
  # allows exactly these roles.
  terra_run_roles = merge([for a in var.account_parent_cfg : {
    "plan-${a.name}"  = { account = a.name, phase = "plan", assume = a.plan_role_arn }
    "apply-${a.name}" = { account = a.name, phase = "apply", assume = a.apply_role_arn }
  }]...)
  terra_run_role_arn_prefix = "arn:${local.partition}:iam::${local.account_id}:role/${var.name}-"
}

# pr-plan runs a pull request's code (through terraform): its role reads the
# GitHub token and status switches and assumes the accounts' plan roles, and
# nothing else — no metadb, no Step Functions, no saved plans.
data "aws_iam_policy_document" "task_pr_plan" {
  statement {
    sid       = "ReadParameters"
    actions   = ["ssm:GetParameter"]
    resources = [local.ssm_arn[local.github_secret], local.ssm_arn.commit_status_config]
  }

  statement {
    sid       = "DecryptParameters"
    actions   = ["kms:Decrypt"]
    resources = [local.kms_key_arn]
  }

  statement {
    sid       = "AssumePlanRoles"
    actions   = ["sts:AssumeRole"]
    resources = local.plan_role_arns
  }
}

data "aws_iam_policy_document" "task_create_deploy_stack" {
  source_policy_documents = local.metadb_direct ? [] : [data.aws_iam_policy_document.metadb_data_api.json]

  statement {
    sid       = "ReadParameters"
    actions   = ["ssm:GetParameter"]
    resources = [local.ssm_arn[local.github_secret], local.ssm_arn.merge_lock, local.ssm_arn.commit_status_config]
  }

  statement {
    sid       = "WriteMergeLock"
    actions   = ["ssm:PutParameter"]
    resources = [local.ssm_arn.merge_lock]
  }

  # The migrator sets terra-run's login once: reads its secret, and when it is
  # still empty writes a generated password into it (and, for direct
  # connections, the login's URL).
  statement {
    sid       = "SetTerraRunLogin"
    actions   = ["secretsmanager:GetSecretValue", "secretsmanager:PutSecretValue"]
    resources = [aws_secretsmanager_secret.metadb_terra_run.arn]
  }

  # And the drift check's login, the same way.
  statement {
    sid       = "SetDriftLogin"
    actions   = ["secretsmanager:GetSecretValue", "secretsmanager:PutSecretValue"]
    resources = [aws_secretsmanager_secret.metadb_drift.arn]
  }

  # SecureString parameters; the run's packed checkout is encrypted with the
  # key on upload (S3 SSE-KMS).
  statement {
    sid       = "UseKey"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
    resources = [local.kms_key_arn]
  }

  # The run's packed checkout, written once per run under its own prefix; the
  # saved plans beside it stay out of reach.
  statement {
    sid       = "PackedCheckouts"
    actions   = ["s3:PutObject"]
    resources = ["${aws_s3_bucket.plans.arn}/checkouts/*"]
  }

  statement {
    sid       = "InvokeTriggerSf"
    actions   = ["lambda:InvokeFunction"]
    resources = [module.trigger_sf.arn]
  }

  # The plan scan plans every unit as its account's plan role; never an apply role.
  dynamic "statement" {
    for_each = var.scan_type == "plan" ? [1] : []
    content {
      sid       = "AssumePlanRoles"
      actions   = ["sts:AssumeRole"]
      resources = local.plan_role_arns
    }
  }
}

# The drift check (issue 32 item 4) plans every unit of the trunk with the
# accounts' plan roles and nothing more: no apply role, no merge lock (no
# ssm:PutParameter), no plan bucket, no state machine, and the metadb only
# as its own restricted login (never the master secret). It reads the GitHub
# credential (its issues) and publishes to the notification topic when
# notifications are on.
data "aws_iam_policy_document" "task_drift" {
  source_policy_documents = concat(
    local.metadb_direct ? [] : [data.aws_iam_policy_document.metadb_data_api_calls.json],
    local.notifications ? [data.aws_iam_policy_document.notification_publish.json] : [],
  )

  dynamic "statement" {
    for_each = local.metadb_direct ? [] : [1]
    content {
      sid       = "MetadbDriftSecret"
      actions   = ["secretsmanager:GetSecretValue"]
      resources = [aws_secretsmanager_secret.metadb_drift.arn]
    }
  }

  statement {
    sid       = "ReadParameters"
    actions   = ["ssm:GetParameter"]
    resources = [local.ssm_arn[local.github_secret]]
  }

  statement {
    sid       = "DecryptParameters"
    actions   = ["kms:Decrypt"]
    resources = [local.kms_key_arn]
  }

  statement {
    sid       = "AssumePlanRoles"
    actions   = ["sts:AssumeRole"]
    resources = local.plan_role_arns
  }
}

# One document per account and phase (local.terra_run_roles): the same
# rights but for the saved plans (a plan writes them, an apply reads them)
# and the one account role it may assume.
data "aws_iam_policy_document" "task_terra_run" {
  for_each = local.terra_run_roles

  source_policy_documents = local.metadb_direct ? [] : [data.aws_iam_policy_document.metadb_data_api_calls.json]

  # terra-run logs in to the metadb as its own restricted login (migration
  # 0015's live_ci_terra_run), never as the master: it reads that login's
  # secret only.
  dynamic "statement" {
    for_each = local.metadb_direct ? [] : [1]
    content {
      sid       = "MetadbTerraRunSecret"
      actions   = ["secretsmanager:GetSecretValue"]
      resources = [aws_secretsmanager_secret.metadb_terra_run.arn]
    }
  }

  statement {
    sid       = "ReadParameters"
    actions   = ["ssm:GetParameter"]
    resources = [local.ssm_arn[local.github_secret], local.ssm_arn.commit_status_config]
  }

  # Signs the plan and apply statuses' links to the run page: the run-link key
  # only (it cannot mint vote links).
  statement {
    sid       = "ReadRunLinkKey"
    actions   = ["ssm:GetParameter"]
    resources = [local.ssm_arn.run_link_key]
  }

  # SecureString parameters and the saved plans are encrypted with the key.
  statement {
    sid       = "UseKey"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
    resources = [local.kms_key_arn]
  }

  # A plan uploads its saved plan; an apply reads it back at the version the
  # plan task recorded (and cannot write one).
  dynamic "statement" {
    for_each = each.value.phase == "plan" ? [1] : []
    content {
      sid       = "SavePlans"
      actions   = ["s3:PutObject"]
      resources = ["${aws_s3_bucket.plans.arn}/plans/*"]
    }
  }

  dynamic "statement" {
    for_each = each.value.phase == "apply" ? [1] : []
    content {
      sid       = "ReadSavedPlans"
      actions   = ["s3:GetObject", "s3:GetObjectVersion"]
      resources = ["${aws_s3_bucket.plans.arn}/plans/*"]
    }
  }

  # The run's packed checkout: read only (create-deploy-stack writes it, and
  # terra-run checks its digest against the metadb before unpacking).
  statement {
    sid       = "PackedCheckouts"
    actions   = ["s3:GetObject"]
    resources = ["${aws_s3_bucket.plans.arn}/checkouts/*"]
  }

  # The SendTask* actions have no resource type in the Service Authorization
  # Reference (list_awsstepfunctions): a grant names "*"; the task token the
  # state machine hands the task is the capability.
  statement {
    sid       = "ReportToStateMachine"
    actions   = ["states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat"]
    resources = ["*"]
  }

  # The one account role of this account and phase: the plan phase's role
  # cannot assume an apply role, and no role another account's.
  statement {
    sid       = "AssumeAccountRole"
    actions   = ["sts:AssumeRole"]
    resources = [each.value.assume]
  }
}

resource "aws_iam_role" "terra_run" {
  for_each = local.terra_run_roles

  name               = "${var.name}-${each.key}"
  description        = "live-ci terra-run, ${each.value.phase} phase of account ${each.value.account}"
  assume_role_policy = data.aws_iam_policy_document.ecs_tasks_assume.json
  tags               = local.tags

  lifecycle {
    precondition {
      condition     = can(regex("^[A-Za-z0-9+=,.@_-]+$", each.value.account)) && length("${var.name}-${each.key}") <= 64
      error_message = "account_parent_cfg: account ${jsonencode(each.value.account)} names the terra-run task role ${jsonencode("${var.name}-${each.key}")}: an IAM role name takes letters, digits and +=,.@_- and at most 64 characters."
    }
  }
}

resource "aws_iam_role_policy" "terra_run" {
  for_each = local.terra_run_roles

  name   = "terra-run-${each.value.phase}"
  role   = aws_iam_role.terra_run[each.key].id
  policy = data.aws_iam_policy_document.task_terra_run[each.key].json
}

resource "aws_iam_role" "task" {
  for_each = local.job_task_roles

  name               = "${var.name}-task-${each.key}"
  description        = "live-ci ECS task ${each.key}"
  assume_role_policy = data.aws_iam_policy_document.ecs_tasks_assume.json
  tags               = local.tags
}

resource "aws_iam_role_policy" "task" {
  for_each = local.job_task_roles

  name   = "task-${each.key}"
  role   = aws_iam_role.task[each.key].id
  policy = local.task_policies[each.key]
}

data "aws_iam_policy_document" "task_execution" {
  statement {
    sid       = "TaskLogs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = [for g in aws_cloudwatch_log_group.task : "${g.arn}:*"]
  }

  # GetAuthorizationToken takes no resource.
  statement {
    sid       = "RegistryLogin"
    actions   = ["ecr:GetAuthorizationToken"]
    resources = ["*"]
  }

  dynamic "statement" {
    for_each = var.create_ecr_repository ? [1] : []
    content {
      sid       = "PullImage"
      actions   = ["ecr:BatchCheckLayerAvailability", "ecr:GetDownloadUrlForLayer", "ecr:BatchGetImage"]
      resources = [aws_ecr_repository.task[0].arn]
    }
  }

  dynamic "statement" {
    for_each = var.create_ecr_repository || local.metadb_direct ? [1] : []
    content {
      sid       = "DecryptImageAndSecrets"
      actions   = ["kms:Decrypt"]
      resources = [local.kms_key_arn]
    }
  }

  dynamic "statement" {
    for_each = local.metadb_direct ? [1] : []
    content {
      sid       = "InjectMetadbUrl"
      actions   = ["ssm:GetParameters"]
      resources = [local.ssm_arn.metadb_url]
    }
  }

  # terra-run's METADB_URL for direct connections: its own login's URL, a key
  # of the login's secret (ecs.tf terra_run_task_secrets).
  dynamic "statement" {
    for_each = local.metadb_direct ? [1] : []
    content {
      sid       = "InjectTerraRunMetadbUrl"
      actions   = ["secretsmanager:GetSecretValue"]
      resources = [aws_secretsmanager_secret.metadb_terra_run.arn]
    }
  }

  # drift's METADB_URL for direct connections: its own login's URL
  # (ecs.tf drift_task_secrets).
  dynamic "statement" {
    for_each = local.metadb_direct ? [1] : []
    content {
      sid       = "InjectDriftMetadbUrl"
      actions   = ["secretsmanager:GetSecretValue"]
      resources = [aws_secretsmanager_secret.metadb_drift.arn]
    }
  }

  # task_secrets and git_ssh_key_arn: exactly the parameters and secrets given.
  dynamic "statement" {
    for_each = length([for a in local.task_user_secret_arns : a if can(regex(":ssm:", a))]) > 0 ? [1] : []
    content {
      sid       = "InjectUserParameters"
      actions   = ["ssm:GetParameters"]
      resources = [for a in local.task_user_secret_arns : a if can(regex(":ssm:", a))]
    }
  }

  dynamic "statement" {
    for_each = length([for a in local.task_user_secret_arns : a if can(regex(":secretsmanager:", a))]) > 0 ? [1] : []
    content {
      sid       = "InjectUserSecrets"
      actions   = ["secretsmanager:GetSecretValue"]
      resources = [for a in local.task_user_secret_arns : a if can(regex(":secretsmanager:", a))]
    }
  }
}

resource "aws_iam_role" "task_execution" {
  name               = "${var.name}-task-execution"
  description        = "live-ci ECS task execution (image pull, logs, injected secrets)"
  assume_role_policy = data.aws_iam_policy_document.ecs_tasks_assume.json
  tags               = local.tags
}

resource "aws_iam_role_policy" "task_execution" {
  name   = "task-execution"
  role   = aws_iam_role.task_execution.id
  policy = data.aws_iam_policy_document.task_execution.json
}

################################################################################
# State machine: terra-run tasks, the approval topic, its own logs
################################################################################

data "aws_iam_policy_document" "state_machine" {
  statement {
    sid       = "RunTerraRun"
    actions   = ["ecs:RunTask"]
    resources = [local.task_definition_family_arn["terra-run"]]
    condition {
      test     = "ArnEquals"
      variable = "ecs:cluster"
      values   = [aws_ecs_cluster.this.arn]
    }
  }

  # Step Functions stops a task whose heartbeat or timeout expired.
  statement {
    sid       = "StopTerraRun"
    actions   = ["ecs:StopTask", "ecs:DescribeTasks"]
    resources = ["arn:${local.partition}:ecs:${local.region}:${local.account_id}:task/${aws_ecs_cluster.this.name}/*"]
  }

  # Exactly the per-account terra-run roles (each phase's task runs as its
  # account's role of that phase: overrides.taskRoleArn) and the execution role.
  statement {
    sid       = "PassTaskRoles"
    actions   = ["iam:PassRole"]
    resources = concat([for r in aws_iam_role.terra_run : r.arn], [aws_iam_role.task_execution.arn])
    condition {
      test     = "StringEquals"
      variable = "iam:PassedToService"
      values   = ["ecs-tasks.amazonaws.com"]
    }
  }

  statement {
    sid       = "RequestApproval"
    actions   = ["sns:Publish"]
    resources = [aws_sns_topic.approval.arn]
  }

  statement {
    sid       = "EncryptApprovalMessages"
    actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
    resources = [local.kms_key_arn]
  }

  # Log delivery and X-Ray take no resource-level permissions.
  statement {
    sid = "ExecutionLogs"
    actions = [
      "logs:CreateLogDelivery",
      "logs:GetLogDelivery",
      "logs:UpdateLogDelivery",
      "logs:DeleteLogDelivery",
      "logs:ListLogDeliveries",
      "logs:PutResourcePolicy",
      "logs:DescribeResourcePolicies",
      "logs:DescribeLogGroups",
    ]
    resources = ["*"]
  }

  statement {
    sid       = "Tracing"
    actions   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules", "xray:GetSamplingTargets"]
    resources = ["*"]
  }
}

resource "aws_iam_role" "state_machine" {
  name               = "${var.name}-state-machine"
  description        = "live-ci deployment state machine"
  assume_role_policy = data.aws_iam_policy_document.states_assume.json
  tags               = local.tags
}

resource "aws_iam_role_policy" "state_machine" {
  name   = "state-machine"
  role   = aws_iam_role.state_machine.id
  policy = data.aws_iam_policy_document.state_machine.json
}
