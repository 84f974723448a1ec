"""Every entry of the operation table (iam_actions.py) against AWS's Service
Authorization Reference, as the committed subset fixtures/sar_subset.json holds it
(its "_source" names the pages' origin; localcloud/tools/sar_subset.py regenerates
it from a copy of the pages): the action exists for its service, the resource ARN the
table builds has the format of one of the action's resource types (or is "*" when the
action has none), and every condition key the table gives the evaluator is one the
SAR lists for the action or its resource types (global aws: keys aside).

No cloud is needed: the table's lookups of LocalStack's stores are replaced by fixed
answers, and the ARNs the table builds from the request itself are its own."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import botocore.session
import pytest

from live_ci_localcloud import iam_actions, sesv2
from live_ci_localcloud.iam_actions import Call, Check, Unmapped

SAR = json.loads((Path(__file__).parent / "fixtures" / "sar_subset.json").read_text())["services"]
ACCOUNT, OTHER, REGION = "000000000000", "111111111111", "us-east-1"
KEY = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-0000-0000-0000-000000000000"
SECRET = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:live-ci-metadb-AbCdEf"
CLUSTER = f"arn:aws:rds:{REGION}:{ACCOUNT}:cluster:live-ci-metadb"
MACHINE = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:live-ci-deployment"
EXECUTION = f"arn:aws:states:{REGION}:{ACCOUNT}:execution:live-ci-deployment:run-1"
QUEUE_URL = f"http://sqs.{REGION}.localhost:4566/{ACCOUNT}/live-ci-jobs"
TOPIC = f"arn:aws:sns:{REGION}:{ACCOUNT}:live-ci-approvals"
TASK_DEFINITION = f"arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition/live-ci-terra-run:3"
TASK_ROLE = f"arn:aws:iam::{ACCOUNT}:role/live-ci-terra-run-plan"
EXEC_ROLE = f"arn:aws:iam::{ACCOUNT}:role/live-ci-task-execution"

# (botocore service, operation, request): one per operation the table maps.
ENTRIES: list[tuple[str, str, dict[str, Any]]] = [
    ("kms", "Decrypt", {"CiphertextBlob": b"x", "KeyId": KEY, "EncryptionContext": {"live-ci:execution-id": "e"}}),
    ("kms", "Encrypt", {"KeyId": KEY, "Plaintext": b"x", "EncryptionContext": {"live-ci:execution-id": "e"}}),
    ("kms", "GenerateDataKey", {"KeyId": "alias/live-ci"}),
    ("kms", "GenerateDataKeyWithoutPlaintext", {"KeyId": KEY}),
    ("kms", "DescribeKey", {"KeyId": KEY}),
    ("ssm", "GetParameter", {"Name": "/live-ci/vote-link-key", "WithDecryption": True}),
    ("ssm", "GetParameters", {"Names": ["/live-ci/a", "live-ci-b"], "WithDecryption": True}),
    ("ssm", "PutParameter", {"Name": "/live-ci/merge-lock", "Value": "v", "Type": "SecureString"}),
    ("s3", "PutObject", {"Bucket": "live-ci-plans", "Key": "plans/e/c.tfplan"}),
    ("s3", "GetObject", {"Bucket": "live-ci-plans", "Key": "plans/e/c.tfplan"}),
    ("s3", "GetObject", {"Bucket": "live-ci-plans", "Key": "plans/e/c.tfplan", "VersionId": "v1"}),
    ("s3", "HeadObject", {"Bucket": "live-ci-plans", "Key": "checkouts/c.tar"}),
    ("sqs", "CreateQueue", {"QueueName": "live-ci-jobs"}),
    ("sqs", "GetQueueUrl", {"QueueName": "live-ci-jobs"}),
    *[
        ("sqs", op, {"QueueUrl": QUEUE_URL})
        for op in (
            "SendMessage",
            "SendMessageBatch",
            "ReceiveMessage",
            "DeleteMessage",
            "DeleteMessageBatch",
            "DeleteQueue",
            "GetQueueAttributes",
            "ChangeMessageVisibility",
        )
    ],
    ("sns", "Publish", {"TopicArn": TOPIC, "Message": "m"}),
    ("stepfunctions", "StartExecution", {"stateMachineArn": MACHINE}),
    ("stepfunctions", "DescribeExecution", {"executionArn": EXECUTION}),
    ("stepfunctions", "StopExecution", {"executionArn": EXECUTION}),
    ("stepfunctions", "GetExecutionHistory", {"executionArn": EXECUTION}),
    ("stepfunctions", "SendTaskSuccess", {"taskToken": "token", "output": "{}"}),
    ("stepfunctions", "SendTaskFailure", {"taskToken": "token"}),
    ("stepfunctions", "SendTaskHeartbeat", {"taskToken": "token"}),
    ("ecs", "RunTask", {"cluster": "live-ci", "taskDefinition": "live-ci-terra-run"}),
    ("ecs", "RunTask", {"cluster": "live-ci", "taskDefinition": "x", "overrides": {"taskRoleArn": TASK_ROLE}}),
    ("ecs", "StopTask", {"cluster": "live-ci", "task": "0123456789abcdef"}),
    ("ecs", "DescribeTasks", {"cluster": f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/live-ci", "tasks": ["0123"]}),
    ("lambda", "Invoke", {"FunctionName": "live-ci-trigger-sf"}),
    ("lambda", "Invoke", {"FunctionName": f"{ACCOUNT}:function:live-ci-trigger-sf", "Qualifier": "live"}),
    ("lambda", "Invoke", {"FunctionName": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:live-ci-receiver"}),
    *[
        ("rds-data", op, {"resourceArn": CLUSTER, "secretArn": SECRET})
        for op in (
            "ExecuteStatement",
            "BatchExecuteStatement",
            "BeginTransaction",
            "CommitTransaction",
            "RollbackTransaction",
        )
    ],
    ("secretsmanager", "GetSecretValue", {"SecretId": "live-ci-metadb"}),
    ("secretsmanager", "PutSecretValue", {"SecretId": "live-ci-metadb", "SecretString": "{}"}),
    ("sts", "AssumeRole", {"RoleArn": f"arn:aws:iam::{OTHER}:role/live-ci-plan", "RoleSessionName": "s"}),
    ("sts", "GetCallerIdentity", {}),
    (
        "sesv2",
        "SendEmail",
        {
            "FromEmailAddress": "live-ci <ci@example.com>",
            "Destination": {"ToAddresses": ["Voter <voter@example.org>"], "CcAddresses": ["b@example.net"]},
            "ConfigurationSetName": "live-ci",
        },
    ),
    ("logs", "CreateLogGroup", {"logGroupName": "/aws/lambda/live-ci-receiver"}),
    ("logs", "CreateLogStream", {"logGroupName": "/aws/lambda/live-ci-receiver", "logStreamName": "2026/[$LATEST]x"}),
    ("logs", "PutLogEvents", {"logGroupName": "/ecs/live-ci", "logStreamName": "terra-run/abc"}),
]

# The IAM prefix of each botocore service name (SES v2 and Step Functions differ).
PREFIX = {"sesv2": "ses", "stepfunctions": "states"}


@pytest.fixture
def stores(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lookups of LocalStack's stores answer as for the module's resources: an
    SSE-KMS bucket, queue and topic, a SecureString, a task definition with two roles,
    a task token."""
    encrypted = SimpleNamespace(parameter_type="SecureString", keyid=KEY)
    monkeypatch.setattr(iam_actions, "kms_key", lambda account, region, ref: (KEY, None))
    monkeypatch.setattr(iam_actions, "_ssm_parameter", lambda call, name: encrypted)
    monkeypatch.setattr(iam_actions, "_ciphertext_key", lambda blob: KEY)
    bucket = SimpleNamespace(
        policy=None, encryption_rule={"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms"}}
    )
    monkeypatch.setattr(iam_actions, "_bucket", lambda call, name: bucket)
    monkeypatch.setattr(iam_actions, "_object_kms_key", lambda bucket, key, version: KEY)
    monkeypatch.setattr(iam_actions, "_secret_arn", lambda call, ref: SECRET)
    monkeypatch.setattr(iam_actions, "_role_trust_policy", lambda arn: None)
    monkeypatch.setattr(iam_actions, "_ses_identity", lambda call, address: address.rsplit("@", 1)[-1])
    monkeypatch.setattr(sesv2, "in_sandbox", lambda account, region: True)
    import localstack.services.sns.models as sns_models
    import localstack.services.sqs.models as sqs_models
    import moto.ecs.models as ecs_models

    # The queue ARN is the table's own, from the URL or name: only the store is fake.
    queue = SimpleNamespace(attributes={"KmsMasterKeyId": "alias/live-ci"})
    sqs_store = SimpleNamespace(queues={"live-ci-jobs": queue})
    monkeypatch.setattr(sqs_models, "sqs_stores", {ACCOUNT: {REGION: sqs_store}})

    topics = {TOPIC: {"attributes": {"KmsMasterKeyId": "alias/live-ci"}}}
    monkeypatch.setattr(sns_models, "sns_stores", {ACCOUNT: {REGION: SimpleNamespace(topics=topics)}})
    definition = SimpleNamespace(arn=TASK_DEFINITION, task_role_arn=TASK_ROLE, execution_role_arn=EXEC_ROLE)
    backend = SimpleNamespace(describe_task_definition=lambda ref: definition)
    monkeypatch.setattr(ecs_models, "ecs_backends", {ACCOUNT: {REGION: backend}})


