"""The IAM evaluator's rules on their own (no cloud needed), with the shapes of the
module's real policies (infra/iam.tf, infra/storage.tf)."""

from __future__ import annotations

import pytest

from live_ci_localcloud.iam_policy import PolicyError, Request, condition_holds, evaluate, parse_policy

ACCOUNT = "000000000000"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/live-ci-approval-request"
SESSION = f"arn:aws:sts::{ACCOUNT}:assumed-role/live-ci-approval-request/live-ci-approval-request"
KEY = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/1234abcd-0000-0000-0000-000000000000"
TOKEN_KEY = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/99999999-0000-0000-0000-000000000000"
PARAM = f"arn:aws:ssm:us-east-1:{ACCOUNT}:parameter/live-ci/vote-link-key"


def request(action: str, resource: str, **context: object) -> Request:
    return Request(SESSION, ROLE, ACCOUNT, action, resource, context)


def identity(*statements: dict) -> list:
    return parse_policy({"Version": "2012-10-17", "Statement": list(statements)}, "role/test inline test")


READ_PARAM = {"Sid": "ReadVoteLinkKey", "Effect": "Allow", "Action": "ssm:GetParameter", "Resource": PARAM}


def test_an_allow_statement_allows_its_action_on_its_resource_only() -> None:
    policy = identity(READ_PARAM)
    decision = evaluate(request("ssm:GetParameter", PARAM), policy)
    assert decision.allowed
    assert [s.sid for s in decision.allowing] == ["ReadVoteLinkKey"]
    other = f"arn:aws:ssm:us-east-1:{ACCOUNT}:parameter/live-ci/github-token"
    denied = evaluate(request("ssm:GetParameter", other), policy)
    assert not denied.allowed
    assert denied.message(request("ssm:GetParameter", other)) == (
        f"User: {SESSION} is not authorized to perform: ssm:GetParameter on resource: {other} "
        "because no identity-based policy allows the ssm:GetParameter action"
    )
    assert not evaluate(request("ssm:PutParameter", PARAM), policy).allowed


def test_actions_match_case_insensitively_and_with_wildcards() -> None:
    policy = identity({"Effect": "Allow", "Action": "SSM:get*", "Resource": PARAM})
    assert evaluate(request("ssm:GetParameter", PARAM), policy).allowed
    assert not evaluate(request("ssm:PutParameter", PARAM), policy).allowed


def test_an_explicit_deny_wins_over_any_allow() -> None:
    policy = identity(
        READ_PARAM,
        {"Effect": "Allow", "Action": "ssm:*", "Resource": "*"},
        {
            "Sid": "NoSecrets",
            "Effect": "Deny",
            "Action": "ssm:GetParameter",
            "Resource": "arn:aws:ssm:*:*:parameter/live-ci/*",
        },
    )
    decision = evaluate(request("ssm:GetParameter", PARAM), policy)
    assert not decision.allowed
    assert decision.reason == "with an explicit deny in an identity-based policy"
    assert [s.sid for s in decision.denying] == ["NoSecrets"]
    # AWS's wording: "... on resource: <arn> with an explicit deny ...", no "because".
    assert decision.message(request("ssm:GetParameter", PARAM)).endswith(
        f"on resource: {PARAM} with an explicit deny in an identity-based policy"
    )


def test_not_action_allows_everything_but_the_named_actions() -> None:
    policy = identity({"Effect": "Allow", "NotAction": ["iam:*", "sts:AssumeRole"], "Resource": "*"})
    assert evaluate(request("ssm:GetParameter", PARAM), policy).allowed
    assert not evaluate(request("sts:AssumeRole", ROLE), policy).allowed
    assert not evaluate(request("iam:PassRole", ROLE), policy).allowed


def test_not_resource_and_wildcard_resources() -> None:
    logs = identity(
        {
            "Effect": "Allow",
            "Action": "logs:PutLogEvents",
            "Resource": f"arn:aws:logs:us-east-1:{ACCOUNT}:log-group:/live-ci/lambda/receiver:*",
        }
    )
    stream = f"arn:aws:logs:us-east-1:{ACCOUNT}:log-group:/live-ci/lambda/receiver:log-stream:2026/11/26/[$LATEST]abc"
    assert evaluate(request("logs:PutLogEvents", stream), logs).allowed
    other = f"arn:aws:logs:us-east-1:{ACCOUNT}:log-group:/live-ci/lambda/trigger-sf:log-stream:x"
    assert not evaluate(request("logs:PutLogEvents", other), logs).allowed
    not_resource = identity({"Effect": "Allow", "Action": "s3:GetObject", "NotResource": "arn:aws:s3:::plans/plans/*"})
    assert evaluate(request("s3:GetObject", "arn:aws:s3:::plans/checkouts/a.tar"), not_resource).allowed
    assert not evaluate(request("s3:GetObject", "arn:aws:s3:::plans/plans/a.tfplan"), not_resource).allowed


