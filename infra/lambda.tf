# The Lambdas (provided.al2023, zips from `make package`; the notifier is in
# notifications.tf, only with notification_format set), their log groups,
# the Function URLs of receiver and approval-response, and the dead-letter queue
# of the asynchronously invoked ones. Each function's environment is a local
# named <function>_env: crates/contract checks those names against what the
# binaries read.

locals {
  function_names = { for n in local.lambda_names : n => "${var.name}-${n}" }

  # The metadb: a "locked" merge lock parameter is confirmed against its row.
  receiver_env = merge(local.metadb_data_api_env, local.github_env, {
    REPO_FULL_NAME                          = var.repo_full_name
    TRUNK_BRANCH                            = var.trunk_branch
    FILE_PATH_PATTERN                       = var.file_path_pattern
    GITHUB_API_URL                          = var.github_api_url
    GITHUB_WEBHOOK_SECRET_SSM_KEY           = local.ssm_names.webhook_secret
    MERGE_LOCK_SSM_KEY                      = local.ssm_names.merge_lock
    COMMIT_STATUS_CONFIG_SSM_KEY            = local.ssm_names.commit_status_config
    PR_PLAN_AUTHOR_ASSOCIATIONS             = jsonencode(var.pr_plan_author_associations)
    ECS_CLUSTER_ARN                         = aws_ecs_cluster.this.arn
    ECS_SUBNET_IDS                          = join(",", var.subnet_ids)
    ECS_SECURITY_GROUP_IDS                  = join(",", var.security_group_ids)
    ECS_ASSIGN_PUBLIC_IP                    = tostring(var.assign_public_ip)
    PR_PLAN_TASK_DEFINITION_ARN             = aws_ecs_task_definition.this["pr-plan"].arn
    PR_PLAN_CONTAINER_NAME                  = "pr-plan"
    PR_PLAN_LOG_GROUP                       = aws_cloudwatch_log_group.task["pr-plan"].name
    PR_PLAN_LOG_STREAM_PREFIX               = local.task_log_stream_prefix
    CREATE_DEPLOY_STACK_TASK_DEFINITION_ARN = aws_ecs_task_definition.this["create-deploy-stack"].arn
    CREATE_DEPLOY_STACK_CONTAINER_NAME      = "create-deploy-stack"
    CREATE_DEPLOY_STACK_LOG_GROUP           = aws_cloudwatch_log_group.task["create-deploy-stack"].name
    CREATE_DEPLOY_STACK_LOG_STREAM_PREFIX   = local.task_log_stream_prefix
    RUST_LOG                                = var.log_level
    }, local.github_votes ? {
    APPROVAL_RESPONSE_FUNCTION = local.approval_response_arn
  } : {})

  # With the drift schedule on, trigger-sf launches the drift task too.
  trigger_sf_drift_env = local.drift ? {
    DRIFT_TASK_DEFINITION_ARN = aws_ecs_task_definition.this["drift"].arn
    DRIFT_CONTAINER_NAME      = "drift"
    DRIFT_LOG_GROUP           = aws_cloudwatch_log_group.task["drift"].name
    DRIFT_LOG_STREAM_PREFIX   = local.task_log_stream_prefix
  } : {}

  trigger_sf_env = merge(local.metadb_data_api_env, local.github_env, local.notification_publisher_env, local.trigger_sf_drift_env, {
    STATE_MACHINE_ARN  = aws_sfn_state_machine.deployment.arn
    MERGE_LOCK_SSM_KEY = local.ssm_names.merge_lock
    MERGE_LOCK_SCOPE   = var.merge_lock_scope
    REPO_FULL_NAME     = var.repo_full_name
    GITHUB_API_URL     = var.github_api_url
    # Notifications link the pull request under it.
    GITHUB_WEB_URL      = var.github_web_url
    TRUNK_BRANCH        = var.trunk_branch
    FILE_PATH_PATTERN   = var.file_path_pattern
    STALE_CLAIM_SECONDS = tostring(var.stale_claim_seconds)
    MAX_START_ATTEMPTS  = tostring(var.max_start_attempts)
    RUST_LOG            = var.log_level
    # Its `Apply` switch turns trigger_sf's per-unit statuses off.
    COMMIT_STATUS_CONFIG_SSM_KEY = local.ssm_names.commit_status_config
    # Unit statuses link to the read-only run page, signed with the run-link
    # key (never the vote-link key).
    RUN_LINK_KEY_SSM_KEY = local.ssm_names.run_link_key
    RUN_PAGE_URL         = aws_lambda_function_url.approval_response.function_url
    # The sweep launches create-deploy-stack for a trunk head no webhook announced.
    TRUNK_SWEEP_COOLDOWN_SECONDS            = tostring(var.trunk_sweep_cooldown_seconds)
    DEPLOY_DIRECT_PUSHES                    = tostring(var.deploy_direct_pushes)
    ECS_CLUSTER_ARN                         = aws_ecs_cluster.this.arn
    ECS_SUBNET_IDS                          = join(",", var.subnet_ids)
    ECS_SECURITY_GROUP_IDS                  = join(",", var.security_group_ids)
    ECS_ASSIGN_PUBLIC_IP                    = tostring(var.assign_public_ip)
    CREATE_DEPLOY_STACK_TASK_DEFINITION_ARN = aws_ecs_task_definition.this["create-deploy-stack"].arn
    CREATE_DEPLOY_STACK_CONTAINER_NAME      = "create-deploy-stack"
    CREATE_DEPLOY_STACK_LOG_GROUP           = aws_cloudwatch_log_group.task["create-deploy-stack"].name
    CREATE_DEPLOY_STACK_LOG_STREAM_PREFIX   = local.task_log_stream_prefix
  })

  approval_request_env = merge(local.metadb_data_api_env, local.notification_publisher_env, var.ses_configuration_set == null ? {} : {
    SES_CONFIGURATION_SET = var.ses_configuration_set
    }, {
    VOTE_LINK_KEY_SSM_KEY    = local.ssm_names.vote_link_key
    TASK_TOKEN_KEY_ID        = aws_kms_key.task_token.arn
    APPROVAL_URL             = aws_lambda_function_url.approval_response.function_url
    SES_FROM_ADDRESS         = var.approval_sender_email
    APPROVAL_TIMEOUT_SECONDS = tostring(var.approval_timeout_seconds)
    REPO_FULL_NAME           = var.repo_full_name
    GITHUB_WEB_URL           = var.github_web_url
    RUST_LOG                 = var.log_level
  })

  approval_response_env = merge(local.metadb_data_api_env, local.github_votes ? merge(local.github_env, {
    # Votes from the pull request (README: Voting from the pull request):
    # the comment, the merge commit, team membership and the reply.
    REPO_FULL_NAME     = var.repo_full_name
    GITHUB_API_URL     = var.github_api_url
    ACCOUNT_PARENT_CFG = jsonencode(var.account_parent_cfg)
    # One person, one vote (README: Voting from the pull request): a mapped
    # login's vote is its mail voter's.
    VOTER_GITHUB_LOGINS = jsonencode(var.voter_github_logins)
    }) : {}, {
    VOTE_LINK_KEY_SSM_KEY = local.ssm_names.vote_link_key
    RUN_LINK_KEY_SSM_KEY  = local.ssm_names.run_link_key
    TASK_TOKEN_KEY_ID     = aws_kms_key.task_token.arn
    PLAN_BUCKET           = aws_s3_bucket.plans.bucket
    RUST_LOG              = var.log_level
  })

  # Votes from the pull request are on when an account lists github_voters,
  # or voter_github_logins maps a mail voter's login (who may then vote from
  # GitHub as themselves): the receiver then hands vote comments to
  # approval-response.
  github_votes = length(flatten([for a in var.account_parent_cfg : a.github_voters])) > 0 || length(var.voter_github_logins) > 0
  # Built from the name, not the function's resource: the receiver's policy
  # would otherwise wait for a function that waits for every Lambda policy.
  approval_response_arn = "arn:${local.partition}:lambda:${local.region}:${local.account_id}:function:${local.function_names["approval-response"]}"
}

