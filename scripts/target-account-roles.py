"""The target accounts' plan and apply roles in the local cloud, as a team creates
them in its accounts (infra/README.md): each trusts the live-ci task roles that
assume it, the plan role reads, the apply role administers. Without them the local
cloud's IAM (LIVE_CI_IAM_ENFORCE=1) refuses the tasks' sts:AssumeRole, as AWS would.

    python target-account-roles.py <endpoint> <accounts.json> <task role ARNs JSON>

Run by scripts/deploy-local.sh with LocalStack's venv (boto3). Idempotent. A role is
created in its own account: LocalStack takes a 12-digit access key as the account.
"""

from __future__ import annotations

import json
import sys

import boto3

# What the roles grant inside their (local) account: a plan reads, an apply changes.
PLAN_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Sid": "ReadOnly",
            "Effect": "Allow",
            "Action": ["ssm:Describe*", "ssm:Get*", "ssm:List*", "s3:Get*", "s3:List*", "sqs:Get*", "sqs:List*"],
            "Resource": "*",
        }
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
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    endpoint, accounts_file, task_roles_json = sys.argv[1:]
    with open(accounts_file) as f:
        accounts = json.load(f)
    task_roles = json.loads(task_roles_json)
    # pr-plan and create-deploy-stack plan (the plan scan); terra-run plans and applies.
    planners = sorted({task_roles[k] for k in ("pr-plan", "create-deploy-stack", "terra-run") if k in task_roles})
    appliers = [task_roles["terra-run"]]
    for account in accounts:
        ensure_role(endpoint, account["plan_role_arn"], planners, PLAN_POLICY)
        ensure_role(endpoint, account["apply_role_arn"], appliers, APPLY_POLICY)
        print(f"target-account-roles: {account['plan_role_arn']}, {account['apply_role_arn']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