def test_a_condition_must_hold_ecs_cluster_and_passed_to_service() -> None:
    cluster = f"arn:aws:ecs:us-east-1:{ACCOUNT}:cluster/live-ci"
    definition = f"arn:aws:ecs:us-east-1:{ACCOUNT}:task-definition/live-ci-pr-plan:*"
    policy = identity(
        {
            "Effect": "Allow",
            "Action": "ecs:RunTask",
            "Resource": definition,
            "Condition": {"ArnEquals": {"ecs:cluster": cluster}},
        },
        {
            "Effect": "Allow",
            "Action": "iam:PassRole",
            "Resource": f"arn:aws:iam::{ACCOUNT}:role/live-ci-task-pr-plan",
            "Condition": {"StringEquals": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}},
        },
    )
    run = definition.replace(":*", ":3")
    assert evaluate(request("ecs:RunTask", run, **{"ecs:cluster": cluster}), policy).allowed
    assert not evaluate(request("ecs:RunTask", run, **{"ecs:cluster": cluster + "-other"}), policy).allowed
    assert not evaluate(request("ecs:RunTask", run), policy).allowed  # key missing: the condition fails
    pass_role = f"arn:aws:iam::{ACCOUNT}:role/live-ci-task-pr-plan"
    assert evaluate(
        request("iam:PassRole", pass_role, **{"iam:PassedToService": "ecs-tasks.amazonaws.com"}), policy
    ).allowed
    assert not evaluate(
        request("iam:PassRole", pass_role, **{"iam:PassedToService": "lambda.amazonaws.com"}), policy
    ).allowed


def test_condition_operators_for_missing_keys_and_sets() -> None:
    # ForAllValues holds for no values at all (why the task-token key also says Null=false).
    assert condition_holds("ForAllValues:StringEquals", "kms:EncryptionContextKeys", ["live-ci:execution-id"], {})
    assert condition_holds(
        "ForAllValues:StringEquals",
        "kms:EncryptionContextKeys",
        ["live-ci:execution-id"],
        {"kms:EncryptionContextKeys": ["live-ci:execution-id"]},
    )
    assert not condition_holds(
        "ForAllValues:StringEquals",
        "kms:EncryptionContextKeys",
        ["live-ci:execution-id"],
        {"kms:EncryptionContextKeys": ["live-ci:execution-id", "other"]},
    )
    assert not condition_holds("Null", "kms:EncryptionContext:live-ci:execution-id", ["false"], {})
    assert condition_holds(
        "Null",
        "kms:EncryptionContext:live-ci:execution-id",
        ["false"],
        {"kms:EncryptionContext:live-ci:execution-id": "x"},
    )
    assert condition_holds("StringNotEquals", "aws:SourceVpc", ["vpc-1"], {})  # negated: a missing key holds
    assert condition_holds("StringEqualsIfExists", "aws:SourceVpc", ["vpc-1"], {})
    assert not condition_holds("StringEquals", "aws:SourceVpc", ["vpc-1"], {})
    assert condition_holds("Bool", "aws:SecureTransport", ["false"], {"aws:SecureTransport": False})
    assert condition_holds(
        "ArnLike",
        "kms:EncryptionContext:aws:logs:arn",
        ["arn:aws:logs:us-east-1:1:log-group:/live-ci/*"],
        {"kms:EncryptionContext:aws:logs:arn": "arn:aws:logs:us-east-1:1:log-group:/live-ci/x"},
    )
    assert condition_holds("StringEquals", "SES:FromAddress", ["ci@example.com"], {"ses:FromAddress": "ci@example.com"})


def task_token_key_policy() -> list:
    """infra/storage.tf's task-token key policy, as Terraform renders it."""
    context_conditions = {
        "ForAllValues:StringEquals": {"kms:EncryptionContextKeys": "live-ci:execution-id"},
        "Null": {"kms:EncryptionContext:live-ci:execution-id": "false"},
    }
    return parse_policy(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "AccountAdministers",
                    "Effect": "Allow",
                    "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
                    "Action": ["kms:Describe*", "kms:Get*", "kms:PutKeyPolicy"],
                    "Resource": "*",
                },
                {
                    "Sid": "ApprovalRequestEncrypts",
                    "Effect": "Allow",
                    "Principal": {"AWS": ROLE},
                    "Action": "kms:Encrypt",
                    "Resource": "*",
                    "Condition": context_conditions,
                },
            ],
        },
        f"key-policy {TOKEN_KEY}",
    )


