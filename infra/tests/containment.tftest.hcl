# Which account roles each job's task role may assume, from the policy
# documents the module renders (their statements as evaluated for these
# accounts, planned against a mocked AWS provider): pr-plan and the plan scan
# of create-deploy-stack reach plan roles only, the graph scan none, a
# terra-run plan-phase role only its own account's plan role; no apply role
# is reachable but by its account's apply-phase role, and no statement grants
# sts:AssumeRole (or any action) through a wildcard. (issue 27 item 2;
# the deployed roles: tests/e2e each_task_role_may_assume_exactly_its_accounts_role_of_its_phase.)
# Run by scripts/infra-check.sh (`terraform test`).

mock_provider "aws" {
  source = "./tests/mocks"
}

# The ARNs the policies name, known at plan time (mocked values would be
# random strings, and unknown ones would hide what a statement names).
override_resource {
  target          = aws_kms_key.this[0]
  override_during = plan
  values          = { arn = "arn:aws:kms:eu-west-1:123456789012:key/k" }
}
override_resource {
  target          = aws_s3_bucket.plans
  override_during = plan
  values          = { arn = "arn:aws:s3:::live-ci-plans" }
}
override_resource {
  target          = module.trigger_sf.aws_lambda_function.this
  override_during = plan
  values          = { arn = "arn:aws:lambda:eu-west-1:123456789012:function:live-ci-trigger-sf" }
}
override_resource {
  target          = aws_rds_cluster.metadb
  override_during = plan
  values = {
    arn                = "arn:aws:rds:eu-west-1:123456789012:cluster:live-ci-metadb"
    master_user_secret = [{ secret_arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:metadb", kms_key_id = "k", secret_status = "active" }]
  }
}
override_resource {
  target          = aws_secretsmanager_secret.metadb_terra_run
  override_during = plan
  values          = { arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:live-ci/metadb/terra-run" }
}
# The drift login's secret, which create-deploy-stack (the migrator) fills.
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
  account_parent_cfg = [
    {
      name                = "dev"
      path                = "dev"
      voters              = ["ops@example.com"]
      min_approval_count  = 1
      min_rejection_count = 1
      plan_role_arn       = "arn:aws:iam::111111111111:role/plan"
      apply_role_arn      = "arn:aws:iam::111111111111:role/apply"
    },
    {
      name                = "prod"
      path                = "prod"
      voters              = ["ops@example.com"]
      min_approval_count  = 1
      min_rejection_count = 1
      plan_role_arn       = "arn:aws:iam::222222222222:role/plan"
      apply_role_arn      = "arn:aws:iam::222222222222:role/apply"
    },
  ]
  # A plan only hashes the zips: any file stands in for them.
  lambda_zip_paths = {
    receiver            = "README.md"
    "trigger-sf"        = "README.md"
    "approval-request"  = "README.md"
    "approval-response" = "README.md"
  }
}

run "pr_plan_assumes_plan_roles_only" {
  command = plan
  assert {
    condition = toset(flatten([
      for s in data.aws_iam_policy_document.task_pr_plan.statement : s.resources if contains(s.actions, "sts:AssumeRole")
    ])) == toset(["arn:aws:iam::111111111111:role/plan", "arn:aws:iam::222222222222:role/plan"])
    error_message = "pr-plan's task role may assume the accounts' plan roles, and only them"
  }
  assert {
    condition = length(setintersection(
      toset(flatten([for s in data.aws_iam_policy_document.task_pr_plan.statement : s.resources])),
      toset(["arn:aws:iam::111111111111:role/apply", "arn:aws:iam::222222222222:role/apply"]),
    )) == 0
    error_message = "no statement of pr-plan's task role names an apply role"
  }
  assert {
    condition = alltrue([
      for s in data.aws_iam_policy_document.task_pr_plan.statement : alltrue([for a in s.actions : !strcontains(a, "*")]) && s.effect != "Deny"
    ]) && length(data.aws_iam_policy_document.task_pr_plan.source_policy_documents == null ? [] : data.aws_iam_policy_document.task_pr_plan.source_policy_documents) == 0
    error_message = "pr-plan's document has no wildcard action and merges no other document (no metadb)"
  }
}

run "the_plan_scan_assumes_plan_roles_only" {
  command = plan
  variables {
    scan_type = "plan"
  }
  assert {
    condition = toset(flatten([
      for s in data.aws_iam_policy_document.task_create_deploy_stack.statement : s.resources if contains(s.actions, "sts:AssumeRole")
    ])) == toset(["arn:aws:iam::111111111111:role/plan", "arn:aws:iam::222222222222:role/plan"])
    error_message = "create-deploy-stack's plan scan may assume the accounts' plan roles, and only them"
  }
  assert {
    condition = length(setintersection(
      toset(flatten([for s in data.aws_iam_policy_document.task_create_deploy_stack.statement : s.resources])),
      toset(["arn:aws:iam::111111111111:role/apply", "arn:aws:iam::222222222222:role/apply"]),
    )) == 0
    error_message = "no statement of create-deploy-stack's task role names an apply role"
  }
  assert {
    condition = alltrue([
      for s in data.aws_iam_policy_document.task_create_deploy_stack.statement : alltrue([for a in s.actions : !strcontains(a, "*")])
    ])
    error_message = "create-deploy-stack's document has no wildcard action"
  }
}

run "the_graph_scan_assumes_no_role" {
  command = plan
  variables {
    scan_type = "graph"
  }
  assert {
    condition = length(flatten([
      for s in data.aws_iam_policy_document.task_create_deploy_stack.statement : s.resources if contains(s.actions, "sts:AssumeRole")
    ])) == 0
    error_message = "the graph scan runs no repository code: create-deploy-stack assumes no account role"
  }
}

run "a_plan_phase_role_reaches_its_accounts_plan_role_only" {
  command = plan
  assert {
    condition = alltrue([
      for k, d in data.aws_iam_policy_document.task_terra_run : toset(flatten([
        for s in d.statement : s.resources if contains(s.actions, "sts:AssumeRole")
      ])) == toset([local.terra_run_roles[k].assume])
    ])
    error_message = "each terra-run role may assume exactly its account's role of its phase"
  }
  assert {
    condition = alltrue([
      for k, d in data.aws_iam_policy_document.task_terra_run : length(setintersection(
        toset(flatten([for s in d.statement : s.resources])),
        toset(["arn:aws:iam::111111111111:role/apply", "arn:aws:iam::222222222222:role/apply"]),
      )) == 0 if startswith(k, "plan-")
    ])
    error_message = "no statement of a plan-phase role names an apply role"
  }
  assert {
    condition = alltrue([
      for k, d in data.aws_iam_policy_document.task_terra_run : alltrue([
        for s in d.statement : alltrue([for a in s.actions : !strcontains(a, "*")])
      ])
    ])
    error_message = "terra-run's documents have no wildcard action"
  }
  assert {
    condition = alltrue([
      for k, d in data.aws_iam_policy_document.task_terra_run : !contains(flatten([for s in d.statement : s.actions]), "s3:GetObjectVersion") if startswith(k, "plan-")
    ])
    error_message = "a plan-phase role cannot read saved plans back"
  }
}

# terra-run logs in to the metadb as its own restricted login (migration
# 0015's live_ci_terra_run), not as the master: every terra-run role reads
# that login's secret and no other, its Data API document names no secret,
# and its task definition is given that secret; create-deploy-stack (the
# migrator) may read the login's secret and put its value.
run "terra_run_reads_its_own_metadb_login_never_the_master" {
  command = plan
  assert {
    condition = alltrue([
      for k, d in data.aws_iam_policy_document.task_terra_run : toset(flatten([
        for s in d.statement : s.resources if contains(s.actions, "secretsmanager:GetSecretValue")
      ])) == toset(["arn:aws:secretsmanager:eu-west-1:123456789012:secret:live-ci/metadb/terra-run"])
    ])
    error_message = "each terra-run role reads terra-run's metadb login secret and no other secret"
  }
  assert {
    condition = alltrue([
      for k, d in data.aws_iam_policy_document.task_terra_run : !contains(flatten([for s in d.statement : s.resources]), "arn:aws:secretsmanager:eu-west-1:123456789012:secret:metadb")
    ])
    error_message = "no terra-run role names the metadb master secret"
  }
  assert {
    condition     = aws_secretsmanager_secret.metadb_terra_run.name == "live-ci/metadb/live_ci/terra-run"
    error_message = "the login secret's name carries metadb_name (the login is per database; a changed name gets a new, empty secret)"
  }
  assert {
    condition     = length([for s in data.aws_iam_policy_document.metadb_data_api_calls.statement : s if anytrue([for a in s.actions : startswith(a, "secretsmanager:")])]) == 0
    error_message = "the shared Data API calls document grants no secret"
  }
  assert {
    condition     = local.task_env_by_kind["terra-run"].METADB_SECRET_ARN == "arn:aws:secretsmanager:eu-west-1:123456789012:secret:live-ci/metadb/terra-run"
    error_message = "terra-run's task definition logs in with terra-run's secret"
  }
  assert {
    condition     = local.task_env_by_kind["create-deploy-stack"].METADB_SECRET_ARN == "arn:aws:secretsmanager:eu-west-1:123456789012:secret:metadb" && local.task_env_by_kind["create-deploy-stack"].METADB_TERRA_RUN_SECRET_ARN == "arn:aws:secretsmanager:eu-west-1:123456789012:secret:live-ci/metadb/terra-run"
    error_message = "create-deploy-stack logs in as the master and is told terra-run's secret"
  }
  assert {
    condition = toset(flatten([
      for s in data.aws_iam_policy_document.task_create_deploy_stack.statement : s.actions if contains(s.resources, "arn:aws:secretsmanager:eu-west-1:123456789012:secret:live-ci/metadb/terra-run")
    ])) == toset(["secretsmanager:GetSecretValue", "secretsmanager:PutSecretValue"])
    error_message = "create-deploy-stack may read terra-run's secret and put its value"
  }
}

# Issue 27 item 6 b, as far as hashicorp/aws 5.x allows (infra/README.md,
# "Function URL permissions"): the public InvokeFunctionUrl grant is
# conditioned on lambda:FunctionUrlAuthType = NONE, and both public grants
# exist for exactly the two functions behind Function URLs.
run "public_invoke_grants_only_the_two_url_functions" {
  command = plan
  assert {
    condition     = toset(keys(aws_lambda_permission.function_url)) == toset(["receiver", "approval-response"]) && toset(keys(aws_lambda_permission.function_url_invoke)) == toset(["receiver", "approval-response"])
    error_message = "public grants for the receiver and approval-response only"
  }
  assert {
    condition = alltrue([
      for p in aws_lambda_permission.function_url : p.action == "lambda:InvokeFunctionUrl" && p.principal == "*" && p.function_url_auth_type == "NONE"
    ])
    error_message = "the public InvokeFunctionUrl grant carries the lambda:FunctionUrlAuthType condition"
  }
  assert {
    condition = alltrue([
      for k, p in aws_lambda_permission.function_url_invoke : p.action == "lambda:InvokeFunction" && p.function_name == local.public_functions[k]
    ])
    error_message = "the unconditioned InvokeFunction grant names its Function URL's function and nothing else"
  }
}

# Direct connections (metadb_connection = "direct"): terra-run's METADB_URL
# is its own login's URL, the `url` key of the login's secret that
# create-deploy-stack writes; never the master URL you fill in SSM, which
# only create-deploy-stack gets. ECS's execution role reads that key at task
# start; terra-run's task roles read no secret at all.
run "with_direct_connections_terra_run_gets_its_own_logins_url_never_the_master" {
  command = plan
  variables {
    metadb_connection = "direct"
  }
  assert {
    condition     = length(local.terra_run_task_secrets) == 1 && local.terra_run_task_secrets[0].name == "METADB_URL" && local.terra_run_task_secrets[0].valueFrom == "arn:aws:secretsmanager:eu-west-1:123456789012:secret:live-ci/metadb/terra-run:url::"
    error_message = "terra-run's METADB_URL is the url key of its login's secret"
  }
  assert {
    condition     = length(local.task_secrets) == 1 && local.task_secrets[0].name == "METADB_URL" && local.task_secrets[0].valueFrom == "arn:aws:ssm:eu-west-1:123456789012:parameter/live-ci/metadb-url"
    error_message = "create-deploy-stack's METADB_URL is the parameter the operator fills"
  }
  assert {
    condition     = local.task_env_by_kind["create-deploy-stack"].METADB_TERRA_RUN_SECRET_ARN == "arn:aws:secretsmanager:eu-west-1:123456789012:secret:live-ci/metadb/terra-run"
    error_message = "create-deploy-stack is told terra-run's secret, to write the login's URL into it"
  }
  assert {
    condition     = !contains(keys(local.task_env_by_kind["terra-run"]), "METADB_SECRET_ARN") && !contains(keys(local.task_env_by_kind["terra-run"]), "METADB_URL")
    error_message = "terra-run's plain environment names no metadb credentials"
  }
  assert {
    condition = alltrue([
      for k, d in data.aws_iam_policy_document.task_terra_run : length(flatten([
        for s in d.statement : s.resources if anytrue([for a in s.actions : startswith(a, "secretsmanager:")])
      ])) == 0
    ])
    error_message = "no terra-run task role reads a secret: ECS injects the URL"
  }
  assert {
    condition = toset(flatten([
      for s in data.aws_iam_policy_document.task_execution.statement : s.resources if contains(s.actions, "secretsmanager:GetSecretValue")
    ])) == toset(["arn:aws:secretsmanager:eu-west-1:123456789012:secret:live-ci/metadb/terra-run", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:live-ci/metadb/drift"])
    error_message = "the execution role reads terra-run's and drift's login secrets (and no other secret) to inject their URLs"
  }
  assert {
    condition = toset(flatten([
      for s in data.aws_iam_policy_document.task_create_deploy_stack.statement : s.actions if contains(s.resources, "arn:aws:secretsmanager:eu-west-1:123456789012:secret:live-ci/metadb/terra-run")
    ])) == toset(["secretsmanager:GetSecretValue", "secretsmanager:PutSecretValue"])
    error_message = "create-deploy-stack may read terra-run's secret and put its value"
  }
}
