//! The IAM actions each subcommand calls, for its own task role in the
//! Terraform module (the contract tests compare them with the module's).

/// The metadb's actions through the RDS Data API (`live_ci_metadb::AWS_ACTIONS`).
pub(super) const METADB_ACTIONS: [&str; 5] = [
    "rds-data:ExecuteStatement",
    "rds-data:BeginTransaction",
    "rds-data:CommitTransaction",
    "rds-data:RollbackTransaction",
    "secretsmanager:GetSecretValue",
];

/// What `pr-plan` calls: the GitHub token and status switches (SecureString:
/// `kms:Decrypt`), and the accounts' plan roles. Nothing else: it runs a pull
/// request's code.
pub const PR_PLAN_AWS_ACTIONS: &[&str] = &["ssm:GetParameter", "kms:Decrypt", "sts:AssumeRole"];

/// What `create-deploy-stack` calls (`sts:AssumeRole` on plan roles, for the
/// plan scan; `s3:PutObject` and S3's SSE-KMS `kms:GenerateDataKey` for the
/// run's packed checkout).
pub const CREATE_DEPLOY_STACK_AWS_ACTIONS: &[&str] = &[
    "ssm:GetParameter",
    "ssm:PutParameter",
    "kms:Decrypt",
    "kms:GenerateDataKey",
    "s3:PutObject",
    "lambda:InvokeFunction",
    "sts:AssumeRole",
    METADB_ACTIONS[0],
    METADB_ACTIONS[1],
    METADB_ACTIONS[2],
    METADB_ACTIONS[3],
    METADB_ACTIONS[4],
    "secretsmanager:PutSecretValue",
];

/// What `terra-run` calls (`kms:GenerateDataKey` through S3's SSE-KMS on
/// upload, `s3:GetObjectVersion` for the recorded plan version).
pub const TERRA_RUN_AWS_ACTIONS: &[&str] = &[
    "ssm:GetParameter",
    "kms:Decrypt",
    "kms:GenerateDataKey",
    "s3:PutObject",
    "s3:GetObject",
    "s3:GetObjectVersion",
    "states:SendTaskSuccess",
    "states:SendTaskFailure",
    "states:SendTaskHeartbeat",
    "sts:AssumeRole",
    METADB_ACTIONS[0],
    METADB_ACTIONS[1],
    METADB_ACTIONS[2],
    METADB_ACTIONS[3],
    METADB_ACTIONS[4],
];

/// What `drift` calls: the GitHub App's key or token (SecureString:
/// `kms:Decrypt`), the accounts' plan roles (`sts:AssumeRole`: the module
/// names only plan roles as its resources), its own metadb login (Data API
/// and its login secret) and the notification topic (a KMS-encrypted topic:
/// SNS asks the publisher's `kms:GenerateDataKey`). No apply role, no
/// merge-lock parameter write (`ssm:PutParameter`), no plan bucket, no
/// state machine: a drift check never deploys nor holds what a deploy needs.
pub const DRIFT_AWS_ACTIONS: &[&str] = &[
    "ssm:GetParameter",
    "kms:Decrypt",
    "sts:AssumeRole",
    "sns:Publish",
    "kms:GenerateDataKey",
    METADB_ACTIONS[0],
    METADB_ACTIONS[1],
    METADB_ACTIONS[2],
    METADB_ACTIONS[3],
    METADB_ACTIONS[4],
];

/// Each subcommand's actions, for its own task role in the Terraform module.
pub const JOB_AWS_ACTIONS: &[(&str, &[&str])] = &[
    ("pr-plan", PR_PLAN_AWS_ACTIONS),
    ("create-deploy-stack", CREATE_DEPLOY_STACK_AWS_ACTIONS),
    ("terra-run", TERRA_RUN_AWS_ACTIONS),
    ("drift", DRIFT_AWS_ACTIONS),
];

/// Every IAM action the binary calls (the union of [`JOB_AWS_ACTIONS`]).
pub const AWS_ACTIONS: &[&str] = &[
    "ssm:GetParameter",
    "ssm:PutParameter",
    "kms:Decrypt",
    "kms:GenerateDataKey",
    "sts:AssumeRole",
    "states:SendTaskSuccess",
    "states:SendTaskFailure",
    "states:SendTaskHeartbeat",
    "s3:PutObject",
    "s3:GetObject",
    "s3:GetObjectVersion",
    "lambda:InvokeFunction",
    "sns:Publish",
    METADB_ACTIONS[0],
    METADB_ACTIONS[1],
    METADB_ACTIONS[2],
    METADB_ACTIONS[3],
    METADB_ACTIONS[4],
    "secretsmanager:PutSecretValue",
];