def test_kms_requires_the_key_policy_to_allow() -> None:
    # An identity policy allowing kms:* on every key does not reach a key whose policy
    # neither names the role nor delegates the action to the account.
    admin = identity({"Effect": "Allow", "Action": "kms:*", "Resource": "*"})
    decrypt = request(
        "kms:Decrypt",
        TOKEN_KEY,
        **{"kms:EncryptionContextKeys": ["live-ci:execution-id"], "kms:EncryptionContext:live-ci:execution-id": "e"},
    )
    decision = evaluate(decrypt, admin, task_token_key_policy(), key_policy=True)
    assert not decision.allowed
    assert decision.reason == "no resource-based policy allows the kms:Decrypt action"
    # The key policy names the role: allowed with no identity policy at all, in the right context only.
    encrypt = request(
        "kms:Encrypt",
        TOKEN_KEY,
        **{"kms:EncryptionContextKeys": ["live-ci:execution-id"], "kms:EncryptionContext:live-ci:execution-id": "e"},
    )
    allowed = evaluate(encrypt, [], task_token_key_policy(), key_policy=True)
    assert allowed.allowed
    assert [s.sid for s in allowed.allowing] == ["ApprovalRequestEncrypts"]
    assert not evaluate(request("kms:Encrypt", TOKEN_KEY), [], task_token_key_policy(), key_policy=True).allowed
    # A key delegating to the account: the identity policy decides.
    delegating = parse_policy(
        {
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
                    "Action": "kms:*",
                    "Resource": "*",
                }
            ]
        },
        f"key-policy {KEY}",
    )
    assert evaluate(
        request("kms:Decrypt", KEY),
        identity({"Effect": "Allow", "Action": "kms:Decrypt", "Resource": KEY}),
        delegating,
        key_policy=True,
    ).allowed
    refused = evaluate(request("kms:Decrypt", KEY), [], delegating, key_policy=True)
    assert not refused.allowed
    assert refused.reason == "no identity-based policy allows the kms:Decrypt action"
    # No key policy statement at all (a key the evaluator has no policy for): denied.
    assert not evaluate(request("kms:Decrypt", KEY), admin, [], key_policy=True).allowed


def plans_bucket_policy() -> list:
    """infra/storage.tf's saved-plan bucket policy."""
    return parse_policy(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "DenyInsecureTransport",
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "s3:*",
                    "Resource": ["arn:aws:s3:::plans", "arn:aws:s3:::plans/*"],
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                }
            ],
        },
        "bucket-policy plans",
    )


def test_s3_bucket_policy_deny_applies_and_identity_allows() -> None:
    policy = identity(
        {"Effect": "Allow", "Action": ["s3:PutObject", "s3:GetObject"], "Resource": "arn:aws:s3:::plans/plans/*"}
    )
    obj = "arn:aws:s3:::plans/plans/run/unit.tfplan"
    assert evaluate(
        request("s3:GetObject", obj, **{"aws:SecureTransport": "true"}), policy, plans_bucket_policy()
    ).allowed
    insecure = evaluate(request("s3:GetObject", obj, **{"aws:SecureTransport": "false"}), policy, plans_bucket_policy())
    assert not insecure.allowed
    assert insecure.reason == "with an explicit deny in a resource-based policy"
    # A bucket policy naming the role allows without an identity policy (same account).
    granting = parse_policy(
        {
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"AWS": ROLE},
                    "Action": "s3:GetObject",
                    "Resource": "arn:aws:s3:::plans/*",
                }
            ]
        },
        "bucket-policy plans",
    )
    assert evaluate(request("s3:GetObject", obj), [], granting).allowed
    # One naming the account only delegates to IAM.
    account = parse_policy(
        {
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"AWS": ACCOUNT},
                    "Action": "s3:GetObject",
                    "Resource": "arn:aws:s3:::plans/*",
                }
            ]
        },
        "bucket-policy plans",
    )
    assert not evaluate(request("s3:GetObject", obj), [], account).allowed


def test_a_policy_the_evaluator_cannot_read_is_an_error_naming_it() -> None:
    with pytest.raises(PolicyError, match=r"role/x inline y statement #0: Effect must be Allow or Deny, got 'Permit'"):
        parse_policy({"Statement": [{"Effect": "Permit", "Action": "*", "Resource": "*"}]}, "role/x inline y")
    with pytest.raises(PolicyError, match="not JSON"):
        parse_policy("{", "role/x inline y")


def test_a_role_of_another_account_needs_its_trust_policy_and_the_callers_iam() -> None:
    target = "arn:aws:iam::111111111111:role/live-ci-plan"
    trust = parse_policy(
        {"Statement": [{"Effect": "Allow", "Principal": {"AWS": ROLE}, "Action": "sts:AssumeRole"}]},
        f"trust-policy {target}",
    )
    may_assume = identity({"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": target})
    assume = request("sts:AssumeRole", target)
    assert evaluate(assume, may_assume, trust, key_policy=True, owner_account="111111111111").allowed
    # Trust alone is not enough across accounts (it is within one).
    refused = evaluate(assume, [], trust, key_policy=True, owner_account="111111111111")
    assert refused.reason == "no identity-based policy allows the sts:AssumeRole action"
    assert evaluate(assume, [], trust, key_policy=True, owner_account=ACCOUNT).allowed
    # No trust policy naming the caller (or a role that does not exist): denied.
    missing = evaluate(assume, may_assume, None, key_policy=True, owner_account="111111111111")
    assert missing.reason == "no resource-based policy allows the sts:AssumeRole action"
