# The module's KMS key, the saved-plan bucket, the task image repository and the
# approval sender's SES identity.

################################################################################
# KMS
################################################################################

resource "aws_kms_key" "this" {
  count = var.create_kms_key ? 1 : 0

  description             = "live-ci (${var.name}): SSM secrets, saved plans, approval topic, logs, metadb"
  enable_key_rotation     = true
  deletion_window_in_days = 30
  policy                  = data.aws_iam_policy_document.kms[0].json
  tags                    = local.tags
}

resource "aws_kms_alias" "this" {
  count = var.create_kms_key ? 1 : 0

  name          = "alias/${var.name}"
  target_key_id = aws_kms_key.this[0].key_id
}

data "aws_iam_policy_document" "kms" {
  #checkov:skip=CKV_AWS_111:A key policy's "*" resource means this key only; the account statement is the standard delegation to IAM.
  #checkov:skip=CKV_AWS_356:A key policy's "*" resource means this key only.
  #checkov:skip=CKV_AWS_109:A key policy's "*" resource means this key only; without account administration the key becomes unmanageable.
  count = var.create_kms_key ? 1 : 0

  # The account administers the key; the component roles get their use of it
  # through their own IAM policies (iam.tf).
  statement {
    sid       = "AccountAdministers"
    actions   = ["kms:*"]
    resources = ["*"]
    principals {
      type        = "AWS"
      identifiers = ["arn:${local.partition}:iam::${local.account_id}:root"]
    }
  }

  # CloudWatch Logs encrypts the module's log groups with the key.
  statement {
    sid       = "CloudWatchLogs"
    actions   = ["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"]
    resources = ["*"]
    principals {
      type        = "Service"
      identifiers = ["logs.${local.region}.amazonaws.com"]
    }
    condition {
      test     = "ArnLike"
      variable = "kms:EncryptionContext:aws:logs:arn"
      values   = ["arn:${local.partition}:logs:${local.region}:${local.account_id}:log-group:/${var.name}/*"]
    }
  }
}

################################################################################
# Task tokens: a key of their own, whatever kms_key_arn says
################################################################################

# A Step Functions task token completes Request Approval: whoever holds one
# can approve a deployment. approval_request stores it encrypted under this
# key with the encryption context {"live-ci:execution-id" = <execution>}, and
# only approval_response may decrypt. The key policy, not IAM, decides who may
# use it: the account administers the key but is not delegated its use, so no
# other role (however broad its IAM policy) and no grant can decrypt a token.
resource "aws_kms_key" "task_token" {
  description             = "live-ci (${var.name}): Step Functions task tokens of pending approvals"
  enable_key_rotation     = true
  deletion_window_in_days = 7
  policy                  = data.aws_iam_policy_document.task_token_key.json
  tags                    = local.tags
}

resource "aws_kms_alias" "task_token" {
  name          = "alias/${var.name}-task-tokens"
  target_key_id = aws_kms_key.task_token.key_id
}

data "aws_iam_policy_document" "task_token_key" {
  #checkov:skip=CKV_AWS_111:A key policy's "*" resource means this key only; the administration statement delegates no use of the key.
  #checkov:skip=CKV_AWS_356:A key policy's "*" resource means this key only.
  #checkov:skip=CKV_AWS_109:A key policy's "*" resource means this key only; without account administration the key becomes unmanageable.

  # Administration only: no Encrypt/Decrypt/ReEncrypt/GenerateDataKey and no
  # CreateGrant, so IAM policies cannot hand out the key's use.
  statement {
    sid = "AccountAdministers"
    actions = [
      "kms:CreateAlias",
      "kms:DeleteAlias",
      "kms:UpdateAlias",
      "kms:Describe*",
      "kms:Enable*",
      "kms:Disable*",
      "kms:List*",
      "kms:Get*",
      "kms:PutKeyPolicy",
      "kms:UpdateKeyDescription",
      "kms:RevokeGrant",
      "kms:RetireGrant",
      "kms:TagResource",
      "kms:UntagResource",
      "kms:ScheduleKeyDeletion",
      "kms:CancelKeyDeletion",
      "kms:RotateKeyOnDemand",
    ]
    resources = ["*"]
    principals {
      type        = "AWS"
      identifiers = ["arn:${local.partition}:iam::${local.account_id}:root"]
    }
  }

  statement {
    sid       = "ApprovalRequestEncrypts"
    actions   = ["kms:Encrypt"]
    resources = ["*"]
    principals {
      type        = "AWS"
      identifiers = [aws_iam_role.lambda["approval-request"].arn]
    }
    condition {
      test     = "ForAllValues:StringEquals"
      variable = "kms:EncryptionContextKeys"
      values   = ["live-ci:execution-id"]
    }
    condition {
      test     = "Null"
      variable = "kms:EncryptionContext:live-ci:execution-id"
      values   = ["false"]
    }
  }

  statement {
    sid       = "ApprovalResponseDecrypts"
    actions   = ["kms:Decrypt"]
    resources = ["*"]
    principals {
      type        = "AWS"
      identifiers = [aws_iam_role.lambda["approval-response"].arn]
    }
    condition {
      test     = "ForAllValues:StringEquals"
      variable = "kms:EncryptionContextKeys"
      values   = ["live-ci:execution-id"]
    }
    condition {
      test     = "Null"
      variable = "kms:EncryptionContext:live-ci:execution-id"
      values   = ["false"]
    }
  }
}

