# The metadb: Aurora PostgreSQL Serverless v2 with the RDS Data API, its master
# password managed by RDS in Secrets Manager. live-ci-task applies the schema
# migrations (crates/metadb/migrations) when it starts, under an advisory lock,
# so the first task after an apply or an upgrade migrates and the others wait.

resource "aws_db_subnet_group" "metadb" {
  name        = "${var.name}-metadb"
  description = "live-ci metadb"
  subnet_ids  = coalesce(var.metadb_subnet_ids, var.subnet_ids)
  tags        = local.tags
}

resource "aws_security_group" "metadb" {
  name        = "${var.name}-metadb"
  description = "live-ci metadb: PostgreSQL from the tasks (direct connections only)"
  vpc_id      = var.vpc_id
  tags        = local.tags
}

# The Data API needs no network path; direct connections come from the tasks'
# security groups only.
resource "aws_vpc_security_group_ingress_rule" "metadb_from_tasks" {
  for_each = local.metadb_direct ? toset(var.security_group_ids) : toset([])

  security_group_id            = aws_security_group.metadb.id
  description                  = "PostgreSQL from live-ci tasks"
  ip_protocol                  = "tcp"
  from_port                    = 5432
  to_port                      = 5432
  referenced_security_group_id = each.value
  tags                         = local.tags
}

resource "aws_rds_cluster_parameter_group" "metadb" {
  name        = "${var.name}-metadb"
  family      = "aurora-postgresql${split(".", var.metadb_engine_version)[0]}"
  description = "live-ci metadb: TLS only, statement logging of DDL"
  tags        = local.tags

  parameter {
    name  = "rds.force_ssl"
    value = "1"
  }

  parameter {
    name  = "log_statement"
    value = "ddl"
  }

  parameter {
    name  = "log_min_duration_statement"
    value = "1000"
  }
}

resource "aws_rds_cluster" "metadb" {
  #checkov:skip=CKV2_AWS_8:Automated backups (metadb_backup_retention_days) cover the metadb; an AWS Backup plan is the account's choice, not the module's.
  cluster_identifier                  = "${var.name}-metadb"
  engine                              = "aurora-postgresql"
  engine_mode                         = "provisioned"
  engine_version                      = var.metadb_engine_version
  database_name                       = var.metadb_name
  master_username                     = var.metadb_username
  manage_master_user_password         = true
  master_user_secret_kms_key_id       = local.kms_key_arn
  enable_http_endpoint                = true
  iam_database_authentication_enabled = true
  storage_encrypted                   = true
  kms_key_id                          = local.kms_key_arn
  db_subnet_group_name                = aws_db_subnet_group.metadb.name
  vpc_security_group_ids              = [aws_security_group.metadb.id]
  db_cluster_parameter_group_name     = aws_rds_cluster_parameter_group.metadb.name
  backup_retention_period             = var.metadb_backup_retention_days
  copy_tags_to_snapshot               = true
  deletion_protection                 = var.metadb_deletion_protection
  skip_final_snapshot                 = var.metadb_skip_final_snapshot
  final_snapshot_identifier           = var.metadb_skip_final_snapshot ? null : "${var.name}-metadb-final"
  enabled_cloudwatch_logs_exports     = ["postgresql"]
  tags                                = local.tags

  serverlessv2_scaling_configuration {
    min_capacity = var.metadb_min_capacity
    max_capacity = var.metadb_max_capacity
    # Only a cluster that may pause takes an auto-pause delay.
    seconds_until_auto_pause = var.metadb_min_capacity == 0 ? var.metadb_seconds_until_auto_pause : null
  }
}

resource "aws_rds_cluster_instance" "metadb" {
  #checkov:skip=CKV_AWS_118:Enhanced monitoring needs a monitoring role and per-second metrics a CI database at 0.5 ACU does not warrant; CloudWatch metrics remain.
  identifier                            = "${var.name}-metadb-1"
  cluster_identifier                    = aws_rds_cluster.metadb.id
  instance_class                        = "db.serverless"
  engine                                = aws_rds_cluster.metadb.engine
  engine_version                        = aws_rds_cluster.metadb.engine_version
  db_subnet_group_name                  = aws_db_subnet_group.metadb.name
  auto_minor_version_upgrade            = true
  performance_insights_enabled          = true
  performance_insights_kms_key_id       = local.kms_key_arn
  performance_insights_retention_period = 7
  tags                                  = local.tags
}

# terra-run's own login (migration 0015's live_ci_terra_run role, granted to a
# login per database): created empty — no value in the state. The migrator
# (create-deploy-stack) writes a generated password into it once, and sets the
# login's SCRAM verifier; it never rotates, so a running terra-run is never
# locked out. Its name carries the database's: the login is per database
# (`<metadb_name>_terra_run_login`), and the migrator refuses a secret naming
# another user, so a changed metadb_name gets a new, empty secret.
resource "aws_secretsmanager_secret" "metadb_terra_run" {
  #checkov:skip=CKV2_AWS_57:Never rotated by design: the migrator sets it once and a running terra-run must keep its login.
  name        = "${var.name}/metadb/${var.metadb_name}/terra-run"
  description = "live-ci metadb: terra-run's restricted login (set by create-deploy-stack)"
  kms_key_id  = local.kms_key_arn
  tags        = local.tags
}

# The drift job's own login (migration 0020's live_ci_drift role), made as
# terra-run's is: created empty, filled once by the migrator
# (`<metadb_name>_drift_login`, live_ci_metadb::provision_login), never
# rotated. drift runs repository code (terraform plans of the trunk): it never
# holds the master secret, and its role writes only the drift tables.
resource "aws_secretsmanager_secret" "metadb_drift" {
  #checkov:skip=CKV2_AWS_57:Never rotated by design: the migrator sets it once and a running drift check must keep its login.
  name        = "${var.name}/metadb/${var.metadb_name}/drift"
  description = "live-ci metadb: the drift check's restricted login (set by create-deploy-stack)"
  kms_key_id  = local.kms_key_arn
  tags        = local.tags
}