resource "aws_cloudwatch_log_group" "lambda" {
  #checkov:skip=CKV_AWS_338:Retention is the module\'s log_retention_in_days, 30 days by default to keep idle costs down; set 365 or more where a policy asks for a year.
  for_each = toset(local.lambda_names)

  name              = "/${var.name}/lambda/${each.key}"
  retention_in_days = var.log_retention_in_days
  kms_key_id        = local.kms_key_arn
  tags              = local.tags
}

# Failed asynchronous invocations (SNS → approval-request, EventBridge →
# trigger-sf) land here instead of vanishing.
resource "aws_sqs_queue" "dead_letter" {
  name                              = "${var.name}-lambda-dead-letters"
  message_retention_seconds         = 1209600
  kms_master_key_id                 = local.kms_key_arn
  kms_data_key_reuse_period_seconds = 3600
  tags                              = local.tags
}

# One call of ./modules/function per Lambda: only the name, the description and
# the environment differ; everything else comes from the per-function maps.
locals {
  lambda_shared = {
    function_names  = local.function_names
    role_arns       = { for n, role in aws_iam_role.lambda : n => role.arn }
    zip_paths       = local.lambda_zips
    log_group_names = { for n, group in aws_cloudwatch_log_group.lambda : n => group.name }
    architecture    = var.lambda_architecture
    memory_size     = var.lambda_memory_size
    timeout_seconds = var.lambda_timeout_seconds
    kms_key_arn     = local.kms_key_arn
    dead_letter_arn = aws_sqs_queue.dead_letter.arn
    tags            = local.tags
  }
}