# Names that may hold "/" (paths, prefixes) or, for a function, a ":qualifier"
# (Lambda's qualified ARNs); every other variable is one ARN segment.
PATH_VARIABLES = {
    "ObjectName",
    "ParameterNameWithoutLeadingSlash",
    "RoleNameWithPath",
    "LogGroupName",
    "LogStreamName",
    "SecretId",
    "FunctionName",
}


def arn_pattern(template: str) -> re.Pattern[str]:
    """A SAR ARN format as a regular expression: ${Partition} is aws, ${Region} a
    region, ${Account} twelve digits, a name of PATH_VARIABLES any text, any other
    variable one segment (no ":" or "/")."""
    fixed = {"Partition": "aws", "Region": "[a-z]{2}(-[a-z]+)+-[0-9]", "Account": "[0-9]{12}"}
    out, pos = [], 0
    for m in re.finditer(r"\$\{([A-Za-z]+)\}", template):
        out.append(re.escape(template[pos : m.start()]))
        out.append(fixed.get(m[1], ".+" if m[1] in PATH_VARIABLES else "[^:/]+"))
        pos = m.end()
    out.append(re.escape(template[pos:]))
    return re.compile("".join(out))


def key_pattern(key: str) -> re.Pattern[str]:
    """A SAR condition key, whose ${...} or <...> part stands for any text."""
    return re.compile(re.sub(r"\\\$\\\{[^}]*\\\}|<[^>]*>", ".+", re.escape(key)), re.IGNORECASE)


