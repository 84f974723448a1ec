"""The target accounts' plan and apply roles in the local cloud, as a team creates
them in its accounts (infra/README.md): each trusts the live-ci task roles that
assume it — an account's plan role pr-plan, create-deploy-stack, drift and that account's
plan-phase terra-run role; its apply role only that account's apply-phase terra-run
role —, the plan role reads, the apply role administers. Without them the local
cloud's IAM (LIVE_CI_IAM_ENFORCE=1) refuses the tasks' sts:AssumeRole, as AWS would.

    python target-account-roles.py <endpoint> <accounts.json> <task role ARNs JSON> \
        <terra-run role ARNs JSON>

(the module's task_role_arns and terra_run_role_arns outputs).

Run by scripts/deploy-local.sh with LocalStack's venv (boto3). Idempotent. A role is
created in its own account: LocalStack takes a 12-digit access key as the account.
"""

from __future__ import annotations

import json
import sys

import boto3

# What the roles grant inside their (local) account: a plan reads, an apply changes.
# The plan role is minimal (infra/README.md, "The target accounts' plan and apply
# roles"): the sample units keep their state locally (no state bucket or lock table
# to read), so it may only refresh what they manage — the SSM parameters under /e2e/
# of scenario 3b — with no kms:Decrypt (no SecureString value), no other parameter,
# no S3 object, no Lambda or Secrets Manager read.
PLAN_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Sid": "Describe",
            "Effect": "Allow",
            "Action": ["ssm:DescribeParameters", "ssm:ListTagsForResource"],
            "Resource": "*",
        },
        {
            "Sid": "RefreshManagedParameters",
            "Effect": "Allow",
            "Action": ["ssm:GetParameter", "ssm:GetParameters"],
            "Resource": "arn:aws:ssm:*:*:parameter/e2e/*",
        },
    ],
}
APPLY_POLICY = {
    "Version": "2012-10-17",
    "Statement": [{"Sid": "Administer", "Effect": "Allow", "Action": "*", "Resource": "*"}],
}


def trust(principals: list[str]) -> str:
    statement = {"Effect": "Allow", "Principal": {"AWS": principals}, "Action": "sts:AssumeRole"}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


def ensure_role(endpoint: str, role_arn: str, principals: list[str], policy: dict) -> None:
    account, name = role_arn.split(":")[4], role_arn.rsplit("/", 1)[-1]
    iam = boto3.client(
        "iam",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=account,
        aws_secret_access_key="test",
    )
    try:
        iam.create_role(RoleName=name, AssumeRolePolicyDocument=trust(principals))
    except iam.exceptions.EntityAlreadyExistsException:
        iam.update_assume_role_policy(RoleName=name, PolicyDocument=trust(principals))
    iam.put_role_policy(RoleName=name, PolicyName="live-ci-local", PolicyDocument=json.dumps(policy))


def main() -> int:
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    endpoint, accounts_file, task_roles_json, terra_run_roles_json = sys.argv[1:]
    with open(accounts_file) as f:
        accounts = json.load(f)
    task_roles = json.loads(task_roles_json)
    terra_run_roles = json.loads(terra_run_roles_json)
    # pr-plan, create-deploy-stack (the plan scan) and drift plan; terra-run's roles
    # are the account's own, one per phase.
    planners = sorted({task_roles[k] for k in ("pr-plan", "create-deploy-stack", "drift") if k in task_roles})
    for account in accounts:
        own = terra_run_roles[account["name"]]
        ensure_role(endpoint, account["plan_role_arn"], sorted({*planners, own["plan"]}), PLAN_POLICY)
        ensure_role(endpoint, account["apply_role_arn"], [own["apply"]], APPLY_POLICY)
        print(f"target-account-roles: {account['plan_role_arn']}, {account['apply_role_arn']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
