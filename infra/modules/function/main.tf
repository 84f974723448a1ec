# One live-ci Lambda: provided.al2023, the zip from `make package`, JSON logs
# into its log group, X-Ray tracing, failed asynchronous invocations to the
# dead-letter queue. The root module calls it once per function; one call each
# (not for_each) because the functions reference each other — approval-request
# is given approval-response's Function URL — which a single for_each would
# turn into a cycle.

resource "aws_lambda_function" "this" {
  #checkov:skip=CKV_AWS_117:Runs outside a VPC: the functions talk only to GitHub and to public AWS APIs over HTTPS (the metadb through the RDS Data API), never to VPC resources.
  #checkov:skip=CKV_AWS_115:Reserved concurrency is a module variable for the two public functions (-1 by default: it takes from the account's unreserved pool and fails on new accounts); every function's work is idempotent or a guarded metadb update.
  #checkov:skip=CKV_AWS_272:Code signing needs a signing profile the module does not own; the zip is built from this repository by make package.
  function_name    = var.shared.function_names[var.name]
  description      = var.description
  role             = var.shared.role_arns[var.name]
  filename         = var.shared.zip_paths[var.name]
  source_code_hash = var.shared.zip_paths[var.name] == null ? null : filebase64sha256(var.shared.zip_paths[var.name])
  runtime          = "provided.al2023"
  handler          = "bootstrap"
  architectures    = [var.shared.architecture]
  memory_size      = var.shared.memory_size
  timeout          = var.shared.timeout_seconds

  reserved_concurrent_executions = var.reserved_concurrency
  kms_key_arn                    = var.shared.kms_key_arn
  tags                           = var.shared.tags

  environment {
    variables = var.environment
  }

  # The binaries write one JSON object per line (tracing's JSON formatter);
  # with the JSON format Lambda keeps them as they are and adds its own
  # platform records (REPORT …) as JSON too.
  logging_config {
    log_format = "JSON"
    log_group  = var.shared.log_group_names[var.name]
  }

  tracing_config {
    mode = "Active"
  }

  dead_letter_config {
    target_arn = var.shared.dead_letter_arn
  }
}