def sar_problems(check: Check) -> list[str]:
    """What the SAR says is wrong with one authorisation the table asks for."""
    prefix, action = check.action.split(":", 1)
    service = SAR.get(prefix)
    if service is None or action not in service["actions"]:
        return [f"{check.action}: no such action in the SAR subset (regenerate it with the action listed)"]
    entry = service["actions"][action]
    types = [service["resource_types"][t["name"]] | {"name": t["name"]} for t in entry["resource_types"]]
    problems = []
    matched = [t for t in types if arn_pattern(t["arn"]).fullmatch(check.resource)]
    if not types and check.resource != "*":
        problems.append(f"{check.action} takes no resource type (Resource must be *), the table gives {check.resource}")
    elif types and not matched:
        formats = ", ".join(f"{t['name']}: {t['arn']}" for t in types)
        problems.append(f"{check.action} on {check.resource} matches none of its resource types ({formats})")
    allowed = entry["condition_keys"] + [k for t in matched for k in t["condition_keys"]]
    for key in check.context:
        if key.startswith("aws:"):
            continue
        if not any(key_pattern(k).fullmatch(key) for k in allowed):
            problems.append(f"{check.action}: condition key {key} is not one the SAR lists for it")
    return problems


@pytest.mark.parametrize(("service", "operation", "params"), ENTRIES, ids=lambda v: v if isinstance(v, str) else "")
def test_each_entry_authorises_what_the_service_authorisation_reference_says(
    stores: None, service: str, operation: str, params: dict[str, Any]
) -> None:
    call = Call(ACCOUNT, REGION, operation, params, {"aws:SecureTransport": "true", "aws:PrincipalAccount": ACCOUNT})
    checks = iam_actions.checks_for(service, call)
    if (service, operation) != ("sts", "GetCallerIdentity"):
        assert checks, f"{service}:{operation} authorises nothing"
    assert [p for c in checks for p in sar_problems(c)] == []


def test_the_entries_cover_every_operation_the_table_maps(stores: None) -> None:
    """Every operation of each service's API that the table does not refuse as
    Unmapped has an entry above, so no mapped operation escapes the check."""
    covered = {(s, o) for s, o, _ in ENTRIES}
    session = botocore.session.get_session()
    mapped = set()
    for service in iam_actions.TABLE:
        for operation in session.get_service_model(service).operation_names:
            call = Call(ACCOUNT, REGION, operation, _Anything(), {})
            try:
                iam_actions.checks_for(service, call)
            except Unmapped:
                continue
            except Exception:  # noqa: BLE001 - past the table's dispatch: the operation is mapped
                pass
            mapped.add((service, operation))
    assert sorted(mapped - covered) == []
    assert len(mapped) >= 40


class _Anything(dict):
    """Request parameters that have every field (a string), to see which operations
    a handler dispatches on without knowing their shapes."""

    def __missing__(self, key: str) -> str:
        return f"{key}-value"

    def get(self, key: str, default: Any = None) -> Any:
        return self[key]


def test_the_check_itself_finds_a_wrong_action_arn_and_condition_key() -> None:
    global_keys = {"aws:SecureTransport": "true"}
    assert sar_problems(Check("states:SendTaskSuccess", "*", global_keys)) == []
    assert sar_problems(Check("states:SendTaskSuccess", MACHINE, global_keys)) != []
    assert sar_problems(Check("lambda:Invoke", "*")) != []
    assert sar_problems(Check("ssm:GetParameter", f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/x")) == []
    assert sar_problems(Check("ssm:GetParameter", f"arn:aws:ssm:{REGION}:{ACCOUNT}:param/x")) != []
    assert sar_problems(Check("sqs:SendMessage", f"arn:aws:sqs:{REGION}:{ACCOUNT}:queue/x")) != []
    assert sar_problems(Check("ses:SendEmail", f"arn:aws:ses:{REGION}:{ACCOUNT}:identity/a.org", {"ses:Nope": 1})) != []