module "receiver" {
  source      = "./modules/function"
  name        = "receiver"
  description = "live-ci: GitHub webhook receiver (Function URL)"
  environment = local.receiver_env
  shared      = local.lambda_shared
  # Caps what a flood of (unsigned) requests to the public URL can run.
  reserved_concurrency = var.receiver_reserved_concurrency
  depends_on           = [aws_iam_role_policy.lambda]
}

module "trigger_sf" {
  source      = "./modules/function"
  name        = "trigger-sf"
  description = "live-ci: records ended executions and starts ready units"
  environment = local.trigger_sf_env
  shared      = local.lambda_shared
  depends_on  = [aws_iam_role_policy.lambda]
}

module "approval_request" {
  source      = "./modules/function"
  name        = "approval-request"
  description = "live-ci: e-mails approval requests to a unit's voters"
  environment = local.approval_request_env
  shared      = local.lambda_shared
  depends_on  = [aws_iam_role_policy.lambda]
}

module "approval_response" {
  source      = "./modules/function"
  name        = "approval-response"
  description = "live-ci: records votes from the signed e-mail links (Function URL)"
  environment = local.approval_response_env
  shared      = local.lambda_shared
  # Caps what a flood of requests to the public URL can run.
  reserved_concurrency = var.approval_response_reserved_concurrency
  depends_on           = [aws_iam_role_policy.lambda]
}

# Deployments made before the functions moved into ./modules/function keep
# their functions: Terraform moves the state instead of replacing them.
moved {
  from = aws_lambda_function.receiver
  to   = module.receiver.aws_lambda_function.this
}

moved {
  from = aws_lambda_function.trigger_sf
  to   = module.trigger_sf.aws_lambda_function.this
}

moved {
  from = aws_lambda_function.approval_request
  to   = module.approval_request.aws_lambda_function.this
}

moved {
  from = aws_lambda_function.approval_response
  to   = module.approval_response.aws_lambda_function.this
}

################################################################################
# Function URLs: GitHub and the voters' browsers cannot sign requests with
# SigV4, so both URLs are public and the functions authenticate every request
# themselves (X-Hub-Signature-256; HMAC-signed vote links).
################################################################################

resource "aws_lambda_function_url" "receiver" {
  #checkov:skip=CKV_AWS_258:GitHub webhooks cannot sign with SigV4; the receiver verifies X-Hub-Signature-256 in constant time and answers 401 otherwise.
  function_name      = module.receiver.function_name
  authorization_type = "NONE"
}

resource "aws_lambda_function_url" "approval_response" {
  #checkov:skip=CKV_AWS_258:Voters follow links from e-mail in a browser; every link carries an HMAC signature over the execution and voter, verified in constant time.
  function_name      = module.approval_response.function_name
  authorization_type = "NONE"
}

# A NONE-auth Function URL answers only if the resource policy grants the public
# lambda:InvokeFunctionUrl, and (for URLs created since October 2025) also
# lambda:InvokeFunction. hashicorp/aws 5.x cannot attach the
# lambda:InvokedViaFunctionUrl condition to the latter, so a signed direct
# Invoke from any AWS account reaches the handlers too; they authenticate every
# request by its signature either way.
locals {
  public_functions = {
    receiver          = module.receiver.function_name
    approval-response = module.approval_response.function_name
  }
}

resource "aws_lambda_permission" "function_url" {
  #checkov:skip=CKV_AWS_301:The Function URL is public by design (GitHub webhooks, voters' browsers); the handlers verify HMAC signatures.
  for_each = local.public_functions

  statement_id           = "AllowPublicFunctionUrl"
  action                 = "lambda:InvokeFunctionUrl"
  function_name          = each.value
  principal              = "*"
  function_url_auth_type = "NONE"
}

resource "aws_lambda_permission" "function_url_invoke" {
  #checkov:skip=CKV_AWS_301:Required next to InvokeFunctionUrl for public Function URLs; the handlers verify HMAC signatures.
  for_each = local.public_functions

  statement_id  = "AllowPublicFunctionUrlInvoke"
  action        = "lambda:InvokeFunction"
  function_name = each.value
  principal     = "*"
}
