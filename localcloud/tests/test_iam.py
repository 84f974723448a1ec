"""IAM enforced by the running local cloud (LIVE_CI_IAM_ENFORCE=1, the default of
scripts/local-cloud.sh): a role's assumed credentials get what its policies allow and
each service's own AccessDenied for the rest; the test driver's keys stay the
account's administrator."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

ACCOUNT = "000000000000"
TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, "Action": "sts:AssumeRole"}
    ],
}


def stats(endpoint: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{endpoint}/_live_ci/iam/stats") as response:
        return json.load(response)


@pytest.fixture(scope="module", autouse=True)
def enforced(endpoint: str) -> None:
    if not stats(endpoint)["enforced"]:
        pytest.skip("the running cloud was started without LIVE_CI_IAM_ENFORCE=1")


@pytest.fixture
def as_role(aws: Callable[[str], Any], endpoint: str, unique: str) -> Callable[[dict[str, Any]], Callable[[str], Any]]:
    """A role with the given inline policy; returns a client factory signed as its session."""

    def make(policy: dict[str, Any]) -> Callable[[str], Any]:
        role = aws("iam").create_role(RoleName=unique, AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]
        aws("iam").put_role_policy(RoleName=unique, PolicyName="test", PolicyDocument=json.dumps(policy))
        credentials = aws("sts").assume_role(RoleArn=role["Arn"], RoleSessionName="session")["Credentials"]
        session = boto3.session.Session(
            aws_access_key_id=credentials["AccessKeyId"],
            aws_secret_access_key=credentials["SecretAccessKey"],
            aws_session_token=credentials["SessionToken"],
            region_name="us-east-1",
        )
        return lambda service: session.client(service, endpoint_url=endpoint)

    return make


def denied(call: Callable[[], Any]) -> ClientError:
    with pytest.raises(ClientError) as raised:
        call()
    return raised.value


def test_identity_policy_allows_its_parameter_and_the_rest_is_denied_as_ssm_does(
    aws: Callable[[str], Any], as_role: Callable[[dict[str, Any]], Callable[[str], Any]], unique: str, endpoint: str
) -> None:
    aws("ssm").put_parameter(Name=f"/{unique}/allowed", Value="a", Type="String")
    aws("ssm").put_parameter(Name=f"/{unique}/other", Value="b", Type="String")
    allowed = f"arn:aws:ssm:us-east-1:{ACCOUNT}:parameter/{unique}/allowed"
    client = as_role(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "ssm:GetParameter", "Resource": allowed}]}
    )
    before = stats(endpoint)
    assert client("ssm").get_parameter(Name=f"/{unique}/allowed")["Parameter"]["Value"] == "a"
    error = denied(lambda: client("ssm").get_parameter(Name=f"/{unique}/other"))
    assert error.response["Error"]["Code"] == "AccessDeniedException"
    assert error.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    other = f"arn:aws:ssm:us-east-1:{ACCOUNT}:parameter/{unique}/other"
    assert error.response["Error"]["Message"] == (
        f"User: arn:aws:sts::{ACCOUNT}:assumed-role/{unique}/session is not authorized to perform: "
        f"ssm:GetParameter on resource: {other} because no identity-based policy allows the ssm:GetParameter action"
    )
    after = stats(endpoint)
    assert after["authorised"] >= before["authorised"] + 1
    assert after["denied"] >= before["denied"] + 1
    assert {"role": f"arn:aws:iam::{ACCOUNT}:role/{unique}", "action": "ssm:GetParameter", "resource": other} in [
        {k: d[k] for k in ("role", "action", "resource")} for d in after["denials"]
    ]
    # The driver's own keys (not issued by the local cloud) are the administrator.
    assert aws("ssm").get_parameter(Name=f"/{unique}/other")["Parameter"]["Value"] == "b"


def test_query_and_rest_xml_services_answer_access_denied_403(
    aws: Callable[[str], Any], as_role: Callable[[dict[str, Any]], Callable[[str], Any]], unique: str
) -> None:
    aws("s3").create_bucket(Bucket=unique)
    client = as_role(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "s3:PutObject", "Resource": f"arn:aws:s3:::{unique}/in/*"}],
        }
    )
    client("s3").put_object(Bucket=unique, Key="in/a", Body=b"x")
    error = denied(lambda: client("s3").put_object(Bucket=unique, Key="out/a", Body=b"x"))
    assert (error.response["Error"]["Code"], error.response["ResponseMetadata"]["HTTPStatusCode"]) == (
        "AccessDenied",
        403,
    )
    error = denied(
        lambda: client("sts").assume_role(RoleArn=f"arn:aws:iam::{ACCOUNT}:role/{unique}", RoleSessionName="again")
    )
    assert (error.response["Error"]["Code"], error.response["ResponseMetadata"]["HTTPStatusCode"]) == (
        "AccessDenied",
        403,
    )
    assert "sts:AssumeRole" in error.response["Error"]["Message"]


def test_an_operation_outside_the_table_needs_a_grant_on_every_resource(
    as_role: Callable[[dict[str, Any]], Callable[[str], Any]], unique: str, endpoint: str
) -> None:
    scoped = f"arn:aws:ssm:us-east-1:{ACCOUNT}:parameter/{unique}/*"
    client = as_role(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "ssm:DescribeParameters", "Resource": scoped}],
        }
    )
    error = denied(lambda: client("ssm").describe_parameters())
    assert error.response["Error"]["Message"].endswith(
        "ssm:DescribeParameters on resource: * because no identity-based policy allows the "
        "ssm:DescribeParameters action"
    )
    counted = stats(endpoint)
    assert counted["unmapped"]["ssm:DescribeParameters"] >= 1
    # Which role made it: the e2e tells live-ci's own unmapped calls from terraform's.
    assert f"arn:aws:iam::{ACCOUNT}:role/{unique}" in counted["unmapped_roles"]["ssm:DescribeParameters"]


def test_an_operation_outside_the_table_is_allowed_by_a_wildcard_grant(
    as_role: Callable[[dict[str, Any]], Callable[[str], Any]],
) -> None:
    client = as_role(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "ssm:Describe*", "Resource": "*"}]}
    )
    client("ssm").describe_parameters()


def test_a_kms_key_policy_that_does_not_name_the_role_or_delegate_denies(
    aws: Callable[[str], Any], as_role: Callable[[dict[str, Any]], Callable[[str], Any]], unique: str
) -> None:
    client = as_role({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "kms:*", "Resource": "*"}]})
    role_arn = f"arn:aws:iam::{ACCOUNT}:role/{unique}"
    # The task-token key's shape: the account administers, one role may encrypt.
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "Admin",
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
                "Action": ["kms:Describe*", "kms:PutKeyPolicy"],
                "Resource": "*",
            },
            {
                "Sid": "RoleEncrypts",
                "Effect": "Allow",
                "Principal": {"AWS": role_arn},
                "Action": "kms:Encrypt",
                "Resource": "*",
            },
        ],
    }
    key = aws("kms").create_key(Policy=json.dumps(policy))["KeyMetadata"]["Arn"]
    blob = client("kms").encrypt(KeyId=key, Plaintext=b"token")["CiphertextBlob"]
    error = denied(lambda: client("kms").decrypt(CiphertextBlob=blob))
    assert error.response["Error"]["Code"] == "AccessDeniedException"
    assert error.response["Error"]["Message"].endswith(
        f"kms:Decrypt on resource: {key} because no resource-based policy allows the kms:Decrypt action"
    )
    # The administrator's keys still decrypt (not evaluated).
    assert aws("kms").decrypt(CiphertextBlob=blob)["Plaintext"] == b"token"


def test_a_function_logs_into_its_own_group_with_only_stream_and_put_rights(
    aws: Callable[[str], Any], unique: str
) -> None:
    # The module's Lambda roles (OwnLogs): CreateLogStream and PutLogEvents on their
    # pre-created group, no CreateLogGroup; AWS delivers their logs all the same.
    from test_lambda import create_function, invoke, zipped

    from conftest import FIXTURES, wait_for

    group = f"/live-ci-smoke/lambda/{unique}"
    aws("logs").create_log_group(logGroupName=group)
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
    role = aws("iam").create_role(RoleName=unique, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    own_logs = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                "Resource": f"arn:aws:logs:us-east-1:{ACCOUNT}:log-group:{group}:*",
            }
        ],
    }
    aws("iam").put_role_policy(RoleName=unique, PolicyName="own-logs", PolicyDocument=json.dumps(own_logs))
    bootstrap = zipped({"bootstrap": (FIXTURES / "bootstrap").read_text()})
    create_function(aws, unique, role, bootstrap, Timeout=5, LoggingConfig={"LogFormat": "Text", "LogGroup": group})
    marker = f"own-group-{unique}"
    invoke(aws, unique, {"marker": marker})

    def found() -> list[str]:
        events = aws("logs").filter_log_events(logGroupName=group, filterPattern=marker)["events"]
        return [e["message"] for e in events]

    assert any(marker in m for m in wait_for("the function's output in its own group", found))


def test_a_secure_string_is_decrypted_with_the_callers_kms_decrypt(
    aws: Callable[[str], Any], as_role: Callable[[dict[str, Any]], Callable[[str], Any]], unique: str
) -> None:
    delegating = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
                "Action": "kms:*",
                "Resource": "*",
            }
        ],
    }
    key = aws("kms").create_key(Policy=json.dumps(delegating))["KeyMetadata"]["Arn"]
    aws("ssm").put_parameter(Name=f"/{unique}/secret", Value="s3cret", Type="SecureString", KeyId=key)
    param = f"arn:aws:ssm:us-east-1:{ACCOUNT}:parameter/{unique}/secret"
    read = {"Effect": "Allow", "Action": "ssm:GetParameter", "Resource": param}
    client = as_role({"Version": "2012-10-17", "Statement": [read]})
    error = denied(lambda: client("ssm").get_parameter(Name=f"/{unique}/secret", WithDecryption=True))
    assert error.response["Error"]["Code"] == "AccessDeniedException"
    assert f"kms:Decrypt on resource: {key} because no identity-based policy" in error.response["Error"]["Message"]
    # Without decryption SSM does not call KMS.
    assert client("ssm").get_parameter(Name=f"/{unique}/secret")["Parameter"]["Type"] == "SecureString"


def test_the_parameters_key_use_allowed_decrypts(
    aws: Callable[[str], Any], as_role: Callable[[dict[str, Any]], Callable[[str], Any]], unique: str
) -> None:
    delegating = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
                "Action": "kms:*",
                "Resource": "*",
            }
        ],
    }
    key = aws("kms").create_key(Policy=json.dumps(delegating))["KeyMetadata"]["Arn"]
    aws("ssm").put_parameter(Name=f"/{unique}/secret", Value="s3cret", Type="SecureString", KeyId=key)
    param = f"arn:aws:ssm:us-east-1:{ACCOUNT}:parameter/{unique}/secret"
    statements = [
        {"Effect": "Allow", "Action": "ssm:GetParameter", "Resource": param},
        {"Effect": "Allow", "Action": "kms:Decrypt", "Resource": key},
    ]
    client = as_role({"Version": "2012-10-17", "Statement": statements})
    value = client("ssm").get_parameter(Name=f"/{unique}/secret", WithDecryption=True)["Parameter"]["Value"]
    assert value == "s3cret"


def test_run_task_needs_pass_role_on_the_task_role_its_overrides_name(
    aws: Callable[[str], Any], as_role: Callable[[dict[str, Any]], Callable[[str], Any]], unique: str
) -> None:
    """ECS RunTask with overrides.taskRoleArn (how the state machine picks terra-run's
    per-account role) needs iam:PassRole on that role, as AWS requires: a caller
    allowed to pass one role is denied another, naming iam:PassRole and the role."""
    cluster = aws("ecs").create_cluster(clusterName=unique)["cluster"]["clusterArn"]
    definition = aws("ecs").register_task_definition(
        family=unique,
        networkMode="awsvpc",
        requiresCompatibilities=["FARGATE"],
        cpu="256",
        memory="512",
        containerDefinitions=[{"name": "c", "image": "live-ci-no-such-image:1", "essential": True}],
    )["taskDefinition"]["taskDefinitionArn"]
    passable, other = (
        aws("iam").create_role(RoleName=f"{unique}-{n}", AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"]
        for n in ("a", "b")
    )
    client = as_role(
        {
            "Version": "2012-10-17",
            "Statement": [
                {"Effect": "Allow", "Action": "ecs:RunTask", "Resource": definition.rsplit(":", 1)[0] + ":*"},
                {
                    "Effect": "Allow",
                    "Action": "iam:PassRole",
                    "Resource": passable,
                    "Condition": {"StringEquals": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}},
                },
            ],
        }
    )

    def run(role: str) -> Any:
        return client("ecs").run_task(
            cluster=cluster,
            taskDefinition=definition,
            launchType="FARGATE",
            networkConfiguration={"awsvpcConfiguration": {"subnets": ["subnet-1"]}},
            overrides={"taskRoleArn": role},
        )

    error = denied(lambda: run(other))
    message = error.response["Error"]["Message"]
    assert "iam:PassRole" in message and other in message, message
    started = run(passable)
    assert "tasks" in started, started


def test_a_sandboxed_send_email_is_authorised_on_each_recipient_identity(
    aws: Callable[[str], Any], as_role: Callable[[dict[str, Any]], Callable[[str], Any]], unique: str
) -> None:
    ses = aws("sesv2")
    sender, voter = f"{unique}@example.com", f"{unique}-voter@example.com"
    for identity in (sender, voter):
        ses.create_email_identity(EmailIdentity=identity)
    identity = f"arn:aws:ses:us-east-1:{ACCOUNT}:identity/"
    sender_only = {
        "Effect": "Allow",
        "Action": "ses:SendEmail",
        "Resource": identity + sender,
        "Condition": {"StringEquals": {"ses:FromAddress": sender}},
    }
    client = as_role({"Version": "2012-10-17", "Statement": [sender_only]})("sesv2")
    mail = {"Simple": {"Subject": {"Data": "x"}, "Body": {"Text": {"Data": "x"}}}}
    send = lambda: client.send_email(FromEmailAddress=sender, Destination={"ToAddresses": [voter]}, Content=mail)  # noqa: E731
    error = denied(send)
    assert (error.response["Error"]["Code"], error.response["ResponseMetadata"]["HTTPStatusCode"]) == (
        "AccessDeniedException",
        403,
    )
    assert f"ses:SendEmail on resource: {identity}{voter}" in error.response["Error"]["Message"]
    # Out of the sandbox only the sender's identity is authorised.
    ses.put_account_details(
        MailType="TRANSACTIONAL", WebsiteURL="https://example.com", UseCaseDescription="x", ProductionAccessEnabled=True
    )
    try:
        assert send()["MessageId"]
    finally:
        ses.put_account_details(
            MailType="TRANSACTIONAL",
            WebsiteURL="https://example.com",
            UseCaseDescription="x",
            ProductionAccessEnabled=False,
        )


def test_a_send_email_naming_a_configuration_set_is_authorised_on_the_set_too(
    aws: Callable[[str], Any], as_role: Callable[[dict[str, Any]], Callable[[str], Any]], unique: str
) -> None:
    # SES v2 authorises SendEmail on the configuration set the request names
    # (SAR list_amazonsimpleemailservicev2: SendEmail — identity*, configuration-set),
    # as the module grants when ses_configuration_set is set.
    ses = aws("sesv2")
    sender, voter, config_set = f"{unique}@example.com", f"{unique}-voter@example.com", f"{unique}-set"
    for identity in (sender, voter):
        ses.create_email_identity(EmailIdentity=identity)
    ses.create_configuration_set(ConfigurationSetName=config_set)
    arn = f"arn:aws:ses:us-east-1:{ACCOUNT}:"
    identities = [f"{arn}identity/{sender}", f"{arn}identity/{voter}"]

    def policy(resources: list[str]) -> dict[str, Any]:
        return {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "ses:SendEmail", "Resource": resources}],
        }

    client = as_role(policy(identities))("sesv2")
    mail = {"Simple": {"Subject": {"Data": "x"}, "Body": {"Text": {"Data": "x"}}}}

    def send() -> Any:
        return client.send_email(
            FromEmailAddress=sender,
            Destination={"ToAddresses": [voter]},
            Content=mail,
            ConfigurationSetName=config_set,
        )

    error = denied(send)
    assert f"ses:SendEmail on resource: {arn}configuration-set/{config_set}" in error.response["Error"]["Message"]
    aws("iam").put_role_policy(
        RoleName=unique,
        PolicyName="test",
        PolicyDocument=json.dumps(policy([*identities, f"{arn}configuration-set/{config_set}"])),
    )
    assert send()["MessageId"]