################################################################################
# Saved plans
################################################################################

resource "aws_s3_bucket" "plans" {
  #checkov:skip=CKV_AWS_18:Access logging needs a separate log bucket the module does not own; CloudTrail data events cover access to saved plans.
  #checkov:skip=CKV_AWS_144:Saved plans are short-lived build artifacts bound to one commit; cross-region replication adds nothing.
  #checkov:skip=CKV2_AWS_62:Nothing reacts to new plans; terra-run passes the plan's key through the state machine.
  bucket        = local.plan_bucket_name
  force_destroy = var.plan_bucket_force_destroy
  tags          = local.tags
}

resource "aws_s3_bucket_public_access_block" "plans" {
  bucket                  = aws_s3_bucket.plans.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_ownership_controls" "plans" {
  bucket = aws_s3_bucket.plans.id
  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_versioning" "plans" {
  bucket = aws_s3_bucket.plans.id
  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "plans" {
  bucket = aws_s3_bucket.plans.id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = "aws:kms"
      kms_master_key_id = local.kms_key_arn
    }
    bucket_key_enabled = true
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "plans" {
  bucket = aws_s3_bucket.plans.id

  rule {
    id     = "expire-saved-plans"
    status = "Enabled"
    filter {}

    expiration {
      days = var.plan_retention_days
    }
    noncurrent_version_expiration {
      noncurrent_days = var.plan_retention_days
    }
    abort_incomplete_multipart_upload {
      days_after_initiation = 1
    }
  }
}

# Plans hold secrets in clear (provider outputs, variables): TLS only.
resource "aws_s3_bucket_policy" "plans" {
  bucket = aws_s3_bucket.plans.id
  policy = data.aws_iam_policy_document.plans_bucket.json

  depends_on = [aws_s3_bucket_public_access_block.plans]
}

data "aws_iam_policy_document" "plans_bucket" {
  statement {
    sid       = "DenyInsecureTransport"
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = [aws_s3_bucket.plans.arn, "${aws_s3_bucket.plans.arn}/*"]
    principals {
      type        = "*"
      identifiers = ["*"]
    }
    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

################################################################################
# Task image repository
################################################################################

resource "aws_ecr_repository" "task" {
  count = var.create_ecr_repository ? 1 : 0

  name                 = "${var.name}-task"
  image_tag_mutability = "IMMUTABLE"
  tags                 = local.tags

  image_scanning_configuration {
    scan_on_push = true
  }

  encryption_configuration {
    encryption_type = "KMS"
    kms_key         = local.kms_key_arn
  }
}

resource "aws_ecr_lifecycle_policy" "task" {
  count = var.create_ecr_repository ? 1 : 0

  repository = aws_ecr_repository.task[0].name
  policy = jsonencode({
    rules = [{
      rulePriority = 1
      description  = "keep the last 20 images"
      selection    = { tagStatus = "any", countType = "imageCountMoreThan", countNumber = 20 }
      action       = { type = "expire" }
    }]
  })
}

################################################################################
# Approval e-mail sender
################################################################################

resource "aws_sesv2_email_identity" "sender" {
  email_identity = var.approval_sender_email
  tags           = local.tags
}
